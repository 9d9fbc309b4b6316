//! Deciding what is deferred, and refusing to start when that cannot be done safely.

use std::sync::Arc;

use super::DeferredCatalog;
use super::call_tool::{CALL_TOOL, CallTool};
use super::listing::{Listed, ListedLine, ServerFacts, listing_lines};
use super::tokens::estimate_schemas_tokens;
use super::tool_search::{TOOL_SEARCH, ToolSearch};
use crate::config::{Binding, DeferMode, McpServerConfig, ToolSearchConfig, ToolSearchMode};
use crate::protocol::LOAD_SKILL_TOOL;
use crate::tools::{Tool, ToolSource, Toolset};
use antler_search::SemanticSearch;

/// The context window assumed for `enabled: auto` when the model has none configured.
pub const DEFAULT_CONTEXT_WINDOW: u32 = 128_000;

/// Why the deferred setup refuses to start.
#[derive(Debug, thiserror::Error)]
pub enum DeferredError {
    /// Deferral is on, MCP tools exist, but no deferred set was built.
    #[error(
        "tool_search is enabled but no deferred tool set was built for the {count} MCP tools; \
         refusing to bind their schemas to the model ({reason})"
    )]
    FailClosed {
        /// How many MCP tools would have been bound.
        count: usize,
        /// What went wrong.
        reason: String,
    },
}

/// The outcome of the deferral decision.
#[derive(Debug)]
pub struct DeferredSetup {
    /// Tools bound on every model call before promotions: `tool_search` (and `call_tool`)
    /// when there is a catalog, then the non-deferred tools in toolset order.
    pub bound: Vec<Arc<dyn Tool>>,
    /// The deferred tools, if any.
    pub catalog: Option<Arc<DeferredCatalog>>,
    /// Why deferral is on or off, for `doctor`-style reports and logs.
    pub reason: String,
    /// The `<available-deferred-tools>` section ("" without a catalog).
    section: String,
    /// Which listing the section is (none without a catalog).
    pub listed: Option<Listed>,
    /// How promoted tools reach the model (`call_tool` is bound when `Stable`).
    pub binding: Binding,
    /// The section's lines, for the context ledger.
    lines: Vec<ListedLine>,
    /// The `<available-skills>` section, when skills are bound (see [`DeferredSetup::add_skills`]).
    skills_section: String,
}

/// What the deferral decision and the listing may use besides the toolset and config.
#[derive(Clone, Default)]
pub struct DeferInputs<'a> {
    /// The model's context window (`auto` decisions; [`DEFAULT_CONTEXT_WINDOW`] if unknown).
    pub context_window: Option<u32>,
    /// The extensions file's servers: their `defer` setting and `description`.
    pub servers: &'a [McpServerConfig],
    /// The sentence encoder the catalog ranks with.
    pub semantic: Option<SemanticSearch>,
}

impl DeferredSetup {
    /// The tool called `name` that the model may be allowed to call: a bound tool or a
    /// deferred one (the layers decide whether it is promoted). Tools outside this setup,
    /// such as an MCP tool that appeared after the catalog was built, are unknown.
    pub fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.bound
            .iter()
            .find(|t| t.info().name == name)
            .or_else(|| self.catalog.as_ref().and_then(|c| c.tool(name)))
            .cloned()
    }

    /// The same setup with only `bound` bound, and the catalog (with its listing) only if
    /// `keep_catalog`: what a subagent with fewer tools gets.
    /// `call_tool` goes with the catalog: kept (or added back) with it, dropped without.
    pub fn narrowed(&self, mut bound: Vec<Arc<dyn Tool>>, keep_catalog: bool) -> DeferredSetup {
        let catalog = self.catalog.clone().filter(|_| keep_catalog);
        let door = self.bound.iter().find(|t| t.info().name == CALL_TOOL);
        bound.retain(|t| t.info().name != CALL_TOOL);
        if let (Some(door), Some(_)) = (door, &catalog) {
            let after_search = bound
                .iter()
                .position(|t| t.info().name == TOOL_SEARCH)
                .map_or(0, |i| i + 1);
            bound.insert(after_search, door.clone());
        }
        let skills_section = if bound.iter().any(|t| t.info().name == LOAD_SKILL_TOOL) {
            self.skills_section.clone()
        } else {
            String::new()
        };
        DeferredSetup {
            binding: self.binding,
            bound,
            reason: self.reason.clone(),
            section: if catalog.is_some() {
                self.section.clone()
            } else {
                String::new()
            },
            listed: self.listed.filter(|_| catalog.is_some()),
            lines: if catalog.is_some() {
                self.lines.clone()
            } else {
                Vec::new()
            },
            skills_section,
            catalog,
        }
    }

    /// The `<available-deferred-tools>` section of the system prompt ("" without a catalog).
    pub fn prompt_section(&self) -> String {
        self.section.clone()
    }

    /// The section's lines: each deferred tool's name, or each server's line.
    pub fn listed_lines(&self) -> &[ListedLine] {
        &self.lines
    }

    /// The `<available-skills>` section (empty without skills).
    pub fn skills_section(&self) -> &str {
        &self.skills_section
    }

    /// Binds `load_skill` after the deferred setup's own tools (before the configured
    /// ones), puts `search` in `tool_search`'s place when given (the search that finds
    /// skills too), and lists the skills in `section`. A toolset that already has a tool
    /// of that name gets no skills: the name would be ambiguous.
    pub fn add_skills(
        &mut self,
        load_skill: Arc<dyn Tool>,
        search: Option<Arc<dyn Tool>>,
        section: String,
    ) {
        if self.bound.iter().any(|t| t.info().name == LOAD_SKILL_TOOL)
            || self
                .catalog
                .as_ref()
                .is_some_and(|c| c.contains(LOAD_SKILL_TOOL))
        {
            tracing::warn!(
                "skills are not offered: another tool is already named `{LOAD_SKILL_TOOL}`"
            );
            return;
        }
        if let Some(search) = search
            && let Some(slot) = self.bound.iter_mut().find(|t| t.info().name == TOOL_SEARCH)
        {
            *slot = search;
        }
        let after_own = self
            .bound
            .iter()
            .take_while(|t| [TOOL_SEARCH, CALL_TOOL].contains(&t.info().name.as_str()))
            .count();
        self.bound.insert(after_own, load_skill);
        self.skills_section = section;
    }
}

/// Decides what to defer with every server's `defer` at `auto` (see
/// [`setup_deferred_for`]).
pub fn setup_deferred(
    toolset: &Toolset,
    config: &ToolSearchConfig,
    context_window: Option<u32>,
) -> Result<DeferredSetup, DeferredError> {
    setup_deferred_for(
        toolset,
        config,
        DeferInputs {
            context_window,
            ..Default::default()
        },
    )
}

/// Decides what to defer. Tools of `defer: never` servers are bound and those of
/// `defer: always` servers deferred, whatever `tool_search.enabled` says; the others
/// (`auto`, and servers not in `servers`) follow it: nothing when it is off, all when it is
/// on, and with `auto` only when their schemas would take more than
/// `auto_threshold_percent` of `context_window` tokens. Built-in and configured tools are
/// never deferred. The catalog ranks with the sentence encoder of `inputs.semantic`, if
/// any, and is listed as `tool_search.listing` says.
pub fn setup_deferred_for(
    toolset: &Toolset,
    config: &ToolSearchConfig,
    inputs: DeferInputs<'_>,
) -> Result<DeferredSetup, DeferredError> {
    let (context_window, servers) = (inputs.context_window, inputs.servers);
    let defer_of = |tool: &Arc<dyn Tool>| match &tool.info().source {
        ToolSource::Mcp { server, .. } => servers
            .iter()
            .find(|s| &s.name == server)
            .map_or(DeferMode::Auto, |s| s.policy.defer),
        _ => DeferMode::Auto,
    };
    let mcp: Vec<&Arc<dyn Tool>> = toolset
        .tools()
        .iter()
        .filter(|t| t.info().is_mcp())
        .collect();
    let auto: Vec<Arc<dyn Tool>> = mcp
        .iter()
        .filter(|t| defer_of(t) == DeferMode::Auto)
        .map(|t| Arc::clone(t))
        .collect();
    let (defer_auto, mut reason) = decide_auto(&auto, config, context_window);
    let deferred: Vec<Arc<dyn Tool>> = mcp
        .iter()
        .filter(|t| match defer_of(t) {
            DeferMode::Always => true,
            DeferMode::Never => false,
            DeferMode::Auto => defer_auto,
        })
        .map(|t| Arc::clone(t))
        .collect();
    let always = mcp
        .iter()
        .filter(|t| defer_of(t) == DeferMode::Always)
        .count();
    let never = mcp
        .iter()
        .filter(|t| defer_of(t) == DeferMode::Never)
        .count();
    if always > 0 {
        reason.push_str(&format!(
            "; {always} tools of `defer: always` servers deferred"
        ));
    }
    if never > 0 {
        reason.push_str(&format!("; {never} tools of `defer: never` servers bound"));
    }
    let catalog = (!deferred.is_empty()).then(|| {
        Arc::new(DeferredCatalog::with_semantic(
            deferred,
            inputs.semantic.clone(),
        ))
    });
    let meant_bound = never + if defer_auto { 0 } else { auto.len() };
    let mut setup = finish(toolset, catalog, config, reason, meant_bound)?;
    if let Some(catalog) = &setup.catalog {
        let window = context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW);
        let facts = ServerFacts { configs: servers };
        let (listed, section, lines) = listing_lines(catalog, config, window, facts);
        setup.section = section;
        setup.listed = Some(listed);
        setup.lines = lines;
    }
    Ok(setup)
}

/// Whether the `defer: auto` tools are deferred, and why. `auto` weighs the schemas by
/// estimate: loading the tokenizer would cost every run more than the decision is worth
/// (see `deferred::tokens` for how close the estimate is).
fn decide_auto(
    auto: &[Arc<dyn Tool>],
    config: &ToolSearchConfig,
    context_window: Option<u32>,
) -> (bool, String) {
    let setting = match config.enabled {
        Some(_) => "",
        None => "tool_search.enabled is not set (the default is auto); ",
    };
    let (defer, why) = match config.mode() {
        ToolSearchMode::Off => (false, String::from("tool_search is disabled")),
        _ if auto.is_empty() => (false, String::from("there are no MCP tools")),
        ToolSearchMode::On => (
            true,
            format!("tool_search is enabled: {} MCP tools deferred", auto.len()),
        ),
        ToolSearchMode::Auto => {
            let window = context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW);
            let tokens = estimate_schemas_tokens(auto.iter().map(|t| t.info()));
            let limit = f64::from(window) * config.auto_threshold_percent / 100.0;
            let share = 100.0 * tokens as f64 / f64::from(window);
            let defer = tokens as f64 > limit;
            let verdict = if defer { "deferred" } else { "bound" };
            (
                defer,
                format!(
                    "auto: the schemas of {} MCP tools take about {tokens} tokens, {share:.1}% \
                     of a {window}-token context window (threshold {}%): {verdict}",
                    auto.len(),
                    config.auto_threshold_percent
                ),
            )
        }
    };
    (defer, format!("{setting}{why}"))
}

/// Assembles the bound list and checks the fail-closed invariant: exactly the MCP tools
/// meant to be bound (`meant_bound`) are bound, every other one is in the catalog.
fn finish(
    toolset: &Toolset,
    catalog: Option<Arc<DeferredCatalog>>,
    config: &ToolSearchConfig,
    reason: String,
    meant_bound: usize,
) -> Result<DeferredSetup, DeferredError> {
    let Some(catalog) = catalog else {
        let mcp_count = toolset.tools().iter().filter(|t| t.info().is_mcp()).count();
        if mcp_count != meant_bound {
            return Err(DeferredError::FailClosed {
                count: mcp_count,
                reason: String::from("the catalog is missing"),
            });
        }
        return Ok(DeferredSetup {
            bound: toolset.tools().to_vec(),
            catalog: None,
            reason,
            section: String::new(),
            listed: None,
            binding: config.binding,
            lines: Vec::new(),
            skills_section: String::new(),
        });
    };
    let mut bound: Vec<Arc<dyn Tool>> = toolset
        .tools()
        .iter()
        .filter(|t| !catalog.contains(&t.info().name))
        .cloned()
        .collect();
    let leaked = bound.iter().filter(|t| t.info().is_mcp()).count();
    if leaked != meant_bound {
        return Err(DeferredError::FailClosed {
            count: leaked.saturating_sub(meant_bound),
            reason: String::from("MCP tools are missing from the catalog"),
        });
    }
    let stable = config.binding == Binding::Stable;
    let own: &[&str] = if stable {
        &[TOOL_SEARCH, CALL_TOOL]
    } else {
        &[TOOL_SEARCH]
    };
    for own in own {
        // Also a deferred one: its listing line and schema would pass for ours.
        if bound.iter().any(|t| t.info().name == *own) || catalog.contains(own) {
            return Err(DeferredError::FailClosed {
                count: catalog.len(),
                reason: format!("another tool is already named `{own}`"),
            });
        }
    }
    // First: small local models pick the first tool they see far too often, and the one
    // to start with is the search. The order never changes, so neither does the prefix.
    bound.insert(
        0,
        Arc::new(ToolSearch::new(catalog.clone(), config.max_results)),
    );
    if stable {
        bound.insert(1, Arc::new(CallTool::new()));
    }
    Ok(DeferredSetup {
        bound,
        catalog: Some(catalog),
        reason,
        section: String::new(),
        listed: None,
        binding: config.binding,
        lines: Vec::new(),
        skills_section: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::parse_app_config;
    use crate::deferred::testing::mcp_tools;
    use crate::tools::{assemble_toolset, build_configured_tools};

    fn toolset(mcp: usize) -> Toolset {
        let cfg = parse_app_config(
            "tools: [{name: ls, use: antler.sandbox:ls}]",
            Path::new("c"),
            &|_| None,
        )
        .unwrap()
        .value;
        let configured = build_configured_tools(&cfg, Path::new("."), &Default::default(), None)
            .unwrap()
            .tools;
        let names: Vec<String> = (0..mcp).map(|i| format!("tool{i}")).collect();
        let spec: Vec<(&str, &str, &str)> = names
            .iter()
            .map(|n| ("srv", n.as_str(), "does a thing with a long description"))
            .collect();
        assemble_toolset(configured, Vec::new(), mcp_tools(&spec)).0
    }

    fn config(enabled: ToolSearchMode) -> ToolSearchConfig {
        ToolSearchConfig {
            enabled: Some(enabled),
            ..ToolSearchConfig::default()
        }
    }

    fn on(context_window: Option<u32>, servers: &[McpServerConfig]) -> DeferInputs<'_> {
        DeferInputs {
            context_window,
            servers,
            ..Default::default()
        }
    }

    fn bound_names(setup: &DeferredSetup) -> Vec<String> {
        setup.bound.iter().map(|t| t.info().name.clone()).collect()
    }

    #[test]
    fn disabled_or_without_mcp_tools_nothing_changes() {
        let set = setup_deferred(&toolset(3), &config(ToolSearchMode::Off), None).unwrap();
        assert!(set.catalog.is_none());
        assert_eq!(
            bound_names(&set),
            ["ls", "srv_tool0", "srv_tool1", "srv_tool2"]
        );
        assert_eq!(set.prompt_section(), "");
        let set = setup_deferred(&toolset(0), &config(ToolSearchMode::On), None).unwrap();
        assert!(set.catalog.is_none());
        assert_eq!(
            bound_names(&set),
            ["ls"],
            "no tool_search without MCP tools"
        );
    }

    #[test]
    fn enabled_defers_every_mcp_tool_and_adds_tool_search() {
        let set = setup_deferred(&toolset(3), &config(ToolSearchMode::On), None).unwrap();
        assert_eq!(bound_names(&set), ["tool_search", "ls"]);
        let catalog = set.catalog.as_ref().unwrap();
        assert_eq!(catalog.len(), 3);
        assert_eq!(
            set.prompt_section(),
            "<available-deferred-tools>\nsrv_tool0\nsrv_tool1\nsrv_tool2\n</available-deferred-tools>"
        );
    }

    #[test]
    fn auto_defers_only_above_the_threshold() {
        let tools = toolset(40);
        let infos: Vec<_> = tools.tools()[1..]
            .iter()
            .map(|t| t.info().clone())
            .collect();
        let tokens = crate::deferred::estimate_schemas_tokens(&infos);
        let cfg = config(ToolSearchMode::Auto);
        // The schemas are 2% of a window 50x their size (bound) and 100% of a window their
        // size (deferred); exactly at the threshold they are bound ("more than").
        let big = u32::try_from(tokens * 50).unwrap();
        let set = setup_deferred(&tools, &cfg, Some(big)).unwrap();
        assert!(set.catalog.is_none(), "{}", set.reason);
        assert!(set.reason.contains("bound"));
        let small = u32::try_from(tokens).unwrap();
        let set = setup_deferred(&tools, &cfg, Some(small)).unwrap();
        assert!(set.catalog.is_some(), "{}", set.reason);
        assert!(set.reason.contains("deferred"));
        let exact = u32::try_from(tokens * 10).unwrap();
        let set = setup_deferred(&tools, &cfg, Some(exact)).unwrap();
        assert!(set.catalog.is_none(), "at the threshold: {}", set.reason);
    }

    #[test]
    fn lookup_covers_bound_and_deferred_tools_only() {
        let set = setup_deferred(&toolset(2), &config(ToolSearchMode::On), None).unwrap();
        assert!(set.tool("tool_search").is_some());
        assert!(set.tool("srv_tool1").is_some());
        assert!(set.tool("ls").is_some());
        assert!(set.tool("srv_tool9").is_none());
    }

    #[test]
    fn fails_closed_instead_of_binding_every_schema() {
        let cfg = ToolSearchConfig::default();
        let err = finish(&toolset(2), None, &cfg, String::new(), 0).unwrap_err();
        assert!(
            err.to_string().contains("refusing to bind their schemas"),
            "{err}"
        );
        let partial = Arc::new(DeferredCatalog::new(toolset(2).tools()[1..2].to_vec()));
        let err = finish(&toolset(2), Some(partial), &cfg, String::new(), 0).unwrap_err();
        assert!(
            err.to_string().contains("missing from the catalog"),
            "{err}"
        );
    }

    fn server(defer: &str) -> Vec<McpServerConfig> {
        let text =
            format!(r#"{{"mcpServers": {{"srv": {{"command": "x", "defer": "{defer}"}}}}}}"#);
        crate::config::parse_extensions_config(&text, Path::new("e.json"), &|_| None)
            .unwrap()
            .value
            .servers
    }

    #[test]
    fn a_servers_defer_setting_overrides_the_global_decision() {
        let tools = toolset(3);
        let never = setup_deferred_for(
            &tools,
            &config(ToolSearchMode::On),
            on(None, &server("never")),
        )
        .unwrap();
        assert!(never.catalog.is_none(), "nothing left to defer");
        assert_eq!(
            never.bound.len(),
            4,
            "ls and the three tools, no tool_search"
        );
        assert!(
            never
                .reason
                .contains("3 tools of `defer: never` servers bound"),
            "{}",
            never.reason
        );

        let always = setup_deferred_for(
            &tools,
            &config(ToolSearchMode::Off),
            on(None, &server("always")),
        )
        .unwrap();
        assert_eq!(always.catalog.as_ref().map(|c| c.len()), Some(3));
        let bound: Vec<_> = always.bound.iter().map(|t| t.info().name.clone()).collect();
        assert_eq!(bound, ["tool_search", "ls"]);

        // `auto` below its threshold binds, but `always` still defers.
        let mut cfg = config(ToolSearchMode::Auto);
        cfg.auto_threshold_percent = 99.0;
        let auto = setup_deferred_for(&tools, &cfg, on(Some(1_000_000), &server("auto"))).unwrap();
        assert!(auto.catalog.is_none());
        let always =
            setup_deferred_for(&tools, &cfg, on(Some(1_000_000), &server("always"))).unwrap();
        assert_eq!(always.catalog.as_ref().map(|c| c.len()), Some(3));
    }

    #[test]
    fn a_stable_binding_binds_call_tool_with_the_catalog_only() {
        let mut cfg = config(ToolSearchMode::On);
        cfg.binding = Binding::Stable;
        let set = setup_deferred(&toolset(2), &cfg, None).unwrap();
        assert_eq!(bound_names(&set), ["tool_search", "call_tool", "ls"]);
        let without = set.narrowed(set.bound[2..].to_vec(), false);
        assert_eq!(bound_names(&without), ["ls"], "no catalog, no call_tool");
        let (search, ls) = (set.bound[0].clone(), set.bound[2].clone());
        let with = set.narrowed(vec![search, ls], true);
        assert_eq!(bound_names(&with), ["tool_search", "call_tool", "ls"]);
        let off = setup_deferred(&toolset(2), &config(ToolSearchMode::Off), None).unwrap();
        assert!(!bound_names(&off).contains(&String::from("call_tool")));
    }

    #[test]
    fn another_tool_named_call_tool_fails_closed_under_a_stable_binding() {
        let mut tools = toolset(1).tools().to_vec();
        tools.extend(crate::deferred::testing::mcp_tools(&[("x", "y", "z")]));
        let clash: Arc<dyn Tool> = Arc::new(CallTool::new());
        tools.insert(0, clash);
        let toolset = assemble_toolset(tools, Vec::new(), Vec::new()).0;
        let mut cfg = config(ToolSearchMode::On);
        cfg.binding = Binding::Stable;
        let err = setup_deferred(&toolset, &cfg, None).unwrap_err();
        assert!(
            err.to_string().contains("already named `call_tool`"),
            "{err}"
        );
        // A deferred one too: its line and schema would pass for antler's own.
        let deferred = crate::deferred::testing::mcp_tools(&[("call", "tool", "fake")]);
        let toolset = assemble_toolset(Vec::new(), Vec::new(), deferred).0;
        assert_eq!(toolset.tools()[0].info().name, "call_tool");
        let err = setup_deferred(&toolset, &cfg, None).unwrap_err();
        assert!(
            err.to_string().contains("already named `call_tool`"),
            "{err}"
        );
    }
}

//! Deciding what is deferred, and refusing to start when that cannot be done safely.

use std::sync::Arc;

use super::tokens::schemas_tokens;
use super::tool_search::{TOOL_SEARCH, ToolSearch};
use super::{DeferredCatalog, deferred_tools_section};
use crate::config::{ToolSearchConfig, ToolSearchMode};
use crate::tools::{Tool, Toolset};

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
    /// Tools bound on every model call before promotions: the non-deferred tools in
    /// toolset order, then `tool_search` when there is a catalog.
    pub bound: Vec<Arc<dyn Tool>>,
    /// The deferred tools, if any.
    pub catalog: Option<Arc<DeferredCatalog>>,
    /// Why deferral is on or off, for `doctor`-style reports and logs.
    pub reason: String,
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

    /// The `<available-deferred-tools>` section of the system prompt ("" without a catalog).
    pub fn prompt_section(&self) -> String {
        match &self.catalog {
            Some(catalog) => {
                deferred_tools_section(catalog.infos().iter().map(|i| i.name.as_str()))
            }
            None => String::new(),
        }
    }
}

/// Decides what to defer: nothing when tool search is off or there are no MCP tools; every
/// MCP tool when it is on; with `auto`, only when the MCP schemas would take more than
/// `auto_threshold_percent` of `context_window` tokens. Built-in and configured tools are
/// never deferred.
pub fn setup_deferred(
    toolset: &Toolset,
    config: &ToolSearchConfig,
    context_window: Option<u32>,
) -> Result<DeferredSetup, DeferredError> {
    let mcp: Vec<Arc<dyn Tool>> = toolset
        .tools()
        .iter()
        .filter(|t| t.info().is_mcp())
        .cloned()
        .collect();
    let (defer, reason) = match config.enabled {
        ToolSearchMode::Off => (false, String::from("tool_search is disabled")),
        _ if mcp.is_empty() => (false, String::from("there are no MCP tools")),
        ToolSearchMode::On => (
            true,
            format!("tool_search is enabled: {} MCP tools deferred", mcp.len()),
        ),
        ToolSearchMode::Auto => {
            let window = context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW);
            let infos: Vec<_> = mcp.iter().map(|t| t.info().clone()).collect();
            match schemas_tokens(&infos) {
                Ok(tokens) => {
                    let limit = f64::from(window) * config.auto_threshold_percent / 100.0;
                    let share = 100.0 * tokens as f64 / f64::from(window);
                    let defer = tokens as f64 > limit;
                    let verdict = if defer { "deferred" } else { "bound" };
                    (
                        defer,
                        format!(
                            "auto: the MCP schemas take {tokens} tokens, {share:.1}% of a {window}-token \
                         context window (threshold {}%): {verdict}",
                            config.auto_threshold_percent
                        ),
                    )
                }
                Err(err) => {
                    return Err(DeferredError::FailClosed {
                        count: mcp.len(),
                        reason: err.to_string(),
                    });
                }
            }
        }
    };
    let catalog = defer.then(|| Arc::new(DeferredCatalog::new(mcp.clone())));
    finish(toolset, defer, catalog, config.max_results, reason)
}

/// Assembles the bound list and checks the fail-closed invariant: when deferral was
/// decided, no MCP tool may be bound without a catalog.
fn finish(
    toolset: &Toolset,
    defer: bool,
    catalog: Option<Arc<DeferredCatalog>>,
    max_results: usize,
    reason: String,
) -> Result<DeferredSetup, DeferredError> {
    let mcp_count = toolset.tools().iter().filter(|t| t.info().is_mcp()).count();
    let Some(catalog) = catalog else {
        if defer && mcp_count > 0 {
            return Err(DeferredError::FailClosed {
                count: mcp_count,
                reason: String::from("the catalog is missing"),
            });
        }
        return Ok(DeferredSetup {
            bound: toolset.tools().to_vec(),
            catalog: None,
            reason,
        });
    };
    let mut bound: Vec<Arc<dyn Tool>> = toolset
        .tools()
        .iter()
        .filter(|t| !catalog.contains(&t.info().name))
        .cloned()
        .collect();
    let leaked = bound.iter().filter(|t| t.info().is_mcp()).count();
    if leaked > 0 {
        return Err(DeferredError::FailClosed {
            count: leaked,
            reason: String::from("MCP tools are missing from the catalog"),
        });
    }
    if bound.iter().any(|t| t.info().name == TOOL_SEARCH) {
        return Err(DeferredError::FailClosed {
            count: mcp_count,
            reason: format!("another tool is already named `{TOOL_SEARCH}`"),
        });
    }
    bound.push(Arc::new(ToolSearch::new(catalog.clone(), max_results)));
    Ok(DeferredSetup {
        bound,
        catalog: Some(catalog),
        reason,
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
            enabled,
            ..ToolSearchConfig::default()
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
        assert_eq!(bound_names(&set), ["ls", "tool_search"]);
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
        let tokens = schemas_tokens(&infos).unwrap();
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
        let err = finish(&toolset(2), true, None, 5, String::new()).unwrap_err();
        assert!(
            err.to_string().contains("refusing to bind their schemas"),
            "{err}"
        );
        let partial = Arc::new(DeferredCatalog::new(toolset(2).tools()[1..2].to_vec()));
        let err = finish(&toolset(2), true, Some(partial), 5, String::new()).unwrap_err();
        assert!(
            err.to_string().contains("missing from the catalog"),
            "{err}"
        );
    }
}

//! The deferred schema filter: what the model sees and may call.

use std::collections::HashSet;
use std::sync::Arc;

use crate::agent::middleware::{Layer, ModelCall};
use crate::agent::state::ThreadState;
use crate::deferred::{DeferredCatalog, function_schema};
use crate::tools::{PreparedCall, PromotedUpdate, StateUpdate, ToolOutput};

/// Binds the non-deferred tools (in their fixed order) plus the promoted deferred tools
/// whose catalog hash matches the current catalog (in promotion order), so the bound list
/// only ever grows at its end and a provider's prompt cache keeps its prefix. Blocks calls
/// to deferred tools that are not promoted. Keeps at most `max_promoted` promoted tools,
/// letting the least recently used lapse. With a stable binding promoted tools are never
/// bound (they are called through `call_tool`), but calls are filtered the same way.
pub(crate) struct DeferredFilter {
    catalog: Arc<DeferredCatalog>,
    max_promoted: usize,
    bind_promoted: bool,
    /// MCP tools bound on purpose (`defer: never` servers); every other MCP tool is
    /// bound only when promoted.
    bound_mcp: HashSet<String>,
}

impl DeferredFilter {
    /// The filter for `catalog`.
    pub(crate) fn new(catalog: Arc<DeferredCatalog>, max_promoted: usize) -> Self {
        Self {
            catalog,
            max_promoted,
            bind_promoted: true,
            bound_mcp: HashSet::new(),
        }
    }

    /// Binds nothing promoted: the tools array stays as the setup made it.
    pub(crate) fn stable(mut self) -> Self {
        self.bind_promoted = false;
        self
    }

    /// Keeps these MCP tools bound (the deferred setup chose to bind them).
    pub(crate) fn binding(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.bound_mcp.extend(names);
        self
    }

    /// The answer to a call that names an unpromoted deferred tool exactly: the call does
    /// not run, but the name is as good as `select:` it, so the tool is promoted and its
    /// schema given back, sparing the model a search (small models call a listed name
    /// directly far more often than they search first).
    pub(crate) fn promoted_by_call(&self, name: &str) -> ToolOutput {
        let schema = self
            .catalog
            .tool(name)
            .map(|tool| function_schema(tool.info())["function"].take())
            .unwrap_or_default();
        let mut output = ToolOutput::error(Self::promoted_message(name, &schema.to_string()));
        output.state_update = Some(Box::new(StateUpdate {
            promoted: Some(PromotedUpdate {
                catalog_hash: self.catalog.hash().to_string(),
                names: vec![name.to_string()],
            }),
            ..Default::default()
        }));
        output
    }

    /// The text of [`DeferredFilter::promoted_by_call`]'s answer.
    pub(crate) fn promoted_message(name: &str, schema: &str) -> String {
        format!(
            "Error: Tool '{name}' was deferred, so this call did not run. Naming it has loaded \
             it (as tool_search with select:{name} would). Its schema: {schema}\nCall it again \
             with arguments that fit the schema."
        )
    }
}

impl Layer for DeferredFilter {
    fn name(&self) -> &'static str {
        "deferred_filter"
    }

    fn before_model(&self, state: &mut ThreadState, call: &mut ModelCall<'_>) {
        state.evict_to(self.max_promoted, &[]);
        // Every MCP tool is deferred, also one that appeared after the catalog was built:
        // none is ever bound unless promoted from this catalog or bound by the setup.
        call.tools
            .retain(|tool| !tool.info().is_mcp() || self.bound_mcp.contains(&tool.info().name));
        if !self.bind_promoted
            || state.promoted.catalog_hash.as_deref() != Some(self.catalog.hash())
        {
            return;
        }
        for name in &state.promoted.names {
            if let Some(tool) = self.catalog.tool(name) {
                call.tools.push(tool.clone());
            }
        }
    }

    fn before_tool(&self, state: &mut ThreadState, call: &PreparedCall) -> Option<ToolOutput> {
        if !self.catalog.contains(&call.name) {
            return None;
        }
        if state.is_promoted(self.catalog.hash(), &call.name) {
            state.touch(&call.name);
            None
        } else {
            Some(self.promoted_by_call(&call.name))
        }
    }

    fn after_tool(&self, state: &mut ThreadState, _call: &PreparedCall, output: &mut ToolOutput) {
        let just_promoted = output
            .state_update
            .as_ref()
            .and_then(|u| u.promoted.as_ref())
            .map(|p| p.names.clone())
            .unwrap_or_default();
        let lapsed = state.evict_to(self.max_promoted, &just_promoted);
        if !lapsed.is_empty() {
            tracing::debug!(?lapsed, "promoted tools lapsed from the working set");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::middleware::Chain;
    use crate::deferred::testing::sample_catalog;
    use crate::protocol::ToolCall;
    use crate::tools::{PromotedUpdate, StateUpdate, Tool};

    fn setup() -> (Arc<DeferredCatalog>, Chain, Vec<Arc<dyn Tool>>) {
        let catalog = sample_catalog();
        let chain = Chain::new().with(DeferredFilter::new(catalog.clone(), 3));
        let bound: Vec<Arc<dyn Tool>> = Vec::new();
        (catalog, chain, bound)
    }

    fn bound(chain: &Chain, state: &mut ThreadState, catalog: &DeferredCatalog) -> Vec<String> {
        // Start from everything, deferred tools included: the filter must remove them.
        let all: Vec<Arc<dyn Tool>> = catalog
            .infos()
            .iter()
            .filter_map(|i| catalog.tool(&i.name).cloned())
            .collect();
        chain
            .prepare_model_call(state, &mut Vec::new(), all)
            .0
            .iter()
            .map(|t| t.info().name.clone())
            .collect()
    }

    fn promote(state: &mut ThreadState, hash: &str, names: &[&str]) {
        state.apply(Some(&StateUpdate {
            promoted: Some(PromotedUpdate {
                catalog_hash: hash.into(),
                names: names.iter().map(|n| n.to_string()).collect(),
            }),
            ..Default::default()
        }));
    }

    fn call(name: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn hides_unpromoted_and_passes_promoted_with_a_matching_hash() {
        let (catalog, chain, _) = setup();
        let mut state = ThreadState::default();
        assert!(bound(&chain, &mut state, &catalog).is_empty());
        promote(
            &mut state,
            catalog.hash(),
            &["time_convert_time", "github_get_file"],
        );
        assert_eq!(
            bound(&chain, &mut state, &catalog),
            ["time_convert_time", "github_get_file"]
        );
        promote(&mut state, "stale0000000000", &["github_get_file"]);
        assert!(
            bound(&chain, &mut state, &catalog).is_empty(),
            "a stale hash binds nothing"
        );
    }

    #[tokio::test]
    async fn a_call_naming_an_unpromoted_tool_promotes_it_without_running_it() {
        let (catalog, chain, _) = setup();
        let mut state = ThreadState::default();
        let lookup = |name: &str| catalog.tool(name).cloned();
        let out = chain
            .run_tool_call(&mut state, &call("github_get_file"), &lookup)
            .await;
        assert!(out.is_error);
        assert!(
            out.content.starts_with(
                "Error: Tool 'github_get_file' was deferred, so this call did not run. Naming it \
                 has loaded it (as tool_search with select:github_get_file would). Its schema: {"
            ) && out.content.contains(r#""name":"github_get_file""#),
            "{}",
            out.content
        );
        assert!(state.is_promoted(catalog.hash(), "github_get_file"));
        assert!(
            !state.is_promoted(catalog.hash(), "time_convert_time"),
            "only the named tool"
        );
        // A name that is not in the catalog is not promoted by anything.
        let out = chain
            .run_tool_call(&mut state, &call("github_get_fil"), &lookup)
            .await;
        assert!(!out.content.contains("loaded"), "{}", out.content);
        let out = chain
            .run_tool_call(&mut state, &call("github_get_file"), &lookup)
            .await;
        assert!(
            !out.content.contains("deferred"),
            "promoted tools run: {}",
            out.content
        );
    }

    #[tokio::test]
    async fn the_working_set_keeps_the_recently_used() {
        let (catalog, chain, _) = setup();
        let mut state = ThreadState::default();
        let lookup = |name: &str| catalog.tool(name).cloned();
        promote(
            &mut state,
            catalog.hash(),
            &[
                "github_create_issue",
                "github_list_issues",
                "github_get_file",
            ],
        );
        chain
            .run_tool_call(&mut state, &call("github_create_issue"), &lookup)
            .await;
        promote(&mut state, catalog.hash(), &["time_convert_time"]);
        let names = bound(&chain, &mut state, &catalog);
        assert_eq!(
            names,
            [
                "github_create_issue",
                "github_get_file",
                "time_convert_time"
            ],
            "list_issues was least recently used; order stays promotion order"
        );
    }
}

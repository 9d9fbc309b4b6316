//! The deferred tools of a toolset: their schemas and hash, built once, and their search
//! index, built once by the first ranked search.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use super::hash::catalog_hash;
use serde_json::Value;

use crate::tools::{Tool, ToolInfo, ToolSource};
use antler_search::{Hit, SearchIndex, Searchable, SemanticSearch};

/// A tool as ranked search reads it.
impl Searchable for ToolInfo {
    fn name(&self) -> &str {
        &self.name
    }

    /// MCP tools keep their own name and server apart; another tool has its name, and a
    /// server only when its metadata names one (a catalog file's tools).
    fn name_and_server(&self) -> (&str, Option<&str>) {
        match &self.source {
            ToolSource::Mcp {
                server,
                original_name,
            } => (original_name, Some(server)),
            _ => (
                &self.name,
                self.metadata.get("server").and_then(Value::as_str),
            ),
        }
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> &Value {
        &self.parameters
    }
}

/// One tool a query found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Found {
    /// Its position in catalog order.
    pub index: usize,
    /// Its ranking score, when it was ranked.
    pub score: Option<f32>,
}

impl From<Hit> for Found {
    fn from(hit: Hit) -> Self {
        Self {
            index: hit.index,
            score: Some(hit.score),
        }
    }
}

/// The deferred set. Its hash identifies it in promotions; its index answers `tool_search`.
pub struct DeferredCatalog {
    tools: Vec<Arc<dyn Tool>>,
    infos: Vec<ToolInfo>,
    by_name: HashMap<String, usize>,
    hash: String,
    /// Built by the first ranked search: it costs tens of milliseconds for a large
    /// catalog, and a run that only selects tools by name never needs it.
    index: OnceLock<SearchIndex>,
    /// The sentence encoder the index ranks with, if the session has one.
    semantic: Option<SemanticSearch>,
    /// How many tools have each (lowercase) name token, built when first asked.
    name_tokens: OnceLock<HashMap<String, usize>>,
    /// The names, in catalog order, shared with every model request (built when first
    /// asked).
    names: OnceLock<Arc<[String]>>,
}

impl std::fmt::Debug for DeferredCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredCatalog")
            .field("hash", &self.hash)
            .field("tools", &self.tools.len())
            .finish()
    }
}

impl DeferredCatalog {
    /// Builds the catalog of `tools` (in toolset order, which is the catalog order). A
    /// repeated name keeps its first tool, as toolset assembly does.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self::with_semantic(tools, None)
    }

    /// Like [`DeferredCatalog::new`], ranking with the sentence encoder of `semantic` too.
    pub fn with_semantic(tools: Vec<Arc<dyn Tool>>, semantic: Option<SemanticSearch>) -> Self {
        let mut by_name = HashMap::with_capacity(tools.len());
        let mut unique = Vec::with_capacity(tools.len());
        for tool in tools {
            let name = tool.info().name.clone();
            if by_name.contains_key(&name) {
                tracing::warn!("duplicate deferred tool `{name}` is dropped");
                continue;
            }
            by_name.insert(name, unique.len());
            unique.push(tool);
        }
        let tools = unique;
        let infos: Vec<ToolInfo> = tools.iter().map(|t| t.info().clone()).collect();
        let hash = catalog_hash(&infos);
        Self {
            tools,
            infos,
            by_name,
            hash,
            index: OnceLock::new(),
            semantic,
            name_tokens: OnceLock::new(),
            names: OnceLock::new(),
        }
    }

    /// The tools' names, in catalog order: what a model request may call besides the
    /// bound tools. Shared, so a request costs a reference count, not a copy.
    pub fn names(&self) -> Arc<[String]> {
        self.names
            .get_or_init(|| self.infos.iter().map(|info| info.name.clone()).collect())
            .clone()
    }

    /// Of every tool's name and schema ([`crate::deferred::catalog_hash`]): promotions made
    /// under another lapse.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The tools' descriptions, in catalog order.
    pub fn infos(&self) -> &[ToolInfo] {
        &self.infos
    }

    /// Whether `name` is a deferred tool.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The position of `name` in catalog order.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.position(name).map(|i| &self.tools[i])
    }

    /// Ranked search over the catalog (see [`SearchIndex::search`]); the first one builds
    /// the index (concurrent first searches wait for one build).
    pub fn search(&self, query: &str, limit: usize, keep: &dyn Fn(usize) -> bool) -> Vec<Hit> {
        self.index().search(query, limit, keep)
    }

    /// Whether a search may run the sentence encoder or read the dictionary (one is
    /// configured and is, or may be, loadable).
    pub fn may_encode(&self) -> bool {
        self.semantic.as_ref().is_some_and(SemanticSearch::may_load)
    }

    /// Like [`DeferredCatalog::search`] without the sentence encoder (see
    /// [`SearchIndex::search_quick`]).
    pub fn search_quick(
        &self,
        query: &str,
        limit: usize,
        keep: &dyn Fn(usize) -> bool,
    ) -> Vec<Hit> {
        self.index().search_quick(query, limit, keep)
    }

    fn index(&self) -> &SearchIndex {
        self.index
            .get_or_init(|| SearchIndex::with_semantic(&self.infos, self.semantic.clone()))
    }

    /// How many tools have `token` (lowercase) as a whole token of their name (split at
    /// `_` and `-`).
    pub fn name_token_count(&self, token: &str) -> usize {
        let counts = self.name_tokens.get_or_init(|| {
            let mut counts: HashMap<String, usize> = HashMap::new();
            for info in &self.infos {
                let mut tokens: Vec<String> =
                    info.name.split(['_', '-']).map(str::to_lowercase).collect();
                tokens.sort_unstable();
                tokens.dedup();
                for token in tokens {
                    *counts.entry(token).or_default() += 1;
                }
            }
            counts
        });
        counts.get(token).copied().unwrap_or(0)
    }

    /// Whether a ranked search has built the index yet.
    #[cfg(test)]
    pub(crate) fn index_built(&self) -> bool {
        self.index.get().is_some()
    }

    /// Ranked search for `limit` tools among those with `keep`; when the ranking finds
    /// fewer, the remaining kept tools follow in catalog order (unscored).
    pub fn search_then_fill(
        &self,
        query: &str,
        limit: usize,
        keep: &dyn Fn(usize) -> bool,
    ) -> Vec<Found> {
        let mut found: Vec<Found> = if query.trim().is_empty() {
            Vec::new()
        } else {
            self.search(query, limit, keep)
                .into_iter()
                .map(Found::from)
                .collect()
        };
        for index in (0..self.len()).filter(|&i| keep(i)) {
            if found.len() >= limit {
                break;
            }
            if !found.iter().any(|f| f.index == index) {
                found.push(Found { index, score: None });
            }
        }
        found
    }

    /// How many tools are deferred.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether nothing is deferred.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use crate::deferred::ToolSearch;
    use crate::deferred::testing::sample_catalog;

    #[test]
    fn the_index_is_built_by_the_first_ranked_search_only() {
        let catalog = sample_catalog();
        let search = ToolSearch::new(catalog.clone(), 5);
        assert_eq!(
            search
                .find("select:github_get_file,time_convert_time")
                .len(),
            2
        );
        assert_eq!(
            search.find("+word").len(),
            2,
            "a name filter alone ranks nothing"
        );
        assert!(catalog.contains("zhihu_trending"));
        assert!(
            !catalog.index_built(),
            "name lookups leave the index unbuilt"
        );

        let first = search.find("convert a document to pdf");
        assert!(catalog.index_built(), "a ranked search builds the index");
        assert_eq!(catalog.infos()[first[0].index].name, "word_convert_to_pdf");
        assert_eq!(search.find("convert a document to pdf"), first);
    }
}

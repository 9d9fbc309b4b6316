//! The deferred tools of a toolset: their schemas, hash and search index, built once.

use std::collections::HashMap;
use std::sync::Arc;

use super::hash::catalog_hash;
use super::search::{Hit, SearchIndex};
use crate::tools::{Tool, ToolInfo};

/// The deferred set. Its hash identifies it in promotions; its index answers `tool_search`.
pub struct DeferredCatalog {
    tools: Vec<Arc<dyn Tool>>,
    infos: Vec<ToolInfo>,
    by_name: HashMap<String, usize>,
    hash: String,
    index: SearchIndex,
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
    /// Builds the catalog of `tools` (in toolset order, which is the catalog order).
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let infos: Vec<ToolInfo> = tools.iter().map(|t| t.info().clone()).collect();
        let by_name = infos
            .iter()
            .enumerate()
            .map(|(i, info)| (info.name.clone(), i))
            .collect();
        let hash = catalog_hash(&infos);
        let index = SearchIndex::new(&infos);
        Self {
            tools,
            infos,
            by_name,
            hash,
            index,
        }
    }

    /// The catalog hash.
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

    /// Ranked search over the catalog (see [`SearchIndex::search`]).
    pub fn search(&self, query: &str, limit: usize, keep: &dyn Fn(usize) -> bool) -> Vec<Hit> {
        self.index.search(query, limit, keep)
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

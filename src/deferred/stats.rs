//! What deferral saves: tokens of binding every schema vs. the deferred prompt section
//! plus the `tool_search` schema.

use std::sync::Arc;

use serde::Serialize;

use super::hash::function_schema;
use super::tokens::{TokenizerError, count_tokens};
use super::{DeferredCatalog, ToolSearch, deferred_tools_section};
use crate::tools::Tool;

/// Token counts (o200k) of both ways of offering a set of tools.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenStats {
    /// How many tools.
    pub tools: usize,
    /// Binding every function schema.
    pub full_tokens: usize,
    /// The `<available-deferred-tools>` section plus the `tool_search` schema.
    pub deferred_tokens: usize,
    /// How much smaller the deferred form is, in percent.
    pub reduction_percent: f64,
}

/// Measures `catalog` both ways. The schemas are counted as the JSON array a provider
/// receives in `tools`.
pub fn token_stats(
    catalog: &Arc<DeferredCatalog>,
    max_results: usize,
) -> Result<TokenStats, TokenizerError> {
    let schemas: Vec<_> = catalog.infos().iter().map(function_schema).collect();
    let full_tokens = count_tokens(&serde_json::Value::Array(schemas).to_string())?;
    let section = deferred_tools_section(catalog.infos().iter().map(|i| i.name.as_str()));
    let search = ToolSearch::new(catalog.clone(), max_results);
    let search_schema = serde_json::Value::Array(vec![function_schema(search.info())]);
    let deferred_tokens = count_tokens(&section)? + count_tokens(&search_schema.to_string())?;
    let reduction_percent = if full_tokens == 0 {
        0.0
    } else {
        100.0 * (1.0 - deferred_tokens as f64 / full_tokens as f64)
    };
    Ok(TokenStats {
        tools: catalog.len(),
        full_tokens,
        deferred_tokens,
        reduction_percent,
    })
}

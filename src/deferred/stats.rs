//! What deferral saves: tokens of binding every schema vs. the deferred prompt section
//! plus the `tool_search` schema.

use std::sync::Arc;

use serde::Serialize;

use super::tokens::{TokenizerError, count_tokens, schemas_tokens};
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
/// Without tools nothing is bound either way: all counts are zero.
pub fn token_stats(
    catalog: &Arc<DeferredCatalog>,
    max_results: usize,
) -> Result<TokenStats, TokenizerError> {
    if catalog.is_empty() {
        return Ok(TokenStats {
            tools: 0,
            full_tokens: 0,
            deferred_tokens: 0,
            reduction_percent: 0.0,
        });
    }
    let full_tokens = schemas_tokens(catalog.infos())?;
    let section = deferred_tools_section(catalog.infos().iter().map(|i| i.name.as_str()));
    let search = ToolSearch::new(catalog.clone(), max_results);
    let deferred_tokens =
        count_tokens(&section)? + schemas_tokens(std::slice::from_ref(search.info()))?;
    let reduction_percent = 100.0 * (1.0 - deferred_tokens as f64 / full_tokens.max(1) as f64);
    Ok(TokenStats {
        tools: catalog.len(),
        full_tokens,
        deferred_tokens,
        reduction_percent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deferred::testing::sample_catalog;

    #[test]
    fn deferred_is_smaller_and_empty_is_zero() {
        let stats = token_stats(&sample_catalog(), 5).unwrap();
        assert_eq!(stats.tools, 8);
        assert!(stats.full_tokens > 0 && stats.deferred_tokens > 0);
        let empty = Arc::new(DeferredCatalog::new(Vec::new()));
        let zero = token_stats(&empty, 5).unwrap();
        assert_eq!(
            (
                zero.full_tokens,
                zero.deferred_tokens,
                zero.reduction_percent
            ),
            (0, 0, 0.0)
        );
    }
}

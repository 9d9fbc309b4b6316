//! What deferral saves: tokens of binding every schema vs. the deferred prompt section
//! plus the `tool_search` schema, counted exactly and as a run estimates them.

use std::sync::Arc;

use serde::Serialize;

use super::listing::{ServerFacts, listing};
use super::tokens::{TokenizerError, count_with, schemas_with};
use super::{DeferredCatalog, ToolSearch};
use crate::config::ToolSearchConfig;
use crate::protocol::Counting;
use crate::tools::Tool;

/// Token counts (o200k) of both ways of offering a set of tools, and what a run's
/// estimate makes of them (its `auto` decisions use the estimate).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenStats {
    /// How many tools.
    pub tools: usize,
    /// Binding every function schema.
    pub full_tokens: usize,
    /// The `<available-deferred-tools>` section plus the `tool_search` schema.
    pub deferred_tokens: usize,
    /// [`TokenStats::full_tokens`] as estimated.
    pub full_estimate: usize,
    /// [`TokenStats::deferred_tokens`] as estimated.
    pub deferred_estimate: usize,
    /// How the section lists the tools: `names` or `servers` (`tool_search.listing`).
    pub listing: &'static str,
    /// How much smaller the deferred form is, in percent.
    pub reduction_percent: f64,
}

/// Measures `catalog` both ways, the section listed as `config` says for a
/// `context_window`-token model. The schemas are counted as the JSON array a provider
/// receives in `tools`.
/// Without tools nothing is bound either way: all counts are zero.
pub fn token_stats(
    catalog: &Arc<DeferredCatalog>,
    config: &ToolSearchConfig,
    context_window: u32,
    facts: ServerFacts<'_>,
) -> Result<TokenStats, TokenizerError> {
    if catalog.is_empty() {
        return Ok(TokenStats {
            tools: 0,
            full_tokens: 0,
            deferred_tokens: 0,
            full_estimate: 0,
            deferred_estimate: 0,
            listing: "names",
            reduction_percent: 0.0,
        });
    }
    let (listed, section) = listing(catalog, config, context_window, facts);
    let search = ToolSearch::new(catalog.clone(), config.max_results);
    let both = |counting: Counting| -> Result<(usize, usize), TokenizerError> {
        let full = schemas_with(counting, catalog.infos())?;
        let deferred = count_with(counting, &section)?
            + schemas_with(counting, std::slice::from_ref(search.info()))?;
        Ok((full, deferred))
    };
    let (full_tokens, deferred_tokens) = both(Counting::O200k)?;
    let (full_estimate, deferred_estimate) = both(Counting::Estimate)?;
    let reduction_percent = 100.0 * (1.0 - deferred_tokens as f64 / full_tokens.max(1) as f64);
    Ok(TokenStats {
        tools: catalog.len(),
        full_tokens,
        deferred_tokens,
        full_estimate,
        deferred_estimate,
        listing: listed.as_str(),
        reduction_percent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deferred::testing::sample_catalog;

    #[test]
    fn deferred_is_smaller_and_empty_is_zero() {
        let config = ToolSearchConfig::default();
        let facts = ServerFacts::default();
        let stats = token_stats(&sample_catalog(), &config, 128_000, facts).unwrap();
        assert_eq!(stats.tools, 8);
        assert!(stats.full_tokens > 0 && stats.deferred_tokens > 0);
        assert_eq!(stats.listing, "names", "a small catalog fits the budget");
        let servers = ToolSearchConfig {
            listing: crate::config::ListingMode::Servers,
            ..Default::default()
        };
        let by_server = token_stats(&sample_catalog(), &servers, 128_000, facts).unwrap();
        assert_eq!(by_server.listing, "servers");
        let empty = Arc::new(DeferredCatalog::new(Vec::new()));
        let zero = token_stats(&empty, &config, 128_000, facts).unwrap();
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

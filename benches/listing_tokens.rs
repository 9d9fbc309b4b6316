//! What the deferred tool listing costs, in o200k tokens, per `tool_search.listing` mode:
//! on the LiveMCPBench catalog (527 tools, 70 servers; `../shared/bench/livemcp` or
//! `ANTLER_BENCH_DIR`) and on a synthetic catalog of 10,000 tools over 200 servers (each
//! server a renamed copy of a real one, its tools repeated under numbered names to 50).
//! Prints binding every schema, the section + `tool_search` schema per mode, and the
//! reduction; then how far the estimate a run decides by (`deferred::estimate_tokens`)
//! is from o200k on each catalog, and that the `auto` decisions come out the same by
//! either count.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use antler::config::{ListingMode, ToolSearchConfig};
use antler::deferred::catalog_file::{catalog_tools, load_catalog_file};
use antler::deferred::listing::ServerFacts;
use antler::deferred::{
    DEFAULT_CONTEXT_WINDOW, DeferredCatalog, count_tokens, estimate_tokens, token_stats,
};
use antler::tools::{ToolInfo, ToolSource};

mod support;

fn main() {
    let Some(dir) = support::bench_data() else {
        return;
    };
    let real = load_catalog_file(&dir.join("catalog.json")).unwrap();
    report("LiveMCPBench catalog", &real);
    report("synthetic catalog", &support::synthetic_catalog(&real));
}

fn report(name: &str, tools: &[ToolInfo]) {
    let catalog = Arc::new(DeferredCatalog::new(catalog_tools(tools.to_vec())));
    let servers: std::collections::HashSet<&str> = tools
        .iter()
        .filter_map(|t| match &t.source {
            ToolSource::Mcp { server, .. } => Some(server.as_str()),
            _ => None,
        })
        .collect();
    println!("{name}: {} tools, {} servers", tools.len(), servers.len());
    for mode in [ListingMode::Names, ListingMode::Servers, ListingMode::Auto] {
        let config = ToolSearchConfig {
            listing: mode,
            ..Default::default()
        };
        let stats = token_stats(
            &catalog,
            &config,
            DEFAULT_CONTEXT_WINDOW,
            ServerFacts::default(),
        )
        .unwrap();
        println!(
            "  {:<8} ({:<7}) every schema {:>9} tokens, deferred {:>6} tokens, {:>5.1}% fewer",
            format!("{mode:?}").to_lowercase(),
            stats.listing,
            stats.full_tokens,
            stats.deferred_tokens,
            stats.reduction_percent
        );
        let error = |exact: usize, estimate: usize| {
            100.0 * (estimate as f64 - exact as f64) / exact.max(1) as f64
        };
        println!(
            "           estimate: every schema {:>9} ({:+.1}%), deferred {:>6} ({:+.1}%)",
            stats.full_estimate,
            error(stats.full_tokens, stats.full_estimate),
            stats.deferred_estimate,
            error(stats.deferred_tokens, stats.deferred_estimate),
        );
        if mode == ListingMode::Names {
            decisions(&catalog, &stats);
        }
    }
}

/// The `auto` decisions at their defaults (10% of a 128k window for `enabled`; 2,000
/// tokens for `listing`), by o200k and by the estimate: they must agree.
fn decisions(catalog: &DeferredCatalog, names: &antler::deferred::TokenStats) {
    let config = ToolSearchConfig::default();
    let limit = f64::from(DEFAULT_CONTEXT_WINDOW) * config.auto_threshold_percent / 100.0;
    let defer = |tokens: usize| tokens as f64 > limit;
    let section =
        antler::deferred::deferred_tools_section(catalog.infos().iter().map(|i| i.name.as_str()));
    let (exact, estimate) = (count_tokens(&section).unwrap(), estimate_tokens(&section));
    let fits = |tokens: usize| tokens <= config.listing_budget_tokens;
    println!(
        "  decisions: enabled auto {} (o200k) / {} (estimate); listing auto {} / {} \
         (names: {exact} o200k, {estimate} estimated)",
        verdict(defer(names.full_tokens), "defers", "binds"),
        verdict(defer(names.full_estimate), "defers", "binds"),
        verdict(fits(exact), "names", "servers"),
        verdict(fits(estimate), "names", "servers"),
    );
    assert_eq!(defer(names.full_tokens), defer(names.full_estimate));
    assert_eq!(fits(exact), fits(estimate));
}

fn verdict(yes: bool, then: &'static str, otherwise: &'static str) -> &'static str {
    if yes { then } else { otherwise }
}

//! What the deferred tool listing costs, in o200k tokens, per `tool_search.listing` mode:
//! on the LiveMCPBench catalog (527 tools, 70 servers; `../shared/bench/livemcp` or
//! `ANTLER_BENCH_DIR`) and on a synthetic catalog of 10,000 tools over 200 servers (each
//! server a renamed copy of a real one, its tools repeated under numbered names to 50).
//! Prints binding every schema, the section + `tool_search` schema per mode, and the
//! reduction.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use antler::config::{ListingMode, ToolSearchConfig};
use antler::deferred::catalog_file::{catalog_tools, load_catalog_file};
use antler::deferred::listing::ServerFacts;
use antler::deferred::{DEFAULT_CONTEXT_WINDOW, DeferredCatalog, token_stats};
use antler::tools::{ToolInfo, ToolSource};

mod support;

const SERVERS: usize = 200;
const PER_SERVER: usize = 50;

fn main() {
    let Some(dir) = support::bench_data() else {
        return;
    };
    let real = load_catalog_file(&dir.join("catalog.json")).unwrap();
    report("LiveMCPBench catalog", &real);
    report("synthetic catalog", &synthetic(&real));
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
    }
}

/// 200 servers of 50 tools: server `i` copies real server `i mod n` under the name
/// `{server}-{i}`, its tools cycled under the names `{tool}_{k}`.
fn synthetic(real: &[ToolInfo]) -> Vec<ToolInfo> {
    let mut by_server: Vec<(String, Vec<&ToolInfo>)> = Vec::new();
    for tool in real {
        let ToolSource::Mcp { server, .. } = &tool.source else {
            continue;
        };
        match by_server.iter_mut().find(|(s, _)| s == server) {
            Some((_, tools)) => tools.push(tool),
            None => by_server.push((server.clone(), vec![tool])),
        }
    }
    let mut out = Vec::with_capacity(SERVERS * PER_SERVER);
    for i in 0..SERVERS {
        let (server, tools) = &by_server[i % by_server.len()];
        let renamed = format!("{server}-{i}");
        for k in 0..PER_SERVER {
            let seed = tools[k % tools.len()];
            let ToolSource::Mcp { original_name, .. } = &seed.source else {
                continue;
            };
            let original = format!("{original_name}_{k}");
            out.push(ToolInfo {
                name: format!("{renamed}_{original}"),
                source: ToolSource::Mcp {
                    server: renamed.clone(),
                    original_name: original,
                },
                ..seed.clone()
            });
        }
    }
    out
}

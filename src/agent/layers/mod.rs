//! The middleware layers, one per file. Documented order (outermost first):
//!
//! 1. [`routing::Routing`] — promotes a server's top tools when the user's message names
//!    one of its routing keywords (so the filter below binds them in the same call).
//! 2. [`deferred_filter::DeferredFilter`] — binds non-deferred tools plus promoted ones,
//!    blocks calls to deferred tools that are not promoted, keeps the working set small.

pub mod deferred_filter;
pub mod routing;

use crate::agent::middleware::Chain;
use crate::config::{McpServerConfig, ToolSearchConfig};
use crate::deferred::DeferredSetup;

/// The chain of the deferred layers in the documented order, configured from
/// `tool_search` and the servers' routing hints. Empty when nothing is deferred.
pub fn deferred_chain(
    setup: &DeferredSetup,
    config: &ToolSearchConfig,
    servers: &[McpServerConfig],
) -> Chain {
    let Some(catalog) = &setup.catalog else {
        return Chain::new();
    };
    let routes = servers.iter().filter_map(routing::Route::of).collect();
    Chain::new()
        .with(routing::Routing::new(
            catalog.clone(),
            routes,
            config.auto_promote_top_k,
        ))
        .with(deferred_filter::DeferredFilter::new(
            catalog.clone(),
            config.max_promoted,
        ))
}

//! The middleware layers, one per file. Documented order (outermost first; `before_*`
//! hooks run in this order, `after_*` hooks in reverse):
//!
//! 0. [`summarize::Summarization`] — not a hook layer: the runner awaits it before every
//!    model call, because it calls the model itself. Replaces older messages by a summary
//!    when the history passes its token budget.
//! 1. [`dangling::Dangling`] — gives tool calls without a result a placeholder result, so
//!    the history sent to the model is always valid.
//! 2. [`tool_errors::ToolErrors`] — answers calls to unknown tools and calls with
//!    arguments that are not a JSON object; gives silent failures a message.
//! 3. [`routing::Routing`] — promotes a server's top tools when the user's message names
//!    one of its routing keywords (so the filter below binds them in the same call).
//! 4. [`deferred_filter::DeferredFilter`] — binds non-deferred tools plus promoted ones,
//!    blocks calls to deferred tools that are not promoted, keeps the working set small.
//! 5. [`loop_detection::LoopDetection`] — warns the model at the 3rd identical call, stops
//!    the run at the 5th.
//! 6. [`finish_reason::FinishReasons`] — as the innermost layer its `after_model` runs
//!    first: `length` tells the user the answer was cut; `content_filter` drops the tool
//!    calls (so loop detection never counts them).

pub mod dangling;
pub mod deferred_filter;
pub mod finish_reason;
pub mod loop_detection;
pub mod routing;
pub mod summarize;
pub mod tool_errors;

use crate::agent::middleware::Chain;
use crate::config::{McpServerConfig, ToolSearchConfig};
use crate::deferred::DeferredSetup;

/// The full chain in the documented order (summarisation aside) for a deferred setup.
pub fn agent_chain(
    setup: &DeferredSetup,
    config: &ToolSearchConfig,
    servers: &[McpServerConfig],
) -> Chain {
    let known = setup.bound.iter().map(|t| t.info().name.clone()).chain(
        setup
            .catalog
            .iter()
            .flat_map(|c| c.infos().iter().map(|i| i.name.clone())),
    );
    Chain::new()
        .with(dangling::Dangling)
        .with(tool_errors::ToolErrors::new(known))
        .then(deferred_chain(setup, config, servers))
        .with(loop_detection::LoopDetection::default())
        .with(finish_reason::FinishReasons)
}

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

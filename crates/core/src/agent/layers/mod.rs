//! The middleware layers, one per file. Documented order (outermost first; `before_*`
//! hooks run in this order, `after_*` hooks in reverse):
//!
//! 0. [`summarize::Summarization`] — not a hook layer: the runner awaits it before every
//!    model call, because it calls the model itself. Replaces older messages by a summary
//!    when the history passes its token budget.
//! 1. [`dangling::Dangling`] — gives tool calls without a result a placeholder result, so
//!    the history sent to the model is always valid.
//! 2. [`output_budget::OutputBudget`] — its `after_tool` runs last: a result over
//!    `tool_output.max_chars` keeps head and tail, the full text goes to a file.
//! 3. [`redact::Redact`] — replaces every secret value in a tool result; it sits outside
//!    every layer that can answer a call, so it sees every result, and inside the output
//!    budget, so a saved output is redacted too.
//! 4. [`tool_errors::ToolErrors`] — answers calls to unknown tools and calls with
//!    arguments that are not a JSON object; gives silent failures a message.
//!    [`skill_tools::SkillTools`] — while a skill with `allowed-tools` is active in the
//!    run, answers calls of the tools it does not name with an error naming the skill.
//! 5. [`images::Images`] — attaches images queued by `view_image` to the next call.
//! 6. [`routing::Routing`] — promotes a server's top tools when the user's message names
//!    one of its routing keywords (so the filter below binds them in the same call).
//! 7. [`deferred_filter::DeferredFilter`] — binds non-deferred tools plus promoted ones,
//!    blocks calls to deferred tools that are not promoted, keeps the working set small.
//!    [`server_instructions::ServerInstructions`] — adds a server's `instructions` to the
//!    first `tool_search` result of a thread that promotes one of its tools.
//! 8. [`loop_detection::LoopDetection`] — warns the model at the 3rd identical call, stops
//!    the run at the 5th.
//! 9. [`finish_reason::FinishReasons`] — as the innermost layer its `after_model` runs
//!    first: `length` tells the user the answer was cut; `content_filter` drops the tool
//!    calls (so loop detection never counts them).
//! 10. [`stable_calls::StableCalls`] — with `tool_search.binding: stable`: innermost, so its
//!     `after_model` runs first and every later hook sees `call_tool(name, ...)` as a call
//!     of `name`.

pub(crate) mod dangling;
pub(crate) mod deferred_filter;
pub(crate) mod finish_reason;
pub(crate) mod images;
pub(crate) mod loop_detection;
pub mod output_budget;
pub(crate) mod redact;
pub(crate) mod routing;
pub(crate) mod server_instructions;
pub(crate) mod skill_tools;
pub(crate) mod stable_calls;
pub mod summarize;
pub(crate) mod tool_errors;

use std::collections::BTreeMap;

use crate::agent::middleware::Chain;
use crate::config::{Binding, McpServerConfig, ToolSearchConfig};
use crate::deferred::DeferredSetup;

/// The optional layers of [`agent_chain`].
#[derive(Default)]
pub struct ChainOptions {
    /// The output budget, when results should be capped (one-shot and interactive runs).
    pub output_budget: Option<output_budget::OutputBudget>,
    /// The secrets to keep out of tool results.
    pub redact: redact::Redact,
    /// The MCP servers' `instructions`, by server name.
    pub instructions: BTreeMap<String, String>,
    /// Whether the model can see images (`supports_vision`): images from tools are
    /// attached only then.
    pub vision: bool,
    /// The session's skills, whose `allowed-tools` restrict a run they are active in.
    pub skills: Option<crate::skills::Skills>,
}

/// The full chain in the documented order (summarisation aside) for a deferred setup.
pub fn agent_chain(
    setup: &DeferredSetup,
    config: &ToolSearchConfig,
    servers: &[McpServerConfig],
    options: ChainOptions,
) -> Chain {
    let known = setup.bound.iter().map(|t| t.info().name.clone()).chain(
        setup
            .catalog
            .iter()
            .flat_map(|c| c.infos().iter().map(|i| i.name.clone())),
    );
    let mut chain = Chain::new().with(dangling::Dangling);
    if let Some(budget) = options.output_budget {
        chain = chain.with(budget);
    }
    chain = chain
        .with(options.redact)
        .with(tool_errors::ToolErrors::new(known));
    if let Some(skills) = options.skills.filter(|s| s.any_usable()) {
        chain = chain.with(skill_tools::SkillTools::new(
            skills,
            setup.bound.clone(),
            setup.catalog.clone(),
        ));
    }
    chain = chain
        .with(images::Images {
            vision: options.vision,
        })
        .then(deferred_chain(setup, config, servers, options.instructions))
        .with(loop_detection::LoopDetection::default())
        .with(finish_reason::FinishReasons);
    if stable(setup) {
        chain = chain.with(stable_calls::StableCalls);
    }
    chain
}

/// Whether promoted tools are called through `call_tool` (a catalog with a stable binding).
fn stable(setup: &DeferredSetup) -> bool {
    setup.catalog.is_some() && setup.binding == Binding::Stable
}

/// The chain of the deferred layers in the documented order, configured from
/// `tool_search`, the servers' routing hints and their `instructions`. Empty when nothing
/// is deferred.
pub fn deferred_chain(
    setup: &DeferredSetup,
    config: &ToolSearchConfig,
    servers: &[McpServerConfig],
    instructions: BTreeMap<String, String>,
) -> Chain {
    let Some(catalog) = &setup.catalog else {
        return Chain::new();
    };
    let routes = servers.iter().filter_map(routing::Route::of).collect();
    let mut filter = deferred_filter::DeferredFilter::new(catalog.clone(), config.max_promoted)
        .binding(
            setup
                .bound
                .iter()
                .filter(|t| t.info().is_mcp())
                .map(|t| t.info().name.clone()),
        );
    if stable(setup) {
        filter = filter.stable();
    }
    Chain::new()
        .with(routing::Routing::new(
            catalog.clone(),
            routes,
            config.auto_promote_top_k,
        ))
        .with(filter)
        .with(server_instructions::ServerInstructions::new(
            catalog.clone(),
            instructions,
        ))
}

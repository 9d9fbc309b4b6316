//! Deferred tool loading: MCP tools are not bound to the model; their names are listed in
//! the system prompt and `tool_search` fetches their schemas on demand, promoting them into
//! the thread state. See `docs/ARCHITECTURE.md` for the flow.

mod call_tool;
mod catalog;
pub mod catalog_file;
mod hash;
pub mod listing;
pub mod promotion;
mod prompt;
mod setup;
mod stats;
#[cfg(test)]
pub(crate) mod testing;
mod tokens;
mod tool_search;

pub use call_tool::{CALL_TOOL, CallTool, inner_call};
pub use catalog::{DeferredCatalog, Found};
pub use hash::{catalog_hash, function_schema};
pub use prompt::deferred_tools_section;
pub use setup::{
    DEFAULT_CONTEXT_WINDOW, DeferInputs, DeferredError, DeferredSetup, setup_deferred,
    setup_deferred_for,
};
pub use stats::{TokenStats, token_stats};
pub use tokens::{
    TokenizerError, count_tokens, count_with, estimate_schemas_tokens, estimate_tokens,
    schemas_tokens, schemas_with,
};
pub use tool_search::{Outcome, TOOL_SEARCH, ToolSearch};

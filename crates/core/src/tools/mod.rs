//! The tool abstraction and the three tiers it comes in: configured tools (selected in
//! `config.yaml`), built-in tools, and MCP tools.

mod assemble;
pub(crate) mod builtin;
mod call;
mod context;
pub(crate) mod naming;
mod registry;
pub mod sandbox;
pub(crate) mod schema_check;
mod tool;

pub use assemble::{Toolset, assemble_toolset};
pub use call::{PreparedCall, parse_arguments};
#[cfg(test)]
pub(crate) use context::CallStandalone;
pub use context::{EventEmitter, Notify, RunScope, ToolContext};
pub use registry::{
    ConfiguredToolError, ConfiguredTools, ToolBuildContext, ToolFactory, UnknownSetting,
    build_configured_tools, known_tool_ids, unknown_tool_settings,
};
/// Names of antler's own tools that no MCP tool may take (an MCP tool asking for one gets a
/// hash suffix instead).
pub const RESERVED_NAMES: &[&str] = &["tool_search", "call_tool"];

pub use tool::{
    Effect, PromotedUpdate, StateUpdate, Tool, ToolFuture, ToolInfo, ToolOutput, ToolSource,
    TypedTool, parse_args,
};

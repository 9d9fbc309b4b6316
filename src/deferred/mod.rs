//! Deferred tool loading: MCP tools are not bound to the model; their names are listed in
//! the prompt and `tool_search` fetches schemas on demand.

pub mod catalog_file;
pub mod search;

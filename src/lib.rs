//! antler: a terminal LLM agent for people who connect many tools (MCP servers) to a model.

pub mod mcp;
pub mod config;
pub mod tools;

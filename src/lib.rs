//! antler: a terminal LLM agent for people who connect many tools (MCP servers) to a model.
//!
//! Data flows one way: [`config`] → [`tools`] (with [`mcp`] as the third tier) → the agent
//! → front-ends, all speaking the vocabulary of [`protocol`]. See `docs/ARCHITECTURE.md`.

pub mod agent;
pub mod bounded_read;
pub mod cli;
pub mod clock;
pub mod config;
pub mod deferred;
pub mod hooks;
pub mod http;
pub mod mcp;
pub mod output_file;
pub mod pending;
pub mod permissions;
pub mod private_file;
pub mod process;
pub mod protocol;
pub mod provider;
pub mod semantic;
pub mod session;
pub mod setup;
pub mod skills;
pub mod store;
pub mod text;
pub mod tools;
pub mod trust;
pub mod ui;

//! antler: a terminal LLM agent for people who connect many tools (MCP servers) to a model.
//!
//! Data flows one way: [`config`] → [`tools`] (with [`mcp`] as the third tier) → the agent
//! → front-ends, all speaking the vocabulary of [`protocol`]. The modules are listed by
//! floor, bottom first: a module uses only modules above it in this list (a test keeps
//! this, `tests/integration/architecture.rs`). See `docs/ARCHITECTURE.md`.

// The bottom floor: helpers that know nothing of antler's concepts, and the vocabulary
// (the `antler-protocol` crate, which the chat's screen uses too).
pub mod base;
pub use antler_protocol as protocol;
pub mod config;

// What the agent is made of.
pub mod tools;
pub mod provider;
pub mod permissions;
pub mod deferred;
pub mod hooks;
pub mod skills;
pub mod agent;
pub mod trust;
pub mod mcp;
pub mod store;

// Assembly, the session, the front-ends.
pub mod setup;
pub mod session;
pub mod ui;
pub mod cli;

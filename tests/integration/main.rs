//! Integration tests: the real `antler` binary and the public API against the fixture MCP
//! server, real third-party MCP servers and the scripted mock model server, all on loopback.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod agent_run;
mod architecture;
mod assembly;
mod builtins;
mod chat;
mod cli_config;
mod cli_deferred;
mod cli_mcp;
mod conformance;
mod deferred_flow;
mod embedded;
mod examples;
mod first_run;
mod hooks;
mod hostile_files;
mod instructions;
mod interop;
mod lazy_servers;
mod ledger;
mod llama_cpp;
mod mcp_calls;
mod mcp_features;
#[path = "../support/mock_openai/mod.rs"]
mod mock_openai;
mod mock_server;
mod oauth;
mod permissions;
mod security;
mod semantic;
mod session;
mod skills;
mod stable_binding;
mod support;
mod text_calls;
mod trust;

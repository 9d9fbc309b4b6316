//! The MCP client side: transports, one connection per server, the manager that starts
//! them all, and the cache that reloads them when the config file changes.

mod cache;
mod call;
mod connect;
mod content;
pub(crate) mod elicitation;
mod incoming;
mod manager;
pub(crate) mod manifest;
pub(crate) mod oauth;
mod progress;
mod prompts;
mod readable;
mod resources;
mod server;
mod server_state;
mod tool;
mod transport;

use std::time::Duration;

pub use cache::{ExtensionsError, McpCache};
pub use manager::{McpManager, StartSettings};
pub use prompts::PromptError;
pub use resources::{LIST_MCP_RESOURCES, READ_MCP_RESOURCE};
pub use server::{McpServer, StartPlan};
pub use tool::McpTool;

/// Why a server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The stdio command could not be started.
    #[error("cannot start `{program}`: {reason}")]
    Spawn {
        /// The server's `command` as configured, before any `PATH` lookup.
        program: String,
        /// The OS error.
        reason: String,
    },
    /// Connecting (HTTP, SSE) failed.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Http(String),
    /// A configured header is not a valid HTTP header.
    #[error("the header `{0}` is not a valid HTTP header name or value")]
    InvalidHeader(String),
    /// The server wants an OAuth sign-in (it answered 401).
    #[error("it needs you to sign in: run `antler mcp login {0}`")]
    LoginNeeded(String),
    /// The server refused the token for want of scope (403 `insufficient_scope`).
    #[error(
        "it needs more access than you granted (scope `{scope}`): run `antler mcp login {server}` to grant it"
    )]
    ScopeNeeded {
        /// Its key in `mcpServers`, which the suggested `antler mcp login` takes.
        server: String,
        /// The scopes it asked for.
        scope: String,
    },
    /// It still refuses after the sign-ins antler asked for.
    #[error(
        "it still refuses for want of scope `{scope}` after {sign_ins} sign-ins that asked for it; \
         signing in again will not help (ask the server's administrator)"
    )]
    ScopeRefused {
        /// Its key in `mcpServers`.
        server: String,
        /// The scopes it asked for.
        scope: String,
        /// The sign-ins made for it.
        sign_ins: u32,
    },
    /// Signing in with the kept OAuth tokens failed.
    #[error("OAuth for `{server}`: {reason}; run `antler mcp login {server}` again")]
    OAuth {
        /// The server whose sign-in failed.
        server: String,
        /// What failed.
        reason: String,
    },
    /// The MCP `initialize` handshake failed.
    #[error("MCP handshake failed: {0}")]
    Handshake(String),
    /// `tools/list` failed.
    #[error("listing tools failed: {0}")]
    ListTools(String),
    /// `prompts/list` failed.
    #[error("listing prompts failed: {0}")]
    ListPrompts(String),
    /// Connecting and listing took longer than `startup_timeout_secs`.
    #[error("did not start within {:.1}s (startup_timeout_secs)", .0.as_secs_f64())]
    StartupTimeout(Duration),
    /// The server is disabled in the config.
    #[error("the server is disabled")]
    Disabled,
    /// The server failed to (re)start recently.
    #[error("{0}")]
    Unavailable(String),
    /// The server was shut down.
    #[error("the server was shut down")]
    Stopped,
}

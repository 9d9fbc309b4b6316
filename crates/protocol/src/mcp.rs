//! An MCP server's state as listings and front-ends show it.

use serde::Serialize;

/// Whether a server can be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerState {
    /// Connected, its tools listed.
    Connected,
    /// Not started: its tools come from its manifest until the first call starts it.
    Idle,
    /// It could not start, stopped, or its entry is invalid.
    Failed,
    /// `enabled: false` in the config.
    Disabled,
}

impl ServerState {
    /// The state as listings print it (and JSON spells it).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Connected => "connected",
            Self::Idle => "idle",
            Self::Failed => "failed",
            Self::Disabled => "disabled",
        }
    }
}

/// What `antler mcp list` shows for a server.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerStatus {
    /// The key in `mcpServers`.
    pub name: String,
    /// `stdio`, `sse` or `http` (`-` for an invalid entry).
    pub transport: String,
    /// Its state when asked: a connection that has died since is `failed`.
    pub status: ServerState,
    /// Why it failed.
    pub error: Option<String>,
    /// Tools it lists.
    pub tool_count: usize,
    /// The negotiated MCP protocol version.
    pub protocol_version: Option<String>,
    /// Time from start to the first tool list, in milliseconds.
    pub startup_ms: Option<u64>,
    /// How old the manifest its tools come from is, when they come from one.
    pub manifest_age_secs: Option<u64>,
    /// The name and version the server gives itself (escaped, cut to one short line).
    #[serde(default)]
    pub server_info: Option<String>,
    /// How long its `instructions` are, in characters.
    #[serde(default)]
    pub instructions_chars: Option<usize>,
    /// What the live connection says it offers: `tools`, `resources`, `prompts`,
    /// `completions`, `logging`.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// It answered 401: signing in (`antler mcp login NAME`, `l` in the chat's `/mcp`)
    /// lets it start.
    #[serde(default)]
    pub needs_login: bool,
}

/// A server's prompt, offered in the chat as the slash command `/<server>:<name>`. Names
/// are those a command line can carry (see `mcp::prompts`); descriptions are escaped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptInfo {
    /// The server's key in `mcpServers`.
    pub server: String,
    /// The prompt's name on that server.
    pub name: String,
    /// What it is for (one line, escaped, cut short).
    pub description: String,
    /// Its arguments, in the server's order.
    pub arguments: Vec<PromptArgumentInfo>,
}

impl PromptInfo {
    /// The slash command's name: `server:prompt`.
    pub fn command(&self) -> String {
        format!("{}:{}", self.server, self.name)
    }
}

/// One argument of a [`PromptInfo`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptArgumentInfo {
    /// As the server declares it; `/server:prompt name=value` sets it.
    pub name: String,
    /// What it is (one line, escaped, cut short).
    pub description: String,
    /// Whether the prompt needs it.
    pub required: bool,
}

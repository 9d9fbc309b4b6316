//! One configured MCP server over its lifetime: connected, failed, restarted, re-listed.

use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::Value;
use tokio::sync::{Mutex, watch};

use super::McpError;
use super::connect::{Connection, McpService, connect, error_chain};
use super::content::result_text;
use crate::config::McpServerConfig;
use crate::tools::ToolOutput;

/// What `antler mcp list` shows for a server.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ServerStatus {
    /// The key in `mcpServers`.
    pub name: String,
    /// `stdio`, `sse` or `http`.
    pub transport: String,
    /// `connected`, `failed` or `disabled`.
    pub status: &'static str,
    /// Why it failed.
    pub error: Option<String>,
    /// Tools it lists.
    pub tool_count: usize,
    /// The negotiated MCP protocol version.
    pub protocol_version: Option<String>,
    /// Time from start to the first tool list, in milliseconds.
    pub startup_ms: Option<u64>,
}

enum State {
    Disabled,
    Stopped,
    Connected(Box<Live>),
    Failed(String),
}

struct Live {
    service: McpService,
    tools: Vec<rmcp::model::Tool>,
    protocol_version: String,
    listed_generation: u64,
    startup: Duration,
}

impl From<Connection> for Live {
    fn from(c: Connection) -> Self {
        Self {
            service: c.service,
            tools: c.tools,
            protocol_version: c.protocol_version,
            listed_generation: c.listed_generation,
            startup: c.startup,
        }
    }
}

/// A server and its connection. Calls clone the peer out of the lock, so one slow call
/// does not hold up others; the lock is held only to (re)connect or re-list.
pub struct McpServer {
    config: McpServerConfig,
    changes: watch::Sender<u64>,
    state: Mutex<State>,
}

impl McpServer {
    /// Connects (if enabled) and records the outcome; never fails, a failure is a status.
    pub async fn start(config: McpServerConfig) -> Self {
        let (changes, _) = watch::channel(0);
        let state = if !config.enabled {
            State::Disabled
        } else {
            match connect(&config, changes.clone()).await {
                Ok(conn) => State::Connected(Box::new(conn.into())),
                Err(err) => {
                    tracing::warn!(server = %config.name, "MCP server failed to start: {err}");
                    State::Failed(err.to_string())
                }
            }
        };
        Self {
            config,
            changes,
            state: Mutex::new(state),
        }
    }

    /// A receiver that sees every `tools/list_changed` the server sends (as a growing
    /// generation number), for front-ends that want to react at once.
    pub fn tool_list_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The server's configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The server's status for listings.
    pub async fn status(&self) -> ServerStatus {
        let state = self.state.lock().await;
        let (status, error, tool_count, protocol_version, startup_ms) = match &*state {
            State::Disabled => ("disabled", None, 0, None, None),
            State::Failed(e) => ("failed", Some(e.clone()), 0, None, None),
            State::Stopped => ("failed", Some(McpError::Stopped.to_string()), 0, None, None),
            State::Connected(live) => (
                "connected",
                None,
                live.tools.len(),
                Some(live.protocol_version.clone()),
                Some(u64::try_from(live.startup.as_millis()).unwrap_or(u64::MAX)),
            ),
        };
        ServerStatus {
            name: self.config.name.clone(),
            transport: self.config.transport.as_str().to_string(),
            status,
            error,
            tool_count,
            protocol_version,
            startup_ms,
        }
    }

    /// The server's tools, listed again first if the server announced a change.
    pub async fn tools(&self) -> Vec<rmcp::model::Tool> {
        let mut state = self.state.lock().await;
        let State::Connected(live) = &mut *state else {
            return Vec::new();
        };
        let generation = *self.changes.borrow();
        if generation != live.listed_generation {
            match live.service.peer().list_all_tools().await {
                Ok(tools) => {
                    tracing::info!(server = %self.config.name, count = tools.len(), "tools re-listed after list_changed");
                    live.tools = tools;
                    live.listed_generation = generation;
                }
                Err(err) => {
                    tracing::warn!(server = %self.config.name, "re-listing tools failed; keeping the old list: {err}");
                }
            }
        }
        live.tools.clone()
    }

    /// Calls `tool` (its name on the server). Every failure — `isError`, a timeout, a dead
    /// or crashed server — is a tool error the model can read. A server whose connection
    /// has died is restarted first.
    pub async fn call(&self, tool: &str, arguments: Value) -> ToolOutput {
        let peer = match self.live_peer().await {
            Ok(peer) => peer,
            Err(err) => {
                return ToolOutput::error(format!(
                    "Error: MCP server `{}` is not available: {err}",
                    self.config.name
                ));
            }
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return ToolOutput::error(format!(
                    "Error: the arguments of `{tool}` must be a JSON object, got {other}"
                ));
            }
        };
        let timeout = self.config.tool_timeout;
        match tokio::time::timeout(timeout, peer.call_tool(params)).await {
            Ok(Ok(result)) => {
                let text = result_text(&result);
                if result.is_error == Some(true) {
                    ToolOutput::error(format!("Error: {text}"))
                } else {
                    ToolOutput::ok(text)
                }
            }
            Ok(Err(err)) if peer.is_transport_closed() => ToolOutput::error(format!(
                "Error: MCP server `{}` stopped during the call to `{tool}` ({}); it will be \
                 restarted at the next call",
                self.config.name,
                error_chain(&err)
            )),
            Ok(Err(err)) => ToolOutput::error(format!(
                "Error: MCP server `{}` refused the call to `{tool}`: {}",
                self.config.name,
                error_chain(&err)
            )),
            Err(_) => ToolOutput::error(format!(
                "Error: `{tool}` on MCP server `{}` did not answer within {:.1}s",
                self.config.name,
                timeout.as_secs_f64()
            )),
        }
    }

    /// Closes the connection: a stdio child gets its stdin closed, then SIGTERM, then
    /// SIGKILL (rmcp's shutdown sequence). Later calls find the server stopped.
    pub async fn shutdown(&self) {
        let mut state = self.state.lock().await;
        if let State::Connected(live) = std::mem::replace(&mut *state, State::Stopped)
            && let Err(err) = live.service.cancel().await
        {
            tracing::debug!(server = %self.config.name, "shutdown: {err}");
        }
    }

    /// The peer of a live connection, reconnecting if the previous one has died.
    async fn live_peer(&self) -> Result<rmcp::Peer<rmcp::RoleClient>, McpError> {
        let mut state = self.state.lock().await;
        if let State::Connected(live) = &*state
            && !live.service.is_transport_closed()
        {
            return Ok(live.service.peer().clone());
        }
        match &*state {
            State::Disabled => return Err(McpError::Disabled),
            State::Stopped => return Err(McpError::Stopped),
            _ => {}
        }
        tracing::info!(server = %self.config.name, "restarting MCP server");
        match connect(&self.config, self.changes.clone()).await {
            Ok(conn) => {
                let live = Live::from(conn);
                let peer = live.service.peer().clone();
                *state = State::Connected(Box::new(live));
                Ok(peer)
            }
            Err(err) => {
                *state = State::Failed(err.to_string());
                Err(err)
            }
        }
    }
}

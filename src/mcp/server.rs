//! One configured MCP server over its lifetime: connected, failed, restarted, re-listed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::ServiceError;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;
use tokio::sync::{Mutex, watch};

use super::McpError;
use super::connect::{Connection, connect, error_chain, list_all_tools};
use super::content::result_text;
use super::incoming::{Incoming, UNREADABLE_ANSWER};
use crate::config::McpServerConfig;
use crate::protocol::{ServerState, ServerStatus};
use crate::tools::ToolOutput;

/// After a failed (re)start, calls wait this long before trying again, so a broken server
/// does not cost every call a full start-up timeout.
const RESTART_BACKOFF: Duration = Duration::from_secs(5);

/// After a re-list failed or timed out, the old list is used this long before the next
/// try, so a server that announces changes and then does not answer cannot stall every
/// step of a run.
const RELIST_BACKOFF: Duration = Duration::from_secs(30);

enum State {
    Disabled,
    Stopped,
    Connected(Box<Live>),
    Failed { reason: String, at: Instant },
}

struct Live {
    /// Tells connections apart, so a re-list or a failure never lands on a newer one.
    id: u64,
    connection: Connection,
    /// A call failed at the transport level (not an MCP error): reconnect before the next.
    broken: bool,
    /// A re-list failed: not tried again before then.
    relist_after: Option<Instant>,
}

impl Live {
    fn usable(&self) -> bool {
        !self.broken && !self.connection.service.is_transport_closed()
    }
}

/// A server and its connection. Calls and re-lists clone the rmcp peer out of the lock, so
/// a slow server never holds up other calls or listings; the lock is held to (re)connect.
pub struct McpServer {
    config: McpServerConfig,
    changes: watch::Sender<u64>,
    state: Mutex<State>,
    next_id: AtomicU64,
    /// Grows whenever the tool list held changes (a new connection, a re-list).
    list_version: AtomicU64,
}

impl McpServer {
    /// Connects (if enabled) and records the outcome; never fails, a failure is a status.
    pub async fn start(config: McpServerConfig) -> Self {
        let (changes, _) = watch::channel(0);
        let server = Self {
            config,
            changes,
            state: Mutex::new(State::Disabled),
            next_id: AtomicU64::new(0),
            list_version: AtomicU64::new(0),
        };
        if server.config.enabled {
            let state = server.connect_state().await;
            if let State::Failed { reason, .. } = &state {
                tracing::warn!(server = %server.config.name, "MCP server failed to start: {reason}");
            }
            *server.state.lock().await = state;
        }
        server
    }

    async fn connect_state(&self) -> State {
        // A new connection (a restart, `/mcp reconnect`) may bring other tools: whoever
        // took the old list takes them again.
        self.changes.send_modify(|generation| *generation += 1);
        match connect(&self.config, self.changes.clone()).await {
            Ok(connection) => {
                self.list_version.fetch_add(1, Ordering::Relaxed);
                State::Connected(Box::new(Live {
                    id: self.next_id.fetch_add(1, Ordering::Relaxed),
                    connection,
                    broken: false,
                    relist_after: None,
                }))
            }
            Err(err) => State::Failed {
                reason: err.to_string(),
                at: Instant::now(),
            },
        }
    }

    /// The server's configuration, for naming its tools.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// A receiver that sees every change of the server's tool list, as a growing
    /// generation number: each `tools/list_changed` it sends and each new connection.
    pub fn tool_list_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The server's status for listings. A connection that has died since is `failed`.
    pub async fn status(&self) -> ServerStatus {
        let state = self.state.lock().await;
        let (status, error, tool_count, protocol_version, startup_ms) = match &*state {
            State::Disabled => (ServerState::Disabled, None, 0, None, None),
            State::Stopped => (
                ServerState::Failed,
                Some(McpError::Stopped.to_string()),
                0,
                None,
                None,
            ),
            State::Failed { reason, .. } => {
                (ServerState::Failed, Some(reason.clone()), 0, None, None)
            }
            State::Connected(live) if live.connection.service.is_transport_closed() => (
                ServerState::Failed,
                Some(String::from(
                    "the server exited; it is restarted at the next call",
                )),
                live.connection.tools.len(),
                None,
                None,
            ),
            State::Connected(live) => (
                ServerState::Connected,
                None,
                live.connection.tools.len(),
                Some(live.connection.protocol_version.clone()),
                Some(u64::try_from(live.connection.startup.as_millis()).unwrap_or(u64::MAX)),
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

    /// The server's tools, listed again first if the server announced a change (see
    /// [`McpServer::refresh_tools`]).
    pub async fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.refresh_tools().await;
        match &*self.state.lock().await {
            State::Connected(live) => live.connection.tools.clone(),
            _ => Vec::new(),
        }
    }

    /// Lists the tools again if the server announced a change since the last listing,
    /// and returns the version of the list held, which grows whenever it changes. The
    /// re-list runs outside the lock and within the start-up timeout; if it fails, the
    /// old list is kept and tried again after [`RELIST_BACKOFF`].
    pub async fn refresh_tools(&self) -> u64 {
        let version = || self.list_version.load(Ordering::Relaxed);
        let (peer, id, generation) = {
            let state = self.state.lock().await;
            let State::Connected(live) = &*state else {
                return version();
            };
            let generation = *self.changes.borrow();
            let waiting = live.relist_after.is_some_and(|at| Instant::now() < at);
            if generation == live.connection.listed_generation || waiting {
                return version();
            }
            (live.connection.service.peer().clone(), live.id, generation)
        };
        let listed = tokio::time::timeout(self.config.startup_timeout, list_all_tools(&peer)).await;
        let mut state = self.state.lock().await;
        let State::Connected(live) = &mut *state else {
            return version();
        };
        if live.id != id {
            return version();
        }
        let failed = match listed {
            Ok(Ok(tools)) => {
                tracing::info!(server = %self.config.name, count = tools.len(), "tools re-listed after list_changed");
                live.connection.tools = tools;
                live.connection.listed_generation = generation;
                live.relist_after = None;
                self.list_version.fetch_add(1, Ordering::Relaxed);
                return version();
            }
            Ok(Err(err)) => format!("re-listing tools failed: {err}"),
            Err(_) => format!(
                "re-listing tools took longer than {:?}",
                self.config.startup_timeout
            ),
        };
        tracing::warn!(server = %self.config.name, "{failed}; keeping the old list for {RELIST_BACKOFF:?}");
        live.relist_after = Some(Instant::now() + RELIST_BACKOFF);
        version()
    }

    /// Calls `tool` (its name on the server). Every failure — `isError`, a timeout, a dead
    /// or crashed server — is a tool error the model can read. A server whose connection
    /// has died is restarted first. A timed-out call is cancelled on the server (rmcp sends
    /// `notifications/cancelled` when the request is dropped).
    pub async fn call(&self, tool: &str, arguments: Value) -> ToolOutput {
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
        let (peer, id, incoming) = match self.live_peer().await {
            Ok(live) => live,
            Err(err) => {
                return ToolOutput::error(format!(
                    "Error: MCP server `{}` is not available: {err}",
                    self.config.name
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
            Ok(Err(err)) if !matches!(err, ServiceError::McpError(_)) => {
                self.mark_broken(id).await;
                match incoming.fault() {
                    Some(fault) => ToolOutput::error(format!(
                        "Error: MCP server `{}` broke the protocol during the call to `{tool}` \
                         ({fault}) and was disconnected; it will be restarted at the next call",
                        self.config.name
                    )),
                    None => ToolOutput::error(format!(
                        "Error: MCP server `{}` stopped or became unreachable during the call \
                         to `{tool}` ({}); it will be restarted at the next call",
                        self.config.name,
                        error_chain(&err)
                    )),
                }
            }
            Ok(Err(ServiceError::McpError(error))) if error.code == UNREADABLE_ANSWER => {
                ToolOutput::error(format!(
                    "Error: MCP server `{}` answered the call to `{tool}`, but {}",
                    self.config.name, error.message
                ))
            }
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
    /// SIGKILL (rmcp's shutdown sequence); then the rest of its process group is ended,
    /// whether the server exited cleanly, by itself or not at all. Later calls find the
    /// server stopped.
    pub async fn shutdown(&self) {
        let mut state = self.state.lock().await;
        if let State::Connected(live) = std::mem::replace(&mut *state, State::Stopped) {
            let Live { connection, .. } = *live;
            let Connection {
                service,
                process_group,
                ..
            } = connection;
            if let Err(err) = service.cancel().await {
                tracing::debug!(server = %self.config.name, "shutdown: {err}");
            }
            if let Some(group) = process_group {
                group.end().await;
            }
        }
    }

    /// Drops the current connection, if any, and connects again now (`/mcp` in the chat).
    /// A disabled server stays disabled.
    pub async fn reconnect(&self) {
        self.shutdown().await;
        let mut state = self.state.lock().await;
        if !matches!(*state, State::Disabled) {
            tracing::info!(server = %self.config.name, "reconnecting MCP server");
            *state = self.connect_state().await;
        }
    }

    async fn mark_broken(&self, id: u64) {
        if let State::Connected(live) = &mut *self.state.lock().await
            && live.id == id
        {
            live.broken = true;
        }
    }

    /// The peer (and connection id) of a live connection, reconnecting if the previous one
    /// has died (at most once per [`RESTART_BACKOFF`] after a failed restart).
    async fn live_peer(&self) -> Result<(rmcp::Peer<rmcp::RoleClient>, u64, Incoming), McpError> {
        let mut state = self.state.lock().await;
        let live_of = |live: &Live| {
            (
                live.connection.service.peer().clone(),
                live.id,
                live.connection.incoming.clone(),
            )
        };
        match &*state {
            State::Connected(live) if live.usable() => return Ok(live_of(live)),
            State::Disabled => return Err(McpError::Disabled),
            State::Stopped => return Err(McpError::Stopped),
            State::Failed { reason, at } if at.elapsed() < RESTART_BACKOFF => {
                return Err(McpError::Unavailable(reason.clone()));
            }
            State::Connected(_) | State::Failed { .. } => {}
        }
        tracing::info!(server = %self.config.name, "restarting MCP server");
        *state = self.connect_state().await;
        match &*state {
            State::Connected(live) => Ok(live_of(live)),
            State::Failed { reason, .. } => Err(McpError::Unavailable(reason.clone())),
            State::Disabled | State::Stopped => Err(McpError::Stopped),
        }
    }
}

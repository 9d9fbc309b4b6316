//! One configured MCP server over its lifetime: idle (its tools from a manifest),
//! connected, failed, restarted, re-listed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, watch};

use super::McpError;
use super::call::{self};
use super::connect::{Connection, connect, list_all_prompts};
pub(super) use super::progress::ToolProgress;
pub use super::server_state::StartPlan;
pub(super) use features::{Feature, ResourceListing};

mod features;
mod listing;
mod tool_call;
use super::server_state::{Live, State};
use crate::base::clock::now_secs as now;
use crate::config::McpServerConfig;
use crate::protocol::{ServerState, ServerStatus};

/// After a failed (re)start, calls wait this long before trying again, so a broken server
/// does not cost every call a full start-up timeout.
const RESTART_BACKOFF: Duration = Duration::from_secs(5);

/// After a re-list failed or timed out, the old list is used this long before the next
/// try, so a server that announces changes and then does not answer cannot stall every
/// step of a run.
const RELIST_BACKOFF: Duration = Duration::from_secs(30);

/// A server and its connection. Calls and re-lists clone the rmcp peer out of the lock, so
/// a slow server never holds up other calls or listings; the lock is held to (re)connect.
pub struct McpServer {
    config: McpServerConfig,
    plan: StartPlan,
    changes: watch::Sender<u64>,
    state: Mutex<State>,
    next_id: AtomicU64,
    /// Grows whenever the tool list held changes (a new connection, a re-list).
    list_version: AtomicU64,
}

impl McpServer {
    /// Makes the server ready: idle when the plan is lazy and a usable manifest lists its
    /// tools, else connected now (if enabled). Never fails; a failure is a status.
    pub async fn start(config: McpServerConfig, plan: StartPlan) -> Self {
        let (changes, _) = watch::channel(0);
        let server = Self {
            config,
            plan,
            changes,
            state: Mutex::new(State::Disabled),
            next_id: AtomicU64::new(0),
            list_version: AtomicU64::new(0),
        };
        if !server.config.enabled {
            return server;
        }
        if let Some(manifest) = server.usable_manifest() {
            tracing::debug!(server = %server.config.name, tools = manifest.tools.len(), "MCP server idle; its tools come from its manifest");
            server.warn_unmatched_filters(&manifest.tools);
            *server.state.lock().await = State::Idle(Arc::new(manifest));
            return server;
        }
        let mut state = server.state.lock().await;
        server.connect_into(&mut state).await;
        if let State::Failed { reason, .. } = &*state {
            tracing::warn!(server = %server.config.name, "MCP server failed to start: {reason}");
        }
        drop(state);
        server
    }

    /// Connects and puts the outcome in `state`. An idle server's manifest survives a
    /// failed start; a successful one is saved as the new manifest.
    async fn connect_into(&self, state: &mut State) {
        // A new connection (a restart, `/mcp reconnect`) may bring other tools: whoever
        // took the old list takes them again.
        self.changes.send_modify(|generation| *generation += 1);
        let kept = state.manifest().cloned();
        let next = match connect(
            &self.config,
            self.changes.clone(),
            self.plan.tokens.as_ref(),
        )
        .await
        {
            Ok(connection) => State::Connected(Box::new(Live {
                id: self.next_id.fetch_add(1, Ordering::Relaxed),
                connection,
                broken: false,
                relist_after: None,
            })),
            Err(err) => State::Failed {
                login: matches!(err, McpError::LoginNeeded(_) | McpError::ScopeNeeded { .. }),
                reason: err.to_string(),
                at: Instant::now(),
                manifest: kept,
            },
        };
        self.replace(state, next);
        if let State::Connected(live) = &*state
            && self.plan.manifests.is_some()
            && let Err(err) = self.save_manifest(&live.connection, false)
        {
            tracing::warn!(server = %self.config.name, "{err}");
        }
    }

    /// Puts `next` in place; the list version grows only when the tools or instructions
    /// held change, so an idle server that starts with what its manifest promised
    /// rebuilds nothing, and one that does not is taken as it really is.
    fn replace(&self, state: &mut State, next: State) {
        if state.tools() != next.tools() || state.instructions() != next.instructions() {
            self.list_version.fetch_add(1, Ordering::Relaxed);
            self.warn_unmatched_filters(next.tools());
        }
        *state = next;
    }

    /// The server's `instructions`, from its connection or its manifest.
    pub async fn instructions(&self) -> Option<String> {
        self.state.lock().await.instructions()
    }

    /// The server's configuration, for naming its tools.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// Who answers the server's requests for input.
    pub fn elicitations(&self) -> &super::elicitation::Answerer {
        &self.plan.elicitations
    }

    /// A receiver that sees every change of the server's tool list, as a growing
    /// generation number: each `tools/list_changed` it sends and each new connection.
    pub fn tool_list_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The server's status for listings. A connection that has died since is `failed`.
    pub async fn status(&self) -> ServerStatus {
        let state = self.state.lock().await;
        let now = now();
        let mut status = ServerStatus {
            name: self.config.name.clone(),
            transport: self.config.transport.as_str().to_string(),
            status: ServerState::Failed,
            error: None,
            tool_count: self.kept(state.tools()).count(),
            protocol_version: None,
            startup_ms: None,
            manifest_age_secs: state.manifest().map(|m| m.age(now).as_secs()),
            server_info: None,
            instructions_chars: state.instructions().map(|i| i.chars().count()),
            capabilities: Vec::new(),
            needs_login: false,
        };
        if let Some(manifest) = state.manifest() {
            status.server_info = server_info(&manifest.server_name, &manifest.server_version);
            status.capabilities = manifest.capabilities.clone();
        }
        match &*state {
            State::Disabled => status.status = ServerState::Disabled,
            State::Idle(_) => status.status = ServerState::Idle,
            State::Stopped => status.error = Some(McpError::Stopped.to_string()),
            State::Failed { reason, login, .. } => {
                status.error = Some(reason.clone());
                status.needs_login = *login;
            }
            State::Connected(live) if live.connection.service.is_transport_closed() => {
                status.error = Some(String::from(
                    "the server exited; it is restarted at the next call",
                ));
            }
            State::Connected(live) => {
                status.status = ServerState::Connected;
                if let Some(info) = live.connection.service.peer_info() {
                    if let Some(server) = &info.server_info {
                        status.server_info = server_info(&server.name, &server.version);
                    }
                    status.capabilities = live.connection.capabilities.clone();
                }
                status.protocol_version = Some(live.connection.protocol_version.clone());
                status.startup_ms =
                    Some(u64::try_from(live.connection.startup.as_millis()).unwrap_or(u64::MAX));
            }
        }
        status
    }

    /// Closes the connection: a stdio child gets its stdin closed, then SIGTERM, then
    /// SIGKILL (rmcp's shutdown sequence); then the rest of its process group is ended,
    /// whether the server exited cleanly, by itself or not at all. Later calls find the
    /// server stopped.
    pub async fn shutdown(&self) {
        let mut state = self.state.lock().await;
        let old = std::mem::replace(&mut *state, State::Stopped);
        if !old.tools().is_empty() {
            self.list_version.fetch_add(1, Ordering::Relaxed);
        }
        if let State::Connected(live) = old {
            let Live { connection, .. } = *live;
            close(&self.config.name, connection).await;
        }
    }

    /// Drops the current connection, if any, and connects again now (`/mcp` in the chat).
    /// A disabled server stays disabled.
    pub async fn reconnect(&self) {
        if matches!(*self.state.lock().await, State::Disabled) {
            return;
        }
        self.shutdown().await;
        let mut state = self.state.lock().await;
        tracing::info!(server = %self.config.name, "reconnecting MCP server");
        self.connect_into(&mut state).await;
    }

    /// Whether the server is idle (not started; its tools from a manifest).
    pub async fn is_idle(&self) -> bool {
        matches!(*self.state.lock().await, State::Idle(_))
    }
}

/// Ends a connection: a stdio child gets its stdin closed, then SIGTERM, then SIGKILL
/// (rmcp's shutdown sequence); then the rest of its process group is ended.
async fn close(server: &str, connection: Connection) {
    let Connection {
        service,
        process_group,
        ..
    } = connection;
    if let Err(err) = service.cancel().await {
        tracing::debug!(server, "shutdown: {err}");
    }
    if let Some(group) = process_group {
        group.end().await;
    }
}

/// "name version" as a server reports it, escaped and cut for a one-line listing.
fn server_info(name: &str, version: &str) -> Option<String> {
    let text = format!("{name} {version}");
    let text = text.trim();
    let cut: String = text.chars().take(80).collect();
    (!cut.is_empty()).then(|| crate::base::text::printable(&cut))
}

//! One configured MCP server over its lifetime: idle (its tools from a manifest),
//! connected, failed, restarted, re-listed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::ServiceError;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;
use tokio::sync::{Mutex, watch};
use tokio_util::sync::CancellationToken;

use super::McpError;
use super::call::{self, Ended};
use super::connect::{Connection, connect, list_all_prompts, list_all_tools};
use super::content::{result_images, result_text};
use super::incoming::{Incoming, UNREADABLE_ANSWER};
use super::manifest::{Manifest, ManifestView};
pub(super) use super::progress::ToolProgress;
use super::readable::readable_error;
pub use super::server_state::StartPlan;
pub(super) use features::{Feature, ResourceListing};

mod features;
use super::server_state::{Known, Live, State};
use crate::base::clock::now_secs as now;
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

/// What a re-list did.
enum Relisted {
    /// Nothing to do (no change announced, backing off, not connected).
    Skipped,
    /// Listed; whether the manifest was saved.
    Listed(Result<(), String>),
    /// The listing failed or timed out.
    Failed(String),
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

    /// The manifest that may stand in for starting the server now, if the plan is lazy.
    fn usable_manifest(&self) -> Option<Manifest> {
        if !self.plan.lazy {
            return None;
        }
        let manifest = self.plan.manifests.as_ref()?.load(&self.plan.entry_hash)?;
        if manifest.is_from_the_future(now()) {
            tracing::warn!(server = %self.config.name, "the MCP manifest is dated in the future; starting the server");
            return None;
        }
        let fresh = manifest.is_fresh(now(), self.plan.max_age);
        if !fresh && !self.plan.accept_stale {
            tracing::debug!(server = %self.config.name, "the MCP manifest is too old; starting the server");
            return None;
        }
        Some(manifest)
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

    /// Warns about `enabled_tools` / `disabled_tools` patterns that match none of `tools`.
    fn warn_unmatched_filters(&self, tools: &[rmcp::model::Tool]) {
        if tools.is_empty() {
            return;
        }
        let names: Vec<String> = tools.iter().flat_map(|t| self.names_of(&t.name)).collect();
        for (list, pattern) in self.config.policy.tools.unmatched(&names) {
            tracing::warn!(server = %self.config.name, "`{list}` entry {pattern:?} matches none of the server's {} tools", tools.len());
        }
    }

    /// Saves what `connection` listed as the server's manifest; the manifest saved (only
    /// made when `owned`), or why it was not (no data folder, a write error).
    fn save_manifest(
        &self,
        connection: &Connection,
        owned: bool,
    ) -> Result<Option<Manifest>, String> {
        let Some(store) = &self.plan.manifests else {
            return Err(String::from("there is no data folder to keep manifests in"));
        };
        let info = connection.service.peer_info();
        let view = ManifestView::listed(
            &self.plan.entry_hash,
            &self.config.name,
            connection,
            info.as_deref(),
        );
        store.save(&view).map_err(|err| err.to_string())?;
        Ok(owned.then(|| view.to_manifest()))
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

    /// The tools of `all` that the entry's `enabled_tools` / `disabled_tools` keep.
    fn kept<'a>(
        &'a self,
        all: &'a [rmcp::model::Tool],
    ) -> impl Iterator<Item = &'a rmcp::model::Tool> + 'a {
        all.iter().filter(|tool| {
            let names = self.names_of(&tool.name);
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            self.config.policy.tools.allows(&names)
        })
    }

    /// The names the server's tool `name` goes by: its own, sanitised, and as shown
    /// (before a cut or a disambiguating suffix, which keep its start).
    fn names_of(&self, name: &str) -> [String; 3] {
        [
            name.to_string(),
            crate::tools::naming::sanitize(name),
            crate::tools::naming::base_name(&self.config.name, name, self.config.tool_name_prefix),
        ]
    }

    /// The server's tools that its entry's filter keeps (an idle server's from its
    /// manifest), listed again first if the server announced a change (see
    /// [`McpServer::refresh_tools`]).
    pub async fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.refresh_tools().await;
        let state = self.state.lock().await;
        self.kept(state.tools()).cloned().collect()
    }

    /// Lists the tools again if the server announced a change since the last listing,
    /// and returns the version of the list held, which grows whenever it changes. The
    /// re-list runs outside the lock and within the start-up timeout; if it fails, the
    /// old list is kept and tried again after [`RELIST_BACKOFF`].
    pub async fn refresh_tools(&self) -> u64 {
        if let Relisted::Listed(Err(err)) = self.relist_if_changed().await {
            tracing::warn!(server = %self.config.name, "{err}");
        }
        self.list_version.load(Ordering::Relaxed)
    }

    /// The re-list behind [`McpServer::refresh_tools`], with its outcome.
    async fn relist_if_changed(&self) -> Relisted {
        let (peer, id, generation) = {
            let state = self.state.lock().await;
            let State::Connected(live) = &*state else {
                return Relisted::Skipped;
            };
            let generation = *self.changes.borrow();
            let waiting = live.relist_after.is_some_and(|at| Instant::now() < at);
            if generation == live.connection.listed_generation || waiting {
                return Relisted::Skipped;
            }
            (live.connection.service.peer().clone(), live.id, generation)
        };
        let listed = tokio::time::timeout(self.config.startup_timeout, list_all_tools(&peer)).await;
        let mut state = self.state.lock().await;
        let State::Connected(live) = &mut *state else {
            return Relisted::Skipped;
        };
        if live.id != id {
            return Relisted::Skipped;
        }
        let failed = match listed {
            Ok(Ok(listing)) => {
                tracing::info!(server = %self.config.name, count = listing.tools.len(), "tools re-listed after list_changed");
                if live.connection.tools != listing.tools {
                    self.list_version.fetch_add(1, Ordering::Relaxed);
                }
                live.connection.tools = listing.tools;
                live.connection.ttl_ms = listing.ttl_ms;
                live.connection.listed_generation = generation;
                live.relist_after = None;
                let saved = match self.plan.manifests {
                    Some(_) => self.save_manifest(&live.connection, false).map(drop),
                    None => Ok(()),
                };
                return Relisted::Listed(saved);
            }
            Ok(Err(err)) => format!("re-listing tools failed: {err}"),
            Err(_) => format!(
                "re-listing tools took longer than {:?}",
                self.config.startup_timeout
            ),
        };
        tracing::warn!(server = %self.config.name, "{failed}; keeping the old list for {RELIST_BACKOFF:?}");
        live.relist_after = Some(Instant::now() + RELIST_BACKOFF);
        Relisted::Failed(failed)
    }

    /// Calls `listed`, the tool as the model was shown it (from a listing or a manifest).
    /// Every failure — `isError`, a timeout, a dead or crashed server, a server that
    /// cannot start — is a tool error the model can read. An idle server is started
    /// first, a server whose connection has died restarted. A call whose tool the live
    /// server does not offer exactly as listed (schema, description, annotations: its
    /// manifest was out of date or forged) does not run. A timed-out call is cancelled on
    /// the server (`notifications/cancelled`), and so is one the run cancels (`cancel`).
    pub async fn call(
        &self,
        listed: &rmcp::model::Tool,
        arguments: Value,
        cancel: &CancellationToken,
        report: &(dyn Fn(ToolProgress) + Send + Sync),
        elicit: call::Elicit<'_, '_>,
    ) -> ToolOutput {
        let tool: &str = &listed.name;
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
        let LivePeer {
            peer,
            id,
            incoming,
            progress,
            route,
            challenges,
            issued_token,
        } = match self.live_peer(Some(listed)).await {
            Ok((live, Known::Same)) => live,
            Ok((_, known)) => {
                let what = match known {
                    Known::Gone => "no longer offers",
                    Known::Changed | Known::Same => "now describes another",
                };
                return ToolOutput::error(format!(
                    "Error: MCP server `{}` {what} `{tool}` (its tools changed since they were \
                     last listed); the call did not run. The current tools reach you before \
                     your next step (if they are deferred, call tool_search again).",
                    self.config.name
                ));
            }
            Err(err) => {
                return ToolOutput::error(format!(
                    "Error: MCP server `{}` is not available: {err}",
                    self.config.name
                ));
            }
        };
        let timeout = self.config.tool_timeout;
        let listening = call::Listening {
            calls: &progress,
            report,
            route: &route,
            elicit,
        };
        let ended = call::call_tool(&peer, params, timeout, cancel, listening).await;
        let mut output = self.outcome(tool, ended, id, &incoming, &challenges).await;
        // A grant's token is the connection's own: a server that echoes it (in a result
        // or an error) does not hand it to the model. The redact layer's marker.
        if let Some(token) = issued_token.filter(|t| t.len() >= 6)
            && output.content.contains(token.as_str())
        {
            output.content = output.content.replace(&token, "[redacted]");
        }
        output
    }

    /// What the model is told of a call that ended as `ended`.
    async fn outcome(
        &self,
        tool: &str,
        ended: Ended,
        id: u64,
        incoming: &Incoming,
        challenges: &super::oauth::challenge::Challenges,
    ) -> ToolOutput {
        let timeout = self.config.tool_timeout;
        match ended {
            Ended::Cancelled => ToolOutput::error(format!(
                "Error: the call to `{tool}` was cancelled; MCP server `{}` was told",
                self.config.name
            )),
            Ended::TimedOut => ToolOutput::error(format!(
                "Error: `{tool}` on MCP server `{}` did not answer within {:.1}s; the call \
                 was cancelled",
                self.config.name,
                timeout.as_secs_f64()
            )),
            Ended::Answered(Ok(result)) => {
                let text = result_text(&result);
                if result.is_error == Some(true) {
                    return ToolOutput::error(format!("Error: {text}"));
                }
                let mut output = ToolOutput::ok(text);
                let label = format!("MCP server `{}`, tool `{tool}`", self.config.name);
                let images = result_images(&result, &label);
                if !images.is_empty() {
                    output.state_update = Some(Box::new(crate::tools::StateUpdate {
                        images,
                        ..Default::default()
                    }));
                }
                output
            }
            Ended::Answered(Err(err)) if !matches!(err, ServiceError::McpError(_)) => {
                self.mark_broken(id).await;
                if let Some(refused) = self.refused(challenges) {
                    return ToolOutput::error(format!(
                        "Error: MCP server `{}` refused the call to `{tool}`: {refused}",
                        self.config.name
                    ));
                }
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
                        readable_error(&err)
                    )),
                }
            }
            Ended::Answered(Err(ServiceError::McpError(error)))
                if error.code == UNREADABLE_ANSWER =>
            {
                ToolOutput::error(format!(
                    "Error: MCP server `{}` answered the call to `{tool}`, but {}",
                    self.config.name, error.message
                ))
            }
            Ended::Answered(Err(err)) => ToolOutput::error(format!(
                "Error: MCP server `{}` refused the call to `{tool}`: {}",
                self.config.name,
                readable_error(&err)
            )),
        }
    }

    /// Why the server refused a request, when it was for want of authorization (see
    /// [`super::oauth::challenge::Challenges::refusal`]).
    pub(super) fn refused(
        &self,
        challenges: &super::oauth::challenge::Challenges,
    ) -> Option<McpError> {
        challenges.refusal(&self.config, self.plan.tokens.as_ref())
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

    /// Lists the server's tools now and saves them as its manifest (`antler mcp refresh`,
    /// the chat's background refresh of old manifests). A connected server is listed
    /// again; any other is started on a connection of its own, outside the server's lock
    /// (calls, listings and statuses meanwhile see the old manifest), which is closed
    /// again after, leaving the server idle on the new manifest. Returns why it could not
    /// be listed or saved.
    pub async fn refresh_manifest(&self) -> Result<(), String> {
        let state = self.state.lock().await;
        match &*state {
            State::Disabled => return Err(McpError::Disabled.to_string()),
            State::Stopped => return Err(McpError::Stopped.to_string()),
            State::Connected(live) if live.usable() => {
                drop(state);
                return self.relist_now().await;
            }
            State::Idle(_) | State::Failed { .. } | State::Connected(_) => {}
        }
        drop(state);
        let connection = connect(
            &self.config,
            self.changes.clone(),
            self.plan.tokens.as_ref(),
        )
        .await
        .map_err(|err| err.to_string())?;
        let saved = self.save_manifest(&connection, true);
        close(&self.config.name, connection).await;
        let Some(manifest) = saved? else {
            return Ok(());
        };
        let mut state = self.state.lock().await;
        // A call that started the server meanwhile has its own, newer listing.
        if matches!(*state, State::Idle(_) | State::Failed { .. }) {
            self.replace(&mut state, State::Idle(Arc::new(manifest)));
        }
        Ok(())
    }

    /// Lists a connected server's tools again now and saves them.
    async fn relist_now(&self) -> Result<(), String> {
        self.changes.send_modify(|generation| *generation += 1);
        match self.relist_if_changed().await {
            Relisted::Listed(saved) => saved,
            Relisted::Failed(reason) => Err(reason),
            Relisted::Skipped => Err(String::from(
                "its tools were not listed again: a re-list failed less than 30 s ago, or it \
                 disconnected (see the log)",
            )),
        }
    }

    async fn mark_broken(&self, id: u64) {
        if let State::Connected(live) = &mut *self.state.lock().await
            && live.id == id
        {
            live.broken = true;
        }
    }

    /// The peer (and connection id) of a live connection, starting an idle server and
    /// reconnecting one whose connection has died (at most once per [`RESTART_BACKOFF`]
    /// after a failed start), with whether the live server still offers `tool` exactly
    /// (no tool: [`Known::Same`]).
    async fn live_peer(
        &self,
        tool: Option<&rmcp::model::Tool>,
    ) -> Result<(LivePeer, Known), McpError> {
        let mut state = self.state.lock().await;
        let live_of = |live: &Live| {
            let known = match tool {
                None => Known::Same,
                Some(tool) => {
                    let mut same_name =
                        live.connection.tools.iter().filter(|t| t.name == tool.name);
                    match same_name.clone().next() {
                        None => Known::Gone,
                        Some(_) if same_name.any(|t| t == tool) => Known::Same,
                        Some(_) => Known::Changed,
                    }
                }
            };
            let peer = LivePeer {
                peer: live.connection.service.peer().clone(),
                id: live.id,
                incoming: live.connection.incoming.clone(),
                progress: live.connection.service.service().progress.clone(),
                route: live.connection.service.service().elicit.clone(),
                challenges: live.connection.challenges.clone(),
                issued_token: live.connection.issued_token.clone(),
            };
            (peer, known)
        };
        match &*state {
            State::Connected(live) if live.usable() => return Ok(live_of(live)),
            State::Disabled => return Err(McpError::Disabled),
            State::Stopped => return Err(McpError::Stopped),
            State::Failed { reason, at, .. } if at.elapsed() < RESTART_BACKOFF => {
                return Err(McpError::Unavailable(reason.clone()));
            }
            State::Idle(_) => {
                let wanted = tool.map_or("a request", |t| t.name.as_ref());
                tracing::info!(server = %self.config.name, wanted, "starting idle MCP server for its first call");
            }
            State::Connected(_) | State::Failed { .. } => {
                tracing::info!(server = %self.config.name, "restarting MCP server");
            }
        }
        self.connect_into(&mut state).await;
        match &*state {
            State::Connected(live) => Ok(live_of(live)),
            State::Failed { reason, .. } => Err(McpError::Unavailable(reason.clone())),
            State::Disabled | State::Idle(_) | State::Stopped => Err(McpError::Stopped),
        }
    }

    /// Whether the server is idle on a manifest older than its maximum age (the chat
    /// accepts one at start and refreshes it in the background).
    pub async fn has_stale_manifest(&self) -> bool {
        match &*self.state.lock().await {
            State::Idle(manifest) => !manifest.is_fresh(now(), self.plan.max_age),
            _ => false,
        }
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
/// What a call needs of the live connection.
struct LivePeer {
    peer: rmcp::Peer<rmcp::RoleClient>,
    /// The connection's number, to mark it broken.
    id: u64,
    incoming: Incoming,
    progress: super::progress::ProgressRoutes,
    /// Where the server's requests for input go.
    route: super::elicitation::Route,
    /// Why the server last refused for want of authorization.
    challenges: super::oauth::challenge::Challenges,
    /// The access token a grant issued for the connection.
    issued_token: Option<String>,
}

/// "name version" as a server reports it, escaped and cut for a one-line listing.
fn server_info(name: &str, version: &str) -> Option<String> {
    let text = format!("{name} {version}");
    let text = text.trim();
    let cut: String = text.chars().take(80).collect();
    (!cut.is_empty()).then(|| crate::base::text::printable(&cut))
}

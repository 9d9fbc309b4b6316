//! A tool call on a server: the live peer (starting an idle server, reconnecting a dead
//! one), the tool's schema checked against the live list, the request, and its outcome as
//! the model's tool output.

use rmcp::ServiceError;
use rmcp::model::CallToolRequestParams;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{McpServer, RESTART_BACKOFF};
use crate::mcp::McpError;
use crate::mcp::call::{self, Ended};
use crate::mcp::content::{result_images, result_text};
use crate::mcp::incoming::{Incoming, UNREADABLE_ANSWER};
use crate::mcp::progress::ToolProgress;
use crate::mcp::readable::readable_error;
use crate::mcp::server_state::{Known, Live, State};
use crate::tools::ToolOutput;

/// What a call needs of the live connection.
pub(super) struct LivePeer {
    pub(super) peer: rmcp::Peer<rmcp::RoleClient>,
    /// The connection's number, to mark it broken.
    pub(super) id: u64,
    pub(super) incoming: Incoming,
    pub(super) progress: crate::mcp::progress::ProgressRoutes,
    /// Where the server's requests for input go.
    pub(super) route: crate::mcp::elicitation::Route,
    /// Why the server last refused for want of authorization.
    pub(super) challenges: crate::mcp::oauth::challenge::Challenges,
    /// The access token a grant issued for the connection.
    pub(super) issued_token: Option<String>,
}

impl McpServer {
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
        challenges: &crate::mcp::oauth::challenge::Challenges,
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
    /// [`crate::mcp::oauth::challenge::Challenges::refusal`]).
    pub(super) fn refused(
        &self,
        challenges: &crate::mcp::oauth::challenge::Challenges,
    ) -> Option<McpError> {
        challenges.refusal(&self.config, self.plan.tokens.as_ref())
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
    pub(super) async fn live_peer(
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
}

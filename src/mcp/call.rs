//! One `tools/call`, ended by its answer, its timeout or the run's cancellation. Ending it
//! early tells the server (`notifications/cancelled`), and waits until that is sent, so a
//! run that stops right after (Ctrl-C) does not shut the server down with it unsent. The
//! server's progress notifications for the call are reported as they come.

use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest,
    ProgressNotificationParam, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use tokio_util::sync::CancellationToken;

/// One progress notification of a call, as reported.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far it got.
    pub progress: f64,
    /// Out of how much, when the server knows.
    pub total: Option<f64>,
    /// What it is doing (escaped, one line, cut short).
    pub message: Option<String>,
}

/// Where a call's progress goes: the connection's listeners and the report.
pub(super) struct Listening<'a> {
    pub(super) calls: &'a super::connect::Progress,
    pub(super) report: &'a (dyn Fn(Progress) + Send + Sync),
}

/// The longest a progress message is shown, in characters.
const MESSAGE_CHARS: usize = 120;

/// The longest telling the server of a cancellation may take.
const CANCEL_SEND: Duration = Duration::from_secs(1);

/// How a call ended.
pub(super) enum Ended {
    /// The server answered (or the request failed).
    Answered(Result<CallToolResult, ServiceError>),
    /// The tool's timeout passed first.
    TimedOut,
    /// The run was cancelled first.
    Cancelled,
}

fn lock(
    calls: &super::connect::Progress,
) -> std::sync::MutexGuard<'_, super::connect::ProgressCalls> {
    calls.lock().unwrap_or_else(|e| e.into_inner())
}

/// A notification as the user may be shown it: finite numbers, a short escaped message.
fn shown(update: ProgressNotificationParam) -> Progress {
    let finite = |n: f64| n.is_finite().then_some(n);
    Progress {
        progress: finite(update.progress).unwrap_or(0.0),
        total: update.total.and_then(finite),
        message: update.message.map(|m| {
            let line = m.split_whitespace().collect::<Vec<_>>().join(" ");
            let cut: String = line.chars().take(MESSAGE_CHARS).collect();
            crate::text::printable(&cut)
        }),
    }
}

/// Sends the call and waits for whichever comes first.
pub(super) async fn call_tool(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    timeout: Duration,
    cancel: &CancellationToken,
    listening: Listening<'_>,
) -> Ended {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let mut handle = match peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(err) => return Ended::Answered(Err(err)),
    };
    let token = handle.progress_token.clone();
    let (sender, mut updates) = tokio::sync::mpsc::unbounded_channel();
    lock(listening.calls).insert(token.clone(), sender);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let ended = loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => break Ended::Cancelled,
            answer = &mut handle.rx => break Ended::Answered(match answer {
                Err(_) => Err(ServiceError::TransportClosed),
                Ok(answer) => answer.and_then(|result| match result {
                    ServerResult::CallToolResult(result) => Ok(result),
                    // `{}`: a call that returned nothing.
                    ServerResult::EmptyResult(_) => Ok(CallToolResult::success(Vec::new())),
                    _ => Err(ServiceError::UnexpectedResponse),
                }),
            }),
            () = &mut deadline => break Ended::TimedOut,
            Some(mut update) = updates.recv() => {
                // A burst is one report: the latest.
                while let Ok(next) = updates.try_recv() {
                    update = next;
                }
                (listening.report)(shown(update));
            }
        }
    };
    lock(listening.calls).remove(&token);
    let reason = match ended {
        Ended::Answered(_) => return ended,
        Ended::TimedOut => "the call timed out",
        Ended::Cancelled => "the user cancelled the run",
    };
    // Bounded: a server that stopped reading must not hold the run.
    match tokio::time::timeout(CANCEL_SEND, handle.cancel(Some(reason.to_string()))).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => tracing::debug!("notifications/cancelled not sent: {err}"),
        Err(_) => tracing::debug!("notifications/cancelled not sent within {CANCEL_SEND:?}"),
    }
    ended
}

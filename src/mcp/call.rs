//! One request to a server (a `tools/call`, a resource read, a prompt), ended by its answer,
//! its timeout or the run's cancellation. Ending it early tells the server
//! (`notifications/cancelled`), and waits (briefly) until that is sent, so a run that stops
//! right after (Ctrl-C) does not shut the server down with it unsent. The server's
//! progress for the request is reported as it changes.

use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ElicitRequestParams,
    ElicitResult, ProgressNotificationParam, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// A call's progress, as the user may be shown it.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// How far it got (finite).
    pub progress: f64,
    /// Out of how much, when the server knows (finite).
    pub total: Option<f64>,
    /// What it is doing (escaped, one line, cut short).
    pub message: Option<String>,
}

/// Answers a server's request for input made during a call.
pub(super) type Elicit<'a, 'f> =
    &'a (dyn Fn(ElicitRequestParams) -> BoxFuture<'f, ElicitResult> + Send + Sync);

/// Where a call's progress and the server's requests for input go: the connection's
/// listeners, the report, and who answers.
pub(super) struct Listening<'a, 'f> {
    pub(super) calls: &'a super::connect::Progress,
    pub(super) report: &'a (dyn Fn(Progress) + Send + Sync),
    pub(super) route: &'a super::elicitation::Route,
    pub(super) elicit: Elicit<'a, 'f>,
}

/// An answer for any request for input: declined (requests that are not a tool's).
pub(super) fn decline_all(_: ElicitRequestParams) -> BoxFuture<'static, ElicitResult> {
    Box::pin(std::future::ready(ElicitResult::new(
        rmcp::model::ElicitationAction::Decline,
    )))
}

/// The longest a progress message is shown, in characters.
const MESSAGE_CHARS: usize = 120;

/// The longest telling the server of a cancellation may take.
const CANCEL_SEND: Duration = Duration::from_secs(1);

/// How a request ended.
pub(super) enum Ended<T = CallToolResult> {
    /// The server answered (or the request failed).
    Answered(Result<T, ServiceError>),
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

/// Takes a server's notification into the slot of the call it names, if one waits for it.
/// Only the latest value is kept (a flood costs one slot), and a value that goes back is
/// dropped (notifications may be handled out of order).
pub(super) fn offer(calls: &super::connect::Progress, update: ProgressNotificationParam) {
    let calls = lock(calls);
    let Some(slot) = calls.get(&update.progress_token) else {
        tracing::debug!(token = ?update.progress_token, "progress for no call in flight is dropped");
        return;
    };
    let out_of_range =
        !update.progress.is_finite() || update.total.is_some_and(|total| !total.is_finite());
    if out_of_range {
        tracing::debug!(
            progress = update.progress,
            total = ?update.total,
            "progress with a number that is not finite: shown as 0 / without a total"
        );
    }
    let next = shown(update);
    slot.send_if_modified(|current| {
        if let Some(shown) = current.as_ref().filter(|c| c.progress > next.progress) {
            tracing::debug!(
                progress = next.progress,
                before = shown.progress,
                "progress that goes back is dropped"
            );
            return false;
        }
        *current = Some(next);
        true
    });
}

/// A notification as the user may be shown it: finite numbers, a short escaped message.
fn shown(update: ProgressNotificationParam) -> Progress {
    let finite = |n: f64| n.is_finite().then_some(n);
    Progress {
        progress: finite(update.progress).unwrap_or(0.0),
        total: update.total.and_then(finite),
        message: update
            .message
            .map(|message| crate::text::short_line(&message, MESSAGE_CHARS).0),
    }
}

/// A request's progress slot, given up when dropped (also when the request's future is).
struct Listener<'a> {
    calls: &'a super::connect::Progress,
    token: rmcp::model::ProgressToken,
}

impl Drop for Listener<'_> {
    fn drop(&mut self) {
        lock(self.calls).remove(&self.token);
    }
}

/// A tool result from the server's answer. An empty answer (`{}`, a bare task
/// acknowledgement, or only `_meta`) is an empty result, as rmcp's own `call_tool` has it.
fn tool_result(answer: ServerResult) -> Result<CallToolResult, ServiceError> {
    match answer {
        ServerResult::CallToolResult(result) => Ok(result),
        ServerResult::EmptyResult(_) | ServerResult::TaskAckResult(_) => {
            Ok(CallToolResult::success(Vec::new()))
        }
        ServerResult::CustomResult(custom)
            if custom
                .0
                .as_object()
                .is_some_and(|o| o.keys().all(|k| k == "_meta")) =>
        {
            Ok(CallToolResult::success(Vec::new()))
        }
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

/// Sends the call and waits for whichever comes first.
pub(super) async fn call_tool(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    timeout: Duration,
    cancel: &CancellationToken,
    listening: Listening<'_, '_>,
) -> Ended {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    send(peer, request, timeout, cancel, listening, tool_result).await
}

/// Sends `request` and waits for whichever comes first; `answer` takes the result the
/// request expects out of the server's answer.
pub(super) async fn send<T>(
    peer: &Peer<RoleClient>,
    request: ClientRequest,
    timeout: Duration,
    cancel: &CancellationToken,
    listening: Listening<'_, '_>,
    answer: fn(ServerResult) -> Result<T, ServiceError>,
) -> Ended<T> {
    // Cancelled before it was sent: it is never sent.
    if cancel.is_cancelled() {
        return Ended::Cancelled;
    }
    // Before the request goes out: a server may ask for input as soon as it reads it.
    let mut joined = listening.route.join();
    let mut handle = match peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(err) => return Ended::Answered(Err(err)),
    };
    let token = handle.progress_token.clone();
    let (slot, mut updates) = watch::channel(None);
    lock(listening.calls).insert(token.clone(), slot);
    let listener = Listener {
        calls: listening.calls,
        token: token.clone(),
    };
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let ended = loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => break Ended::Cancelled,
            reply = &mut handle.rx => break Ended::Answered(match reply {
                Err(_) => Err(ServiceError::TransportClosed),
                Ok(reply) => reply.and_then(answer),
            }),
            () = &mut deadline => break Ended::TimedOut,
            Some(mut pending) = joined.requests.recv() => {
                // The server waits for the user: that time is not the server's. A server
                // that withdraws its request (the handler's reply is dropped) stops the wait.
                let answer = tokio::select! {
                    answer = (listening.elicit)(pending.params.clone()) => Some(answer),
                    () = cancel.cancelled() => Some(ElicitResult::new(rmcp::model::ElicitationAction::Cancel)),
                    () = pending.reply.closed() => None,
                };
                if let Some(answer) = answer {
                    let _ = pending.reply.send(answer);
                }
                deadline.as_mut().reset(tokio::time::Instant::now() + timeout);
            }
            Ok(()) = updates.changed() => {
                let latest = updates.borrow_and_update().clone();
                if let Some(latest) = latest {
                    (listening.report)(latest);
                }
            }
        }
    };
    drop((listener, joined));
    let reason = match ended {
        Ended::Answered(_) => return ended,
        Ended::TimedOut => "the request timed out",
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use rmcp::model::{NumberOrString, ProgressToken};
    use serde_json::json;

    use super::*;

    fn update(token: i64, progress: f64, message: &str) -> ProgressNotificationParam {
        ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), progress)
            .with_message(message)
    }

    #[test]
    fn a_calls_slot_keeps_the_latest_progress_that_moves_forward() {
        let calls: super::super::connect::Progress = Arc::new(Mutex::new(Default::default()));
        let (slot, seen) = watch::channel(None);
        lock(&calls).insert(ProgressToken(NumberOrString::Number(1)), slot);
        offer(&calls, update(1, 2.0, "two"));
        offer(&calls, update(1, 1.0, "one, late"));
        offer(&calls, update(9, 5.0, "not a call of ours"));
        let latest = seen.borrow().clone().unwrap();
        assert_eq!(
            (latest.progress, latest.message.as_deref()),
            (2.0, Some("two"))
        );
        let flood = format!("{}\u{1b}[2J", "a ".repeat(1_000_000));
        offer(&calls, update(1, f64::INFINITY, &flood));
        let latest = seen.borrow().clone().unwrap();
        assert_eq!(
            latest.progress, 2.0,
            "not finite: kept back as 0, which goes back"
        );
        offer(&calls, update(1, 3.0, &flood));
        let message = seen.borrow().clone().unwrap().message.unwrap();
        assert!(message.chars().count() <= MESSAGE_CHARS && !message.contains('\u{1b}'));
    }

    #[test]
    fn empty_answers_are_empty_results_and_others_are_unexpected() {
        for answer in [
            json!({}),
            json!({"_meta": {"x": 1}}),
            json!({"content": [], "isError": false}),
        ] {
            let parsed: ServerResult = serde_json::from_value(answer.clone()).unwrap();
            assert!(tool_result(parsed).is_ok(), "{answer}");
        }
        let tools: ServerResult = serde_json::from_value(json!({"tools": []})).unwrap();
        assert!(tool_result(tools).is_err());
    }
}

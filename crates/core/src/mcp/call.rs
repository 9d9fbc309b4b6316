//! One request to a server (a `tools/call`, a resource read, a prompt), ended by its answer,
//! its timeout or the run's cancellation. Ending it early tells the server
//! (`notifications/cancelled`), and waits (briefly) until that is sent, so a run that stops
//! right after (Ctrl-C) does not shut the server down with it unsent. The server's
//! progress for the request is reported as it changes ([`super::progress`]).

use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ElicitRequestParams,
    ElicitResult, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use tokio_util::sync::CancellationToken;

use super::progress::{ProgressRoutes, ToolProgress};

/// Answers a server's request for input made during a call.
pub(super) type Elicit<'a, 'f> =
    &'a (dyn Fn(ElicitRequestParams) -> BoxFuture<'f, ElicitResult> + Send + Sync);

/// Where a call's progress and the server's requests for input go: the connection's
/// listeners, the report, and who answers.
pub(super) struct Listening<'a, 'f> {
    pub(super) calls: &'a ProgressRoutes,
    pub(super) report: &'a (dyn Fn(ToolProgress) + Send + Sync),
    pub(super) route: &'a super::elicitation::Route,
    pub(super) elicit: Elicit<'a, 'f>,
}

/// An answer for any request for input: declined (requests that are not a tool's).
pub(super) fn decline_all(_: ElicitRequestParams) -> BoxFuture<'static, ElicitResult> {
    Box::pin(std::future::ready(ElicitResult::new(
        rmcp::model::ElicitationAction::Decline,
    )))
}

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
    let (listener, mut updates) = listening.calls.listen(token.clone());
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
    use serde_json::json;

    use super::*;

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

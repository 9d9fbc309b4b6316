//! One `tools/call`, ended by its answer, its timeout or the run's cancellation. Ending it
//! early tells the server (`notifications/cancelled`), and waits until that is sent, so a
//! run that stops right after (Ctrl-C) does not shut the server down with it unsent.

use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleClient, ServiceError};
use tokio_util::sync::CancellationToken;

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

/// Sends the call and waits for whichever comes first.
pub(super) async fn call_tool(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Ended {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let mut handle = match peer
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(err) => return Ended::Answered(Err(err)),
    };
    let ended = tokio::select! {
        biased;
        () = cancel.cancelled() => Ended::Cancelled,
        answer = tokio::time::timeout(timeout, &mut handle.rx) => match answer {
            Err(_) => Ended::TimedOut,
            Ok(Err(_)) => Ended::Answered(Err(ServiceError::TransportClosed)),
            Ok(Ok(answer)) => Ended::Answered(answer.and_then(|result| match result {
                ServerResult::CallToolResult(result) => Ok(result),
                // `{}`: a call that returned nothing.
                ServerResult::EmptyResult(_) => Ok(CallToolResult::success(Vec::new())),
                _ => Err(ServiceError::UnexpectedResponse),
            })),
        },
    };
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

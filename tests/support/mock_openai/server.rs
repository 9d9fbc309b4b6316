//! The axum side: routes, recording, and the SSE bodies.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use super::reply::{MODEL, Reply};
use super::{Recorded, Shared};

/// The routes: chat completions (with and without the `/v1` prefix) and the model list.
pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .route("/models", get(models))
        // Requests carrying thousands of tools are bigger than axum's 2 MB default.
        .layer(DefaultBodyLimit::disable())
        .with_state(shared)
}

async fn models() -> Response {
    axum::Json(json!({
        "object": "list",
        "data": [{"id": MODEL, "object": "model", "created": 1_700_000_000, "owned_by": "mock"}],
    }))
    .into_response()
}

/// Records the request, then answers it with the next scripted reply.
async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let raw = String::from_utf8_lossy(&body).into_owned();
    let body = serde_json::from_slice(&body).unwrap_or_else(|_| Value::String(raw.clone()));
    let headers = headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_owned(), value)
        })
        .collect();
    let recorded = Recorded {
        body,
        raw,
        headers,
        at: Instant::now(),
    };
    let (number, reply) = shared.record(recorded);
    match reply {
        Some(reply) => respond(reply),
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("mock: no scripted reply left for request {number}"),
        )
            .into_response(),
    }
}

fn respond(reply: Reply) -> Response {
    match reply {
        Reply::Stream(events) => sse(events, End::Done),
        Reply::Cut(events) => sse(events, End::Cut),
        Reply::Stall(events) => sse(events, End::Stall),
        Reply::Status {
            status,
            body,
            retry_after,
        } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let content_type = if serde_json::from_str::<Value>(&body).is_ok() {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            let mut response =
                (status, [(header::CONTENT_TYPE, content_type)], body).into_response();
            if let Some(value) = retry_after.and_then(|v| HeaderValue::from_str(&v).ok()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            response
        }
        Reply::Json(value) => axum::Json(value).into_response(),
        Reply::Paced(pieces) => paced(pieces),
        Reply::KeepAlive { events, every } => sse(events, End::KeepAlive(every)),
    }
}

/// A raw SSE body, each piece flushed on its own after its pause.
fn paced(pieces: Vec<(std::time::Duration, String)>) -> Response {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
    tokio::spawn(async move {
        for (pause, text) in pieces {
            tokio::time::sleep(pause).await;
            if tx.send(Ok(Bytes::from(text))).await.is_err() {
                return;
            }
        }
    });
    let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

/// How an SSE stream ends after its events.
#[derive(Clone, Copy)]
enum End {
    /// `data: [DONE]`, then a clean end of the body.
    Done,
    /// A body error: hyper closes the connection without the final chunk.
    Cut,
    /// Silence until the client hangs up or the server's runtime is dropped.
    Stall,
    /// A keep-alive comment after each pause, until the client hangs up.
    KeepAlive(std::time::Duration),
}

/// An SSE response fed through a one-slot channel by its own task, so that every event is
/// flushed on its own (the connection task drains the channel and flushes before the feeder
/// can send the next one) and `Cut` / `Stall` happen after the events really went out.
fn sse(events: Vec<String>, end: End) -> Response {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(1);
    tokio::spawn(async move {
        for event in events {
            let frame = Bytes::from(format!("data: {event}\n\n"));
            if tx.send(Ok(frame)).await.is_err() {
                return;
            }
        }
        match end {
            End::Done => {
                let _ = tx.send(Ok(Bytes::from_static(b"data: [DONE]\n\n"))).await;
            }
            End::Cut => {
                let cut = std::io::Error::other("mock: connection cut by the script");
                let _ = tx.send(Err(cut)).await;
            }
            End::Stall => tx.closed().await,
            End::KeepAlive(every) => loop {
                tokio::time::sleep(every).await;
                if tx
                    .send(Ok(Bytes::from_static(b": keep-alive\n\n")))
                    .await
                    .is_err()
                {
                    return;
                }
            },
        }
    });
    let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

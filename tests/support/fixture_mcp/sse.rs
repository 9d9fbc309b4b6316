//! The legacy MCP HTTP+SSE transport (protocol 2024-11-05), which rmcp 3.x
//! no longer ships but which real servers still speak.
//!
//! `GET /sse` opens a session: its first event is `endpoint` with the URL to
//! POST to, then every server→client message is an event `message`.
//! `POST /message?sessionId=ID` feeds one client→server message into that
//! session's rmcp server and answers `202 Accepted`; the reply comes on the
//! stream.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::{get, post};
use futures::channel::mpsc;
use futures::{SinkExt as _, Stream, StreamExt as _};
use rmcp::ServiceExt as _;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::server::Fixture;

/// Open sessions: where to send the client's messages for each session id.
type Sessions = Arc<Mutex<HashMap<String, mpsc::Sender<ClientJsonRpcMessage>>>>;

#[derive(Clone)]
struct SseState {
    fixture: Fixture,
    sessions: Sessions,
    next_id: Arc<AtomicU64>,
}

/// The routes `/sse` and `/message`.
pub(crate) fn router(fixture: Fixture) -> Router {
    let state = SseState {
        fixture,
        sessions: Sessions::default(),
        next_id: Arc::new(AtomicU64::new(1)),
    };
    Router::new()
        .route("/sse", get(open_stream))
        .route("/message", post(post_message))
        .with_state(state)
}

/// Closes a session when its event stream is dropped (client disconnected).
struct SessionGuard {
    id: String,
    sessions: Sessions,
    ct: CancellationToken,
}

impl Drop for SessionGuard {
    fn drop(&mut self) {
        lock(&self.sessions).remove(&self.id);
        self.ct.cancel();
    }
}

async fn open_stream(
    State(state): State<SseState>,
) -> Sse<impl Stream<Item = Result<Event, axum::Error>>> {
    // Unique within the process, which is all a fixture needs.
    let id = format!(
        "{}-{}",
        std::process::id(),
        state.next_id.fetch_add(1, Ordering::Relaxed)
    );
    let (client_tx, client_rx) = mpsc::channel::<ClientJsonRpcMessage>(16);
    let (server_tx, server_rx) = mpsc::channel::<ServerJsonRpcMessage>(16);
    lock(&state.sessions).insert(id.clone(), client_tx);

    let ct = CancellationToken::new();
    tokio::spawn(run_session(
        state.fixture.clone(),
        server_tx,
        client_rx,
        ct.clone(),
    ));

    let endpoint = Event::default()
        .event("endpoint")
        .data(format!("/message?sessionId={id}"));
    let guard = SessionGuard {
        id,
        sessions: state.sessions.clone(),
        ct,
    };
    let messages = server_rx.map(move |message| {
        // The stream owns the guard, so dropping the stream ends the session.
        let _session = &guard;
        Event::default().event("message").json_data(message)
    });
    let events = futures::stream::once(async { Ok(endpoint) }).chain(messages);
    Sse::new(events).keep_alive(KeepAlive::default())
}

/// Runs one session's rmcp server over the two channels until the client
/// disconnects (cancellation) or the server stops.
async fn run_session(
    fixture: Fixture,
    server_tx: mpsc::Sender<ServerJsonRpcMessage>,
    client_rx: mpsc::Receiver<ClientJsonRpcMessage>,
    ct: CancellationToken,
) {
    match fixture.serve_with_ct((server_tx, client_rx), ct).await {
        Ok(running) => {
            if let Err(error) = running.waiting().await {
                eprintln!("fixture_mcp: sse session failed: {error}");
            }
        }
        Err(error) => eprintln!("fixture_mcp: sse session ended before start-up: {error}"),
    }
}

#[derive(Deserialize)]
struct SessionQuery {
    #[serde(rename = "sessionId")]
    session_id: String,
}

async fn post_message(
    State(state): State<SseState>,
    Query(query): Query<SessionQuery>,
    body: Bytes,
) -> StatusCode {
    let sender = lock(&state.sessions).get(&query.session_id).cloned();
    let Some(mut sender) = sender else {
        return StatusCode::NOT_FOUND;
    };
    let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(&body) else {
        return StatusCode::BAD_REQUEST;
    };
    match sender.send(message).await {
        Ok(()) => StatusCode::ACCEPTED,
        // The session's server stopped between the lookup and the send.
        Err(_) => StatusCode::NOT_FOUND,
    }
}

/// A poisoned lock only means a handler panicked; the map is still usable.
fn lock(
    sessions: &Sessions,
) -> std::sync::MutexGuard<'_, HashMap<String, mpsc::Sender<ClientJsonRpcMessage>>> {
    sessions.lock().unwrap_or_else(PoisonError::into_inner)
}

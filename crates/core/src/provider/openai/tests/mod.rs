//! Loopback tests of the provider against a scripted chat-completions server.

mod retry;
mod stream;

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Response};
use axum::routing::post;
use futures::StreamExt;
use serde_json::Value;

use super::{OpenAiProvider, OpenAiSettings};
use crate::protocol::Message;
use crate::provider::{ModelEvent, ModelReply, ModelRequest, Provider, ProviderError};

/// A piece of a scripted response body.
#[derive(Clone)]
pub(super) enum Part {
    /// Bytes sent as they are.
    Raw(String),
    /// The connection is broken here, once the test says so (after the client has seen
    /// what came before, which a broken connection could otherwise swallow).
    AbortWhen(Arc<tokio::sync::Notify>),
    /// Nothing more is ever sent.
    Hang,
    /// These bytes, after a pause (an idle server's keep-alive comments).
    After(Duration, String),
    /// Nothing more is sent; the signal fires when the client has closed the connection
    /// (the body is dropped).
    HangUntilClosed(Arc<tokio::sync::Notify>),
}

/// Notifies when dropped.
struct OnDrop(Arc<tokio::sync::Notify>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.notify_one();
    }
}

/// One scripted response.
#[derive(Clone)]
pub(super) struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    parts: Vec<Part>,
    /// Never send the headers at all.
    stall: bool,
}

impl Reply {
    /// A 200 SSE response made of `parts`.
    pub(super) fn stream(parts: Vec<Part>) -> Self {
        Self {
            status: 200,
            headers: vec![],
            parts,
            stall: false,
        }
    }

    /// A 200 SSE response with one `data:` event per chunk, then `[DONE]`.
    pub(super) fn chunks(chunks: &[&str]) -> Self {
        Self::stream(vec![Part::Raw(sse(chunks, true))])
    }

    /// An error status with a body.
    pub(super) fn status(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![],
            parts: vec![Part::Raw(body.to_string())],
            stall: false,
        }
    }

    /// A response whose headers never come.
    pub(super) fn stall() -> Self {
        Self {
            stall: true,
            ..Self::stream(vec![])
        }
    }

    /// Adds a header.
    pub(super) fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_string()));
        self
    }
}

/// `data:` events for `chunks`, optionally closed by `[DONE]`.
pub(super) fn sse(chunks: &[&str], done: bool) -> String {
    let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    if done {
        text.push_str("data: [DONE]\n\n");
    }
    text
}

/// What the server received.
pub(super) struct Received {
    pub(super) headers: HeaderMap,
    pub(super) body: Value,
}

#[derive(Default)]
struct Script {
    replies: Mutex<Vec<Reply>>,
    received: Mutex<Vec<Received>>,
}

/// A loopback server playing `replies` in order, one per request.
pub(super) struct Server {
    pub(super) base_url: String,
    script: Arc<Script>,
}

impl Server {
    pub(super) async fn start(replies: Vec<Reply>) -> Self {
        let script = Arc::new(Script {
            replies: Mutex::new(replies.into_iter().rev().collect()),
            received: Mutex::default(),
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(respond))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            base_url: format!("http://{address}/v1"),
            script,
        }
    }

    /// The requests received so far.
    pub(super) fn received(&self) -> std::sync::MutexGuard<'_, Vec<Received>> {
        self.script.received.lock().unwrap()
    }
}

async fn respond(
    State(script): State<Arc<Script>>,
    headers: HeaderMap,
    body: String,
) -> Response<Body> {
    let body = serde_json::from_str(&body).unwrap_or(Value::String(body));
    script
        .received
        .lock()
        .unwrap()
        .push(Received { headers, body });
    let reply = script.replies.lock().unwrap().pop();
    let Some(reply) = reply else {
        return Response::builder()
            .status(500)
            .body(Body::from("no scripted reply"))
            .unwrap();
    };
    if reply.stall {
        futures::future::pending::<()>().await;
    }
    let parts = futures::stream::iter(reply.parts).then(|part| async move {
        match part {
            Part::Raw(text) => Ok(text),
            Part::AbortWhen(signal) => {
                signal.notified().await;
                Err(io::Error::other("aborted by the test"))
            }
            Part::Hang => futures::future::pending().await,
            Part::After(pause, text) => {
                tokio::time::sleep(pause).await;
                Ok(text)
            }
            Part::HangUntilClosed(signal) => {
                let _guard = OnDrop(signal);
                futures::future::pending().await
            }
        }
    });
    let mut response = Response::builder()
        .status(reply.status)
        .header("content-type", "text/event-stream");
    for (name, value) in reply.headers {
        response = response.header(name, value);
    }
    response.body(Body::from_stream(parts)).unwrap()
}

/// Settings for tests: tiny backoff and timeouts well under a second.
pub(super) fn settings(server: &Server) -> OpenAiSettings {
    let mut settings = OpenAiSettings::new(server.base_url.clone(), "test-model");
    settings.backoff_base = Duration::from_millis(1);
    settings.backoff_cap = Duration::from_millis(2);
    settings.request_timeout = Duration::from_secs(5);
    settings.stream_idle_timeout = Duration::from_secs(5);
    settings.max_retries = 2;
    settings
}

/// A one-message request.
pub(super) fn hello() -> ModelRequest {
    ModelRequest {
        system: String::from("be brief"),
        messages: vec![Message::User {
            content: String::from("hi"),
        }],
        tools: vec![],
        max_tokens: None,
        callable: Default::default(),
    }
}

/// Runs one call, collecting its events.
pub(super) async fn call(
    settings: OpenAiSettings,
    request: &ModelRequest,
) -> (Result<ModelReply, ProviderError>, Vec<ModelEvent>) {
    let provider = OpenAiProvider::new(settings).unwrap();
    call_with(&provider, request).await
}

/// Runs one call on `provider`, collecting its events.
pub(super) async fn call_with(
    provider: &OpenAiProvider,
    request: &ModelRequest,
) -> (Result<ModelReply, ProviderError>, Vec<ModelEvent>) {
    let events = Mutex::new(Vec::new());
    let reply = provider
        .complete(request, &|event| events.lock().unwrap().push(event))
        .await;
    (reply, events.into_inner().unwrap())
}

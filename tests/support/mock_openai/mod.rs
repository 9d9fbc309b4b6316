//! A scripted mock of an OpenAI-compatible chat-completions server, for integration tests
//! and benchmarks. It listens on `127.0.0.1:<free port>` on its own thread with its own
//! tokio runtime; its API is synchronous.
//!
//! # Scripting a test
//!
//! ```ignore
//! #[path = "../support/mock_openai/mod.rs"]
//! mod mock_openai;
//! use mock_openai::{MockOpenAi, Reply};
//!
//! let mock = MockOpenAi::start(vec![
//!     // 1st request: the model calls a tool...
//!     Reply::tool_calls(&[("call_1", "fx__echo", json!({"text": "hi"}))]),
//!     // 2nd request (with the tool result): ...then answers.
//!     Reply::text("Done."),
//! ]);
//! // Point the client at `mock.base_url()` ("http://127.0.0.1:PORT/v1"), run it, then:
//! let requests = mock.wait_for_requests(2, Duration::from_secs(10));
//! assert!(requests[0].tool_names().contains(&"fx__echo".to_owned()));
//! assert_eq!(requests[1].messages().last().unwrap()["role"], "tool");
//! ```
//!
//! - Every `POST /v1/chat/completions` (or `/chat/completions`) is recorded (`requests`,
//!   `wait_for_requests`), then answered with the next `Reply` of the script, in order.
//!   `push` appends to the script while the server runs. Once the script is exhausted the
//!   answer is `500` with the body `mock: no scripted reply left for request N` (N counts
//!   requests from 1), so a client that asks once too often fails visibly.
//! - `Reply::text`, `Reply::tool_calls` and `Reply::text_with_usage` build realistic SSE
//!   streams (`reply::text_events` / `reply::tool_call_events` give the raw events, to edit
//!   or to cut short with `Reply::Cut` / `Reply::Stall`); `Reply::error` an OpenAI-style
//!   error body; `Reply::Status` any status with an optional `Retry-After`; `Reply::Json` a
//!   non-streaming answer; `Reply::Paced` a raw SSE body written piece by piece after
//!   pauses (a recorded stream with keep-alive comments).
//! - Streams are `text/event-stream`, one `data: <json>\n\n` event per flush. `Cut` ends in a
//!   dropped connection (the client sees a body error, no `[DONE]`); `Stall` goes silent
//!   until the client hangs up or the mock is dropped.
//! - `GET /v1/models` lists one model, `mock-model`.
//! - `MockOpenAi::start_caching` also models a provider's prompt cache (`cache`): each
//!   streamed reply's usage reports the prompt's tokens and how many of them start like an
//!   earlier request, serialized tools first.
//! - Dropping the `MockOpenAi` stops the server and closes every open connection.
//!
//! Include it with `#[path = "../support/mock_openai/mod.rs"] mod mock_openai;`; it depends
//! on nothing else in the test tree.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub(crate) mod cache;
pub(crate) mod reply;
mod server;

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

pub(crate) use reply::Reply;

/// One request received on the chat-completions route.
#[derive(Debug, Clone)]
pub(crate) struct Recorded {
    /// The request body as JSON (a JSON string holding the raw text if it was not JSON).
    pub body: Value,
    /// The request body exactly as received.
    pub raw: String,
    /// The request headers in arrival order, names in lower case.
    pub headers: Vec<(String, String)>,
    /// When the request was received.
    pub at: Instant,
}

impl Recorded {
    /// The names in `body.tools[].function.name`, in order.
    pub(crate) fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The content of the first message if its role is `system` (text parts of an array
    /// content joined), else the empty string.
    pub(crate) fn system_prompt(&self) -> String {
        match self.messages().first() {
            Some(first) if first["role"] == "system" => content_text(&first["content"]),
            _ => String::new(),
        }
    }

    /// `body.messages`, or nothing.
    pub(crate) fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The content of the tool result for `call_id` in this request's history.
    pub(crate) fn tool_result(&self, call_id: &str) -> String {
        self.messages()
            .iter()
            .find(|m| m["tool_call_id"] == call_id)
            .and_then(|m| m["content"].as_str())
            .unwrap_or_else(|| panic!("no result of {call_id} in {}", self.body))
            .to_string()
    }

    /// The first header with this name, case-insensitively.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A message content as text: a string as is, an array's `text` parts joined.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

/// State shared between the caller's thread and the server.
struct Shared {
    state: Mutex<ScriptState>,
    arrived: Condvar,
}

#[derive(Default)]
struct ScriptState {
    script: VecDeque<Reply>,
    requests: Vec<Recorded>,
    /// Set by `start_caching`: streamed replies report its figures.
    cache: Option<cache::PromptCache>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ScriptState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a request and takes the reply for it: its 1-based number and the next
    /// scripted reply, if any (with the prompt cache's figures in its usage).
    fn record(&self, request: Recorded) -> (usize, Option<Reply>) {
        let mut state = self.lock();
        let use_ = state.cache.as_mut().map(|c| c.lookup(&request.body));
        state.requests.push(request);
        let number = state.requests.len();
        let reply = match (state.script.pop_front(), use_) {
            (Some(Reply::Stream(events)), Some(use_)) => {
                Some(Reply::Stream(cache::with_usage(events, use_)))
            }
            (reply, _) => reply,
        };
        drop(state);
        self.arrived.notify_all();
        (number, reply)
    }
}

/// The running mock server; dropping it stops the server.
pub(crate) struct MockOpenAi {
    shared: Arc<Shared>,
    addr: std::net::SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MockOpenAi {
    /// Starts a server that answers chat-completion requests with `script`, in order. The
    /// port is bound before this returns, so the server is immediately reachable.
    pub(crate) fn start(script: Vec<Reply>) -> Self {
        Self::serve(script, None)
    }

    /// `start`, with a provider-style prompt cache: every streamed reply's usage says how
    /// many prompt tokens were served from the cache (see [`cache`]).
    pub(crate) fn start_caching(script: Vec<Reply>) -> Self {
        Self::serve(script, Some(cache::PromptCache::default()))
    }

    fn serve(script: Vec<Reply>, cache: Option<cache::PromptCache>) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(ScriptState {
                script: script.into(),
                requests: Vec::new(),
                cache,
            }),
            arrived: Condvar::new(),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("mock_openai: bind");
        listener
            .set_nonblocking(true)
            .expect("mock_openai: set_nonblocking");
        let addr = listener.local_addr().expect("mock_openai: local_addr");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("mock_openai: tokio runtime");
        let (shutdown, shutdown_rx) = tokio::sync::oneshot::channel::<()>();
        let app = server::router(shared.clone());
        let thread = std::thread::Builder::new()
            .name("mock-openai".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .expect("mock_openai: tokio listener");
                    tokio::select! {
                        // No Nagle: each SSE event goes out at once, like a real server's.
                        result = axum::serve(
                            axum::serve::ListenerExt::tap_io(listener, |tcp| {
                                let _ = tcp.set_nodelay(true);
                            }),
                            app,
                        )
                        .into_future() => {
                            if let Err(e) = result {
                                eprintln!("mock_openai: server error: {e}");
                            }
                        }
                        _ = shutdown_rx => {}
                    }
                });
                // Dropping the runtime drops every connection task, stalled streams included.
                drop(runtime);
            })
            .expect("mock_openai: spawn server thread");
        Self {
            shared,
            addr,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// The API base URL, `http://127.0.0.1:PORT/v1`.
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every chat-completion request received so far, in order.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// Waits until at least `n` requests have arrived and returns all of them; panics if
    /// that takes longer than `timeout`.
    pub(crate) fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<Recorded> {
        let state = self.shared.lock();
        let (state, result) = self
            .shared
            .arrived
            .wait_timeout_while(state, timeout, |s| s.requests.len() < n)
            .unwrap_or_else(PoisonError::into_inner);
        if result.timed_out() && state.requests.len() < n {
            panic!(
                "mock_openai: waited {timeout:?} for {n} chat-completion request(s), got {}",
                state.requests.len()
            );
        }
        state.requests.clone()
    }

    /// Appends a reply to the script.
    pub(crate) fn push(&self, reply: Reply) {
        self.shared.lock().script.push_back(reply);
    }
}

impl Drop for MockOpenAi {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

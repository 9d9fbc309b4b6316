//! Legacy HTTP+SSE client transport (MCP spec 2024-11-05).
//!
//! rmcp 3.x only ships the streamable HTTP transport, but users' configs still
//! name `"type": "sse"` servers, so this module re-implements the old protocol
//! on rmcp's [`Transport`] trait: a long-lived `GET` whose event stream first
//! announces a POST endpoint (`event: endpoint`) and then carries the server's
//! JSON-RPC messages, while the client POSTs its own messages to that endpoint.
//!
//! The event stream is polled directly by [`Transport::receive`] (no background
//! task): dropping or closing the transport drops the HTTP response, which
//! closes the connection, so nothing can outlive the transport. The legacy
//! protocol binds the session to that one connection, so there is no
//! reconnection: when the stream ends, `receive` returns `None` and the rmcp
//! service sees the server as gone.

use std::borrow::Cow;
use std::pin::Pin;

use futures::{Stream, StreamExt};
use reqwest::Url;
use reqwest::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HeaderMap, HeaderValue};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use sse_stream::{Sse, SseStream};

/// The parsed server-sent events of the `GET` response.
type EventStream = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// Errors of the legacy SSE transport, so callers can tell a bad config
/// (URL, headers, wrong server type) from a server that went away.
#[derive(Debug, thiserror::Error)]
pub enum SseTransportError {
    /// The configured SSE URL could not be parsed.
    #[error("invalid SSE URL `{url}`: {reason}")]
    InvalidUrl {
        /// The URL as configured.
        url: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The HTTP request itself failed (connection refused, TLS, I/O, ...).
    #[error("HTTP request to the MCP server failed")]
    Http(#[from] reqwest::Error),
    /// The server answered with a non-2xx status.
    #[error("MCP server answered HTTP {status} for {url}")]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The URL that was requested.
        url: String,
    },
    /// The `GET` answer was not an event stream (probably not a legacy SSE server).
    #[error(
        "MCP server answered {url} with content type `{content_type}` instead of \
         `text/event-stream`; is it really a legacy SSE server?"
    )]
    NotEventStream {
        /// The content type the server sent.
        content_type: String,
        /// The URL that was requested.
        url: String,
    },
    /// The event stream broke off or could not be parsed as server-sent events.
    #[error("reading the SSE stream from the MCP server failed")]
    Sse(#[source] sse_stream::Error),
    /// The event stream ended before the server sent its `endpoint` event.
    #[error("SSE stream ended before the MCP server sent its `endpoint` event")]
    NoEndpoint,
    /// The `endpoint` event did not hold a usable URI.
    #[error("MCP server sent an invalid endpoint `{endpoint}`: {reason}")]
    InvalidEndpoint {
        /// The endpoint as sent by the server.
        endpoint: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The `endpoint` event pointed to another origin, which the MCP SDKs
    /// refuse so a server cannot redirect our messages (and headers) elsewhere.
    #[error(
        "MCP server sent endpoint {endpoint} whose origin differs from the SSE URL's \
         origin {expected}; refusing it"
    )]
    CrossOriginEndpoint {
        /// The resolved endpoint URL.
        endpoint: String,
        /// The origin of the SSE URL.
        expected: String,
    },
    /// A message could not be serialized to JSON.
    #[error("could not serialize a message to JSON")]
    Json(#[from] serde_json::Error),
    /// The transport was closed, so no more messages can be sent.
    #[error("the SSE transport is closed")]
    Closed,
}

/// Client side of a legacy HTTP+SSE MCP connection, usable with
/// `().serve(transport)` like any other rmcp client transport.
pub struct SseClientTransport {
    /// Shared HTTP client, cloned into each POST.
    client: reqwest::Client,
    /// Where client messages are POSTed, as announced by the server.
    endpoint: Url,
    /// The user's headers plus `Content-Type: application/json`.
    post_headers: HeaderMap,
    /// The open event stream; `None` once it ended or the transport was closed.
    events: Option<EventStream>,
    /// Set by [`Transport::close`], so later sends fail instead of posting.
    closed: bool,
}

impl std::fmt::Debug for SseClientTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseClientTransport")
            .field("endpoint", &self.endpoint.as_str())
            .field("stream_open", &self.events.is_some())
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl SseClientTransport {
    /// Opens the SSE stream and waits for the `endpoint` event.
    ///
    /// `headers` (e.g. `Authorization`) are sent with the `GET` and with every
    /// POST. The caller bounds this with its own timeout; `client` must not
    /// have a total request timeout, since the `GET` lives as long as the session.
    pub async fn connect(
        client: reqwest::Client,
        url: &str,
        headers: HeaderMap,
    ) -> Result<Self, SseTransportError> {
        let sse_url = Url::parse(url).map_err(|e| SseTransportError::InvalidUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        let mut get_headers = headers.clone();
        get_headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        get_headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        tracing::debug!(url = %sse_url, "opening legacy SSE stream");
        let response = client
            .get(sse_url.clone())
            .headers(get_headers)
            .send()
            .await?;
        let status = response.status();
        if !status.is_success() {
            return Err(SseTransportError::Status {
                status: status.as_u16(),
                url: sse_url.to_string(),
            });
        }
        if let Some(content_type) = response.headers().get(CONTENT_TYPE) {
            let content_type = String::from_utf8_lossy(content_type.as_bytes());
            if !is_event_stream(&content_type) {
                return Err(SseTransportError::NotEventStream {
                    content_type: content_type.into_owned(),
                    url: sse_url.to_string(),
                });
            }
        }

        let mut events: EventStream =
            Box::pin(SseStream::from_bytes_stream(response.bytes_stream()));
        let endpoint = loop {
            match events.next().await {
                None => return Err(SseTransportError::NoEndpoint),
                Some(Err(e)) => return Err(SseTransportError::Sse(e)),
                Some(Ok(sse)) if sse.event.as_deref() == Some("endpoint") => {
                    break resolve_endpoint(&sse_url, sse.data.as_deref().unwrap_or_default())?;
                }
                Some(Ok(sse)) => {
                    tracing::debug!(event = ?sse.event, "ignoring SSE event before `endpoint`");
                }
            }
        };
        tracing::debug!(%endpoint, "legacy SSE endpoint received");

        let mut post_headers = headers;
        post_headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(Self {
            client,
            endpoint,
            post_headers,
            events: Some(events),
            closed: false,
        })
    }

    /// The URL client messages are POSTed to, resolved from the `endpoint` event
    /// (useful in logs and diagnostics).
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }
}

/// Whether a `Content-Type` value denotes an event stream (parameters allowed).
fn is_event_stream(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// Resolves the `endpoint` event's data against the SSE URL and refuses
/// endpoints on another origin (scheme, host, port), as the MCP SDKs do.
fn resolve_endpoint(sse_url: &Url, data: &str) -> Result<Url, SseTransportError> {
    let data = data.trim();
    if data.is_empty() {
        return Err(SseTransportError::InvalidEndpoint {
            endpoint: String::new(),
            reason: "the `endpoint` event has no data".to_owned(),
        });
    }
    let endpoint = sse_url
        .join(data)
        .map_err(|e| SseTransportError::InvalidEndpoint {
            endpoint: data.to_owned(),
            reason: e.to_string(),
        })?;
    if endpoint.origin() != sse_url.origin() {
        return Err(SseTransportError::CrossOriginEndpoint {
            endpoint: endpoint.to_string(),
            expected: sse_url.origin().ascii_serialization(),
        });
    }
    Ok(endpoint)
}

/// Turns one SSE event into a server message, or `None` (logged) for events
/// that carry none: pings, unknown event names, repeated endpoints, bad JSON.
fn parse_event(sse: Sse) -> Option<ServerJsonRpcMessage> {
    match sse.event.as_deref() {
        None | Some("message") => {}
        Some("endpoint") => {
            tracing::debug!(data = ?sse.data, "ignoring repeated SSE `endpoint` event");
            return None;
        }
        Some(other) => {
            tracing::debug!(event = other, "ignoring unknown SSE event");
            return None;
        }
    }
    let Some(data) = sse.data else {
        tracing::debug!("ignoring SSE message without data");
        return None;
    };
    match serde_json::from_str(&data) {
        Ok(message) => Some(message),
        Err(error) => {
            tracing::warn!(%error, %data, "ignoring SSE message that is not a JSON-RPC message");
            None
        }
    }
}

impl Transport<RoleClient> for SseClientTransport {
    type Error = SseTransportError;

    fn name() -> Cow<'static, str> {
        "SseClientTransport".into()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = (!self.closed).then(|| {
            (
                self.client.clone(),
                self.endpoint.clone(),
                self.post_headers.clone(),
            )
        });
        let body = serde_json::to_vec(&item);
        async move {
            let (client, endpoint, headers) = request.ok_or(SseTransportError::Closed)?;
            let response = client
                .post(endpoint.clone())
                .headers(headers)
                .body(body?)
                .send()
                .await?;
            let status = response.status();
            if !status.is_success() {
                return Err(SseTransportError::Status {
                    status: status.as_u16(),
                    url: endpoint.to_string(),
                });
            }
            // Read the (usually empty) body so the connection can be reused.
            let _ = response.bytes().await;
            Ok(())
        }
    }

    // Cancel-safe: the only await is `StreamExt::next`, and an event taken
    // from the stream is fully handled before the next await.
    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            let events = self.events.as_mut()?;
            match events.next().await {
                None => {
                    tracing::debug!(endpoint = %self.endpoint, "legacy SSE stream ended");
                    self.events = None;
                    return None;
                }
                Some(Err(error)) => {
                    // After a parse error the rest of the chunk is lost, so the
                    // stream cannot be trusted any more: treat it as ended.
                    tracing::warn!(%error, endpoint = %self.endpoint, "legacy SSE stream failed");
                    self.events = None;
                    return None;
                }
                Some(Ok(sse)) => {
                    if let Some(message) = parse_event(sse) {
                        return Some(message);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Dropping the response closes the `GET` connection, which ends the session.
        self.closed = true;
        self.events = None;
        Ok(())
    }
}

#[cfg(test)]
// Tests may unwrap: a failure should abort the test with its message.
mod tests {
    use std::collections::HashMap;
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use axum::Router;
    use axum::extract::{Json, Query, State};
    use axum::http::StatusCode;
    use axum::response::sse::{Event, Sse as SseResponse};
    use axum::response::{IntoResponse, Response};
    use axum::routing::{get, post};
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::model::{CallToolRequestParams, JsonRpcMessage, ServerCapabilities, ServerConfig};
    use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
    use tokio::sync::mpsc;
    use tokio_util::sync::PollSender;

    use super::*;

    /// Upper bound for anything awaited in these tests, so a bug fails fast
    /// instead of hanging the test run.
    const GUARD: Duration = Duration::from_secs(5);

    #[derive(Debug, serde::Deserialize, rmcp::schemars::JsonSchema)]
    #[schemars(crate = "rmcp::schemars")]
    struct AddArgs {
        a: i64,
        b: i64,
    }

    #[derive(Debug, Clone)]
    struct Calculator {
        tool_router: ToolRouter<Self>,
    }

    #[tool_router]
    impl Calculator {
        fn new() -> Self {
            Self {
                tool_router: Self::tool_router(),
            }
        }

        #[tool(description = "Add two integers")]
        fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
            (a + b).to_string()
        }
    }

    #[tool_handler(router = self.tool_router)]
    impl ServerHandler for Calculator {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
    }

    /// A minimal legacy-SSE MCP server: `GET /sse` + `POST /message?sessionId=`.
    #[derive(Clone)]
    struct LegacyServer {
        sessions: Arc<Mutex<HashMap<String, mpsc::Sender<ClientJsonRpcMessage>>>>,
        next_id: Arc<AtomicU64>,
        required_header: Option<(&'static str, &'static str)>,
        /// Receives a session id when that session's SSE response is dropped.
        disconnected: mpsc::UnboundedSender<String>,
    }

    impl LegacyServer {
        fn authorized(&self, headers: &axum::http::HeaderMap) -> bool {
            self.required_header.is_none_or(|(name, value)| {
                headers
                    .get(name)
                    .is_some_and(|v| v.as_bytes() == value.as_bytes())
            })
        }
    }

    /// Signals its session id when dropped, i.e. when the SSE response ends.
    struct DropSignal(String, mpsc::UnboundedSender<String>);

    impl Drop for DropSignal {
        fn drop(&mut self) {
            let _ = self.1.send(self.0.clone());
        }
    }

    async fn legacy_sse(
        State(state): State<LegacyServer>,
        headers: axum::http::HeaderMap,
    ) -> Response {
        if !state.authorized(&headers) {
            return StatusCode::UNAUTHORIZED.into_response();
        }
        let id = format!("s{}", state.next_id.fetch_add(1, Ordering::SeqCst));
        let (to_server, mut server_rx) = mpsc::channel::<ClientJsonRpcMessage>(16);
        let (server_tx, mut to_client) = mpsc::channel::<ServerJsonRpcMessage>(16);
        state.sessions.lock().unwrap().insert(id.clone(), to_server);
        tokio::spawn(async move {
            let incoming = futures::stream::poll_fn(move |cx| server_rx.poll_recv(cx));
            if let Ok(running) = Calculator::new()
                .serve((PollSender::new(server_tx), incoming))
                .await
            {
                let _ = running.waiting().await;
            }
        });
        let guard = DropSignal(id.clone(), state.disconnected.clone());
        let preamble = futures::stream::iter([
            Event::default()
                .event("endpoint")
                .data(format!("/message?sessionId={id}")),
            Event::default().comment("ping"),
        ]);
        let messages = futures::stream::poll_fn(move |cx| to_client.poll_recv(cx)).map(|m| {
            Event::default()
                .event("message")
                .data(serde_json::to_string(&m).unwrap())
        });
        let events = preamble.chain(messages).map(move |event| {
            let _keep = &guard;
            Ok::<_, Infallible>(event)
        });
        SseResponse::new(events).into_response()
    }

    async fn legacy_message(
        State(state): State<LegacyServer>,
        Query(query): Query<HashMap<String, String>>,
        headers: axum::http::HeaderMap,
        Json(message): Json<ClientJsonRpcMessage>,
    ) -> StatusCode {
        if !state.authorized(&headers) {
            return StatusCode::UNAUTHORIZED;
        }
        let sender = query
            .get("sessionId")
            .and_then(|id| state.sessions.lock().unwrap().get(id).cloned());
        match sender {
            None => StatusCode::NOT_FOUND,
            Some(sender) if sender.send(message).await.is_ok() => StatusCode::ACCEPTED,
            Some(_) => StatusCode::GONE,
        }
    }

    /// Starts the legacy server; returns its base URL and the disconnect feed.
    async fn spawn_legacy_server(
        required_header: Option<(&'static str, &'static str)>,
    ) -> (String, mpsc::UnboundedReceiver<String>) {
        let (disconnected, disconnects) = mpsc::unbounded_channel();
        let state = LegacyServer {
            sessions: Arc::default(),
            next_id: Arc::default(),
            required_header,
            disconnected,
        };
        let router = Router::new()
            .route("/sse", get(legacy_sse))
            .route("/message", post(legacy_message))
            .with_state(state);
        (spawn_app(router).await, disconnects)
    }

    /// Serves `router` on 127.0.0.1 with an ephemeral port; returns the base URL.
    async fn spawn_app(router: Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        format!("http://{addr}")
    }

    /// Serves a fixed SSE body at `path`, after which the stream ends.
    async fn spawn_scripted(path: &str, body: &'static str) -> String {
        let router = Router::new().route(
            path,
            get(move || async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                    body,
                )
            }),
        );
        spawn_app(router).await
    }

    fn http_client() -> reqwest::Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::new()
    }

    async fn connect(
        url: &str,
        headers: HeaderMap,
    ) -> Result<SseClientTransport, SseTransportError> {
        tokio::time::timeout(
            GUARD,
            SseClientTransport::connect(http_client(), url, headers),
        )
        .await
        .expect("connect hung")
    }

    #[tokio::test]
    async fn lists_and_calls_tools_over_legacy_sse_with_headers() {
        let (base, mut disconnects) =
            spawn_legacy_server(Some(("authorization", "Bearer secret"))).await;
        let mut headers = HeaderMap::new();
        headers.insert("authorization", HeaderValue::from_static("Bearer secret"));
        let transport = connect(&format!("{base}/sse"), headers).await.unwrap();
        assert_eq!(
            transport.endpoint().as_str(),
            format!("{base}/message?sessionId=s0")
        );

        let client = tokio::time::timeout(GUARD, ().serve(transport))
            .await
            .unwrap()
            .unwrap();
        let tools = tokio::time::timeout(GUARD, client.list_all_tools())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0].name, "add");

        let args = serde_json::json!({"a": 2, "b": 40});
        let params =
            CallToolRequestParams::new("add").with_arguments(args.as_object().unwrap().clone());
        let result = tokio::time::timeout(GUARD, client.call_tool(params))
            .await
            .unwrap()
            .unwrap();
        assert_ne!(result.is_error, Some(true));
        let text = result.content[0].as_text().unwrap();
        assert_eq!(text.text, "42");

        // Closing the client closes the transport, which must end the SSE response.
        tokio::time::timeout(GUARD, client.cancel())
            .await
            .unwrap()
            .unwrap();
        let gone = tokio::time::timeout(GUARD, disconnects.recv())
            .await
            .unwrap();
        assert_eq!(gone.as_deref(), Some("s0"));
    }

    #[tokio::test]
    async fn missing_header_fails_with_status() {
        let (base, _disconnects) =
            spawn_legacy_server(Some(("authorization", "Bearer secret"))).await;
        let err = connect(&format!("{base}/sse"), HeaderMap::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, SseTransportError::Status { status: 401, .. }),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn stream_without_endpoint_fails() {
        let base = spawn_scripted(
            "/sse",
            ": ping\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n",
        )
        .await;
        let err = connect(&format!("{base}/sse"), HeaderMap::new())
            .await
            .unwrap_err();
        assert!(matches!(err, SseTransportError::NoEndpoint), "{err:?}");
    }

    #[tokio::test]
    async fn cross_origin_endpoint_is_refused() {
        let base = spawn_scripted(
            "/sse",
            "event: endpoint\ndata: http://evil.example/message?sessionId=1\n\n",
        )
        .await;
        let err = connect(&format!("{base}/sse"), HeaderMap::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, SseTransportError::CrossOriginEndpoint { .. }),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn relative_endpoint_is_resolved_against_sse_url() {
        let base = spawn_scripted(
            "/mcp/sse",
            "event: endpoint\ndata: messages?sessionId=42\n\n",
        )
        .await;
        let transport = connect(&format!("{base}/mcp/sse?token=t"), HeaderMap::new())
            .await
            .unwrap();
        assert_eq!(
            transport.endpoint().as_str(),
            format!("{base}/mcp/messages?sessionId=42")
        );
    }

    #[test]
    fn resolve_endpoint_rules() {
        let sse = Url::parse("http://127.0.0.1:8080/a/sse").unwrap();
        let ok = |data| resolve_endpoint(&sse, data).unwrap().to_string();
        assert_eq!(
            ok("/message?sessionId=1"),
            "http://127.0.0.1:8080/message?sessionId=1"
        );
        assert_eq!(ok(" msg?s=1\n"), "http://127.0.0.1:8080/a/msg?s=1");
        assert_eq!(ok("http://127.0.0.1:8080/x"), "http://127.0.0.1:8080/x");
        for foreign in [
            "http://127.0.0.1:8081/x",
            "https://127.0.0.1:8080/x",
            "http://localhost:8080/x",
            "//evil.example/x",
        ] {
            assert!(
                matches!(
                    resolve_endpoint(&sse, foreign),
                    Err(SseTransportError::CrossOriginEndpoint { .. })
                ),
                "{foreign}"
            );
        }
        assert!(matches!(
            resolve_endpoint(&sse, "  "),
            Err(SseTransportError::InvalidEndpoint { .. })
        ));
        assert!(matches!(
            resolve_endpoint(&sse, "http://[::1"),
            Err(SseTransportError::InvalidEndpoint { .. })
        ));
    }

    #[tokio::test]
    async fn receive_skips_noise_and_ends_with_stream() {
        let base = spawn_scripted(
            "/sse",
            ": ping\n\nevent: endpoint\ndata: /message\n\n: keep-alive\n\n\
             event: weird\ndata: whatever\n\nevent: message\ndata: not json\n\n\
             data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n\
             event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
        )
        .await;
        let mut transport = connect(&format!("{base}/sse"), HeaderMap::new())
            .await
            .unwrap();
        let mut next = async || {
            tokio::time::timeout(GUARD, Transport::<RoleClient>::receive(&mut transport))
                .await
                .expect("receive hung")
        };
        assert!(matches!(
            next().await,
            Some(JsonRpcMessage::Notification(_))
        ));
        assert!(matches!(next().await, Some(JsonRpcMessage::Response(_))));
        assert!(next().await.is_none());
        assert!(next().await.is_none());
    }

    #[tokio::test]
    async fn send_reports_http_status_and_closed() {
        let base = spawn_scripted("/sse", "event: endpoint\ndata: /nowhere\n\n").await;
        let mut transport = connect(&format!("{base}/sse"), HeaderMap::new())
            .await
            .unwrap();
        let message: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}
        ))
        .unwrap();
        let err = tokio::time::timeout(GUARD, transport.send(message.clone()))
            .await
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(err, SseTransportError::Status { status: 404, .. }),
            "{err:?}"
        );

        Transport::<RoleClient>::close(&mut transport)
            .await
            .unwrap();
        assert!(
            Transport::<RoleClient>::receive(&mut transport)
                .await
                .is_none()
        );
        let err = transport.send(message).await.unwrap_err();
        assert!(matches!(err, SseTransportError::Closed), "{err:?}");
    }

    #[tokio::test]
    async fn non_event_stream_answer_is_rejected() {
        let router = Router::new().route("/sse", get(|| async { "hello" }));
        let base = spawn_app(router).await;
        let err = connect(&format!("{base}/sse"), HeaderMap::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, SseTransportError::NotEventStream { .. }),
            "{err:?}"
        );
    }
}

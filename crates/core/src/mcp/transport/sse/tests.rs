//! Tests of the legacy SSE transport against small in-process axum servers.

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
use rmcp::RoleClient;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, JsonRpcMessage, ServerCapabilities, ServerConfig, ServerJsonRpcMessage,
};
use rmcp::transport::Transport;
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use tokio::sync::mpsc;
use tokio_util::sync::PollSender;

use super::*;
use crate::mcp::incoming::Incoming;
use crate::mcp::transport::Judged;

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

async fn legacy_sse(State(state): State<LegacyServer>, headers: axum::http::HeaderMap) -> Response {
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

async fn connect(url: &str, headers: HeaderMap) -> Result<SseClientTransport, SseTransportError> {
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

    let transport = Judged::new(transport, Incoming::default(), "calculator");
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
    let (base, _disconnects) = spawn_legacy_server(Some(("authorization", "Bearer secret"))).await;
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
    let raw = connect(&format!("{base}/sse"), HeaderMap::new())
        .await
        .unwrap();
    let incoming = Incoming::default();
    let mut transport = Judged::new(raw, incoming.clone(), "scripted");
    // The answer below answers a request antler sent.
    incoming.sent(&rmcp::model::ClientJsonRpcMessage::request(
        rmcp::model::ClientRequest::PingRequest(Default::default()),
        rmcp::model::NumberOrString::Number(1),
    ));
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
async fn an_answer_to_a_request_never_sent_ends_the_stream() {
    let base = spawn_scripted(
        "/sse",
        "event: endpoint\ndata: /message\n\n\
         event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n\n\
         event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
    )
    .await;
    let raw = connect(&format!("{base}/sse"), HeaderMap::new())
        .await
        .unwrap();
    let incoming = Incoming::default();
    let mut transport = Judged::new(raw, incoming.clone(), "scripted");
    let received = tokio::time::timeout(GUARD, Transport::<RoleClient>::receive(&mut transport))
        .await
        .expect("receive hung");
    assert!(received.is_none());
    let fault = incoming.fault().map(str::to_string);
    assert!(fault.is_some_and(|f| f.contains("request 99")));
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

    RawTransport::close(&mut transport).await.unwrap();
    assert!(RawTransport::receive(&mut transport).await.is_none());
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

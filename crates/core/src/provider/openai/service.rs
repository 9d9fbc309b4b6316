//! The HTTP layer under async-openai's client: sends each request with the shared reqwest
//! client, turns an error status into [`HttpStatusError`] (keeping `Retry-After`, which
//! async-openai's own error drops), and watches the body: for the `[DONE]` marker, which
//! async-openai swallows, so that a complete stream can be told from a cut one, and for
//! any bytes at all, so that a server that sends only SSE comments (llama-server's
//! keep-alives while it reads a long prompt) counts as alive.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use async_openai::error::OpenAIError;
use async_openai::middleware::{HttpRequestFactory, ReqwestService};
use futures::StreamExt;
use reqwest::header::{AUTHORIZATION, HeaderMap, RETRY_AFTER};
use serde_json::Value;

/// How much of a non-JSON error body is kept.
const MESSAGE_LIMIT: usize = 500;

/// An error status from the endpoint, with what the retry loop needs.
#[derive(Debug, Clone, thiserror::Error)]
#[error("HTTP {status}: {message}")]
pub(super) struct HttpStatusError {
    pub(super) status: u16,
    /// The server's `Retry-After` (or `retry-after-ms`), uncapped.
    pub(super) retry_after: Option<Duration>,
    /// The server's error message.
    pub(super) message: String,
}

/// What the body of one attempt's response showed so far.
pub(super) struct BodyWatch {
    /// The body carried `data: [DONE]`.
    pub(super) done: AtomicBool,
    /// How many pieces of the body arrived (any bytes, comments included).
    pub(super) pieces: tokio::sync::watch::Sender<u64>,
}

impl BodyWatch {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            done: AtomicBool::new(false),
            pieces: tokio::sync::watch::Sender::new(0),
        })
    }
}

/// The tower service installed into async-openai's client; one per attempt, so that its
/// body watch belongs to one stream.
#[derive(Clone)]
pub(super) struct HttpService {
    inner: ReqwestService,
    watch: Arc<BodyWatch>,
}

impl HttpService {
    /// Sends with `client`, reporting what the body shows to `watch`.
    pub(super) fn new(client: reqwest::Client, watch: Arc<BodyWatch>) -> Self {
        Self {
            inner: ReqwestService::new(client),
            watch,
        }
    }
}

type ResponseFuture = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

impl tower_service::Service<HttpRequestFactory> for HttpService {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: HttpRequestFactory) -> Self::Future {
        let sent = self.inner.call(without_empty_key(request));
        let watch = self.watch.clone();
        Box::pin(async move {
            let response = sent.await?;
            if !response.status().is_success() {
                let error = status_error(response).await;
                return Err(OpenAIError::Boxed(Box::new(error)));
            }
            Ok(watch_body(response, watch))
        })
    }
}

/// Drops `Authorization: Bearer ` when no key was configured (local servers need none).
fn without_empty_key(request: HttpRequestFactory) -> HttpRequestFactory {
    HttpRequestFactory::new(move || {
        let request = request.clone();
        async move {
            let mut built = request.build().await?;
            let empty = built
                .headers()
                .get(AUTHORIZATION)
                .is_some_and(|value| value.as_bytes().trim_ascii() == b"Bearer");
            if empty {
                built.headers_mut().remove(AUTHORIZATION);
            }
            Ok(built)
        }
    })
}

/// Reads an error response into a typed error.
async fn status_error(response: reqwest::Response) -> HttpStatusError {
    let status = response.status();
    let retry_after = retry_after(response.headers(), SystemTime::now());
    let message = match response.bytes().await {
        Ok(body) => error_message(&body),
        Err(_) => String::new(),
    };
    let message = if message.is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        message
    };
    HttpStatusError {
        status: status.as_u16(),
        retry_after,
        message,
    }
}

/// The server's message from an error body: `{"error":{"message":..}}` (also
/// `{"error":".."}` and `{"message":..}`), else the text, shortened.
pub(super) fn error_message(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(body) {
        let found = [
            value.pointer("/error/message"),
            value.get("error"),
            value.get("message"),
        ]
        .into_iter()
        .flatten()
        .find_map(Value::as_str);
        if let Some(message) = found {
            return message.to_string();
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(MESSAGE_LIMIT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The wait a server asks for: `retry-after-ms`, or `Retry-After` as delta-seconds or an
/// HTTP-date (relative to `now`).
pub(super) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(millis) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(millis / 1000.0).ok();
    }
    let value = header(RETRY_AFTER.as_str())?;
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or_default())
}

/// Re-wraps a success response so that its body passes through a [`DoneScanner`] and
/// every piece of it is counted.
fn watch_body(response: reqwest::Response, watch: Arc<BodyWatch>) -> reqwest::Response {
    let status = response.status();
    let version = response.version();
    let headers = response.headers().clone();
    let mut scanner = DoneScanner::new(watch.clone());
    let body = response.bytes_stream().map(move |chunk| {
        if let Ok(bytes) = &chunk {
            scanner.feed(bytes);
            watch.pieces.send_modify(|n| *n += 1);
        }
        chunk
    });
    let mut wrapped = http::Response::new(reqwest::Body::wrap_stream(body));
    *wrapped.status_mut() = status;
    *wrapped.version_mut() = version;
    *wrapped.headers_mut() = headers;
    reqwest::Response::from(wrapped)
}

/// Finds a `data: [DONE]` line in a byte stream, across chunk boundaries.
struct DoneScanner {
    line: Vec<u8>,
    long: bool,
    watch: Arc<BodyWatch>,
}

impl DoneScanner {
    /// Longer lines cannot be the marker; only this much of each is kept.
    const KEEP: usize = 16;

    fn new(watch: Arc<BodyWatch>) -> Self {
        Self {
            line: Vec::with_capacity(Self::KEEP),
            long: false,
            watch,
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            if byte == b'\n' || byte == b'\r' {
                let marker = matches!(self.line.trim_ascii(), b"data: [DONE]" | b"data:[DONE]");
                if marker && !self.long {
                    self.watch.done.store(true, Ordering::SeqCst);
                }
                self.line.clear();
                self.long = false;
            } else if self.line.len() < Self::KEEP {
                self.line.push(byte);
            } else {
                self.long = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_is_found_across_chunks_and_only_as_a_line() {
        let watch = BodyWatch::new();
        let mut scanner = DoneScanner::new(watch.clone());
        scanner.feed(b"data: {\"content\":\"data: [DONE]\"}\n\n");
        assert!(!watch.done.load(Ordering::SeqCst));
        scanner.feed(b"data: [DO");
        scanner.feed(b"NE]\r\n");
        assert!(watch.done.load(Ordering::SeqCst));
    }

    #[test]
    fn error_messages_are_extracted_or_shortened() {
        assert_eq!(error_message(br#"{"error":{"message":"bad"}}"#), "bad");
        assert_eq!(error_message(br#"{"error":"worse"}"#), "worse");
        assert_eq!(error_message(br#"{"message":"m"}"#), "m");
        assert_eq!(error_message(b"  plain text \n"), "plain text");
        let long = "x".repeat(900);
        assert_eq!(
            error_message(long.as_bytes()).chars().count(),
            MESSAGE_LIMIT + 1
        );
    }

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers, now), None);
        headers.insert(RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(3)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(20));
        headers.insert(RETRY_AFTER, later.parse().unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::from_secs(20)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(20));
        headers.insert(RETRY_AFTER, earlier.parse().unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::ZERO));
        headers.insert(RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers, now), None);
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&headers, now), Some(Duration::from_millis(250)));
    }
}

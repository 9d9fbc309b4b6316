//! Legacy HTTP+SSE client transport (MCP spec 2024-11-05).
//!
//! rmcp 3.x only ships the streamable HTTP transport, but users' configs still
//! name `"type": "sse"` servers, so this module re-implements the old protocol
//! as a [`RawTransport`]: a long-lived `GET` whose event stream first
//! announces a POST endpoint (`event: endpoint`) and then carries the server's
//! JSON-RPC messages, while the client POSTs its own messages to that endpoint.
//!
//! The event stream is polled directly by [`RawTransport::receive`] (no background
//! task): dropping or closing the transport drops the HTTP response, which
//! closes the connection, so nothing can outlive the transport. The legacy
//! protocol binds the session to that one connection, so there is no
//! reconnection: when the stream ends, `receive` returns `None` and the rmcp
//! service sees the server as gone. Each event's data is judged by the connection's
//! [`Judged`](super::Judged), not here.

use std::borrow::Cow;
use std::pin::Pin;

use futures::{Stream, StreamExt};
use reqwest::Url;
use reqwest::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE, HeaderMap, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use sse_stream::{Sse, SseStream};

use super::{Frame, RawTransport, header_map};
use crate::config::McpServerConfig;
use crate::mcp::McpError;

/// The parsed server-sent events of the `GET` response.
type EventStream = Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// Errors of the legacy SSE transport, so callers can tell a bad config
/// (URL, headers, wrong server type) from a server that went away.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SseTransportError {
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

/// Client side of a legacy HTTP+SSE MCP connection: a raw transport, served only through
/// [`Judged`](super::Judged), which judges every event's data.
pub(crate) struct SseClientTransport {
    /// Shared HTTP client, cloned into each POST.
    client: reqwest::Client,
    /// Where client messages are POSTed, as announced by the server.
    endpoint: Url,
    /// The user's headers plus `Content-Type: application/json`.
    post_headers: HeaderMap,
    /// The open event stream; `None` once it ended or the transport was closed.
    events: Option<EventStream>,
    /// Set by [`RawTransport::close`], so later sends fail instead of posting.
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
    pub(crate) async fn connect(
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
        let response = success(response, &sse_url)?;
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
    pub(crate) fn endpoint(&self) -> &Url {
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

/// The connection to the `sse` server of `config` (its `url` and `headers`).
pub(crate) async fn open(config: &McpServerConfig) -> Result<SseClientTransport, McpError> {
    let url = config.url.clone().unwrap_or_default();
    let client = crate::base::http::http_client().map_err(|e| McpError::Http(e.to_string()))?;
    let headers: HeaderMap = header_map(&config.headers)?.into_iter().collect();
    let transport = SseClientTransport::connect(client, &url, headers)
        .await
        .map_err(|e| McpError::Connect(crate::mcp::readable::readable_error(&e)))?;
    tracing::debug!(server = %config.name, endpoint = %transport.endpoint(), "SSE endpoint");
    Ok(transport)
}

/// One SSE event as a frame: a server message's data, or noise (logged) for events that
/// carry none (pings, unknown event names, repeated endpoints).
fn frame_of(sse: Sse) -> Frame {
    match sse.event.as_deref() {
        None | Some("message") => {}
        Some("endpoint") => return Frame::Noise(String::from("a repeated SSE `endpoint` event")),
        Some(other) => return Frame::Noise(format!("an unknown SSE event `{other}`")),
    }
    match sse.data {
        Some(data) => Frame::Bytes(data.into_bytes()),
        None => Frame::Noise(String::from("an SSE message without data")),
    }
}

impl RawTransport for SseClientTransport {
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
            let response = success(response, &endpoint)?;
            // Read the (usually empty) body so the connection can be reused.
            let _ = response.bytes().await;
            Ok(())
        }
    }

    // Cancel-safe: the only await is `StreamExt::next`.
    async fn receive(&mut self) -> Option<Frame> {
        let events = self.events.as_mut()?;
        match events.next().await {
            None => {
                tracing::debug!(endpoint = %self.endpoint, "legacy SSE stream ended");
                self.events = None;
                None
            }
            Some(Err(error)) => {
                // After a parse error the rest of the chunk is lost, so the
                // stream cannot be trusted any more: treat it as ended.
                tracing::warn!(%error, endpoint = %self.endpoint, "legacy SSE stream failed");
                self.events = None;
                None
            }
            Some(Ok(sse)) => Some(frame_of(sse)),
        }
    }

    fn stop_reading(&mut self) {
        // Dropping the response closes the `GET` connection, which ends the session.
        self.events = None;
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Dropping the response closes the `GET` connection, which ends the session.
        self.closed = true;
        self.events = None;
        Ok(())
    }
}

/// The response if its status is 2xx, else the status error naming the URL.
fn success(response: reqwest::Response, url: &Url) -> Result<reqwest::Response, SseTransportError> {
    let status = response.status();
    if status.is_success() {
        Ok(response)
    } else {
        Err(SseTransportError::Status {
            status: status.as_u16(),
            url: url.to_string(),
        })
    }
}

#[cfg(test)]
mod tests;

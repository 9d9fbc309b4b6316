//! The three MCP transports, one seam: each opens a [`RawTransport`] that only moves
//! frames (`stdio`: a child's lines, `sse`: the legacy HTTP+SSE events, `http`: rmcp's
//! streamable HTTP client), and [`Judged`] is the only way a connection gets an rmcp
//! transport: every frame a server sends passes [`Incoming`]'s judgement before rmcp sees
//! it. A raw transport does not implement rmcp's `Transport`, so a fourth transport cannot
//! forget the judge.

pub(crate) mod http;
pub(crate) mod sse;
pub(crate) mod stdio;

use std::borrow::Cow;

use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;

use super::McpError;
use super::incoming::{Incoming, Verdict};

/// What a raw transport read from the server.
pub(super) enum Frame {
    /// The bytes of one message, not parsed yet (a stdio line, an SSE event's data).
    Bytes(Vec<u8>),
    /// A message the transport had to parse itself (streamable HTTP).
    Parsed(Box<ServerJsonRpcMessage>),
    /// Something that carries no message (an unknown SSE event), for the log.
    Noise(String),
}

/// A connection to a server that moves frames and judges nothing.
pub(super) trait RawTransport: Send + 'static {
    /// Why a send or a close failed.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The transport's name, for rmcp's logs.
    fn name() -> Cow<'static, str>;

    /// Sends one message.
    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static;

    /// The next frame; `None` once the connection is gone.
    fn receive(&mut self) -> impl Future<Output = Option<Frame>> + Send;

    /// Closes the connection.
    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// The judge closed the connection: stop reading at once (rmcp closes the transport
    /// only after it has flushed what it was sending).
    fn stop_reading(&mut self) {}
}

/// A raw transport whose every frame is judged: what the server sends is delivered,
/// skipped (noise, a repeated answer) or ends the connection (an answer to a request
/// antler never sent), and every request antler sends is noted, so its answer is known.
pub(super) struct Judged<T> {
    raw: T,
    incoming: Incoming,
    /// Names the server in logs.
    server: String,
    /// The judge closed the connection: nothing more is read.
    closed: bool,
}

impl<T: RawTransport> Judged<T> {
    /// `raw`, judged by `incoming`; `server` names it in logs.
    pub(super) fn new(raw: T, incoming: Incoming, server: &str) -> Self {
        Self {
            raw,
            incoming,
            server: server.to_string(),
            closed: false,
        }
    }
}

impl<T: RawTransport> Transport<RoleClient> for Judged<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.incoming.sent(&item);
        self.raw.send(item)
    }

    // Cancel-safe as the raw transport's `receive` is: a frame taken is judged before the
    // next await.
    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        while !self.closed {
            let verdict = match self.raw.receive().await? {
                Frame::Bytes(bytes) => self.incoming.judge(&bytes),
                Frame::Parsed(message) => self.incoming.check_id(*message),
                Frame::Noise(what) => Verdict::Skip(what),
            };
            match verdict {
                Verdict::Deliver(message) => return Some(*message),
                Verdict::Skip(what) => tracing::debug!(server = %self.server, "ignoring {what}"),
                Verdict::Close(reason) => {
                    tracing::warn!(server = %self.server, "MCP server disconnected: {reason}");
                    self.closed = true;
                    self.raw.stop_reading();
                }
            }
        }
        None
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.raw.close()
    }
}

/// An rmcp client transport that parses messages itself, as a raw one: its messages are
/// [`Frame::Parsed`], judged like any other.
pub(super) struct Parsing<T>(T);

impl<T: Transport<RoleClient> + 'static> RawTransport for Parsing<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.0.send(item)
    }

    async fn receive(&mut self) -> Option<Frame> {
        self.0.receive().await.map(|m| Frame::Parsed(Box::new(m)))
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.0.close()
    }
}

/// The entry's `headers` as HTTP headers; a name or value HTTP cannot carry is an error.
fn header_map(
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<std::collections::HashMap<::http::HeaderName, ::http::HeaderValue>, McpError> {
    headers
        .iter()
        .map(|(name, value)| {
            let header_name = ::http::HeaderName::try_from(name.as_str())
                .map_err(|_| McpError::InvalidHeader(name.clone()))?;
            let header_value = ::http::HeaderValue::try_from(value.as_str())
                .map_err(|_| McpError::InvalidHeader(name.clone()))?;
            Ok((header_name, header_value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use rmcp::model::{ClientRequest, JsonRpcMessage, NumberOrString, PingRequest};

    use super::*;

    /// Hands out the frames it was given, then ends; counts the reads.
    struct Script {
        frames: VecDeque<Frame>,
        reads: usize,
    }

    impl RawTransport for Script {
        type Error = std::io::Error;

        fn name() -> Cow<'static, str> {
            "Script".into()
        }

        fn send(
            &mut self,
            _: ClientJsonRpcMessage,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::ready(Ok(()))
        }

        async fn receive(&mut self) -> Option<Frame> {
            self.reads += 1;
            self.frames.pop_front()
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn answer(id: i64) -> Vec<u8> {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#).into_bytes()
    }

    fn judged(frames: Vec<Frame>) -> Judged<Script> {
        let script = Script {
            frames: frames.into(),
            reads: 0,
        };
        Judged::new(script, Incoming::default(), "scripted")
    }

    #[tokio::test]
    async fn every_frame_is_judged_whichever_way_it_came() {
        let parsed: ServerJsonRpcMessage = serde_json::from_slice(&answer(1)).unwrap();
        let mut transport = judged(vec![
            Frame::Noise(String::from("a ping")),
            Frame::Bytes(b"Server listening on stdio".to_vec()),
            Frame::Bytes(answer(1)),
            Frame::Parsed(Box::new(parsed)),
        ]);
        let ping = ClientJsonRpcMessage::request(
            ClientRequest::PingRequest(PingRequest::default()),
            NumberOrString::Number(1),
        );
        Transport::<RoleClient>::send(&mut transport, ping)
            .await
            .unwrap();
        let first = Transport::<RoleClient>::receive(&mut transport).await;
        assert!(matches!(first, Some(JsonRpcMessage::Response(_))));
        // The same answer again, parsed by the transport: a repeat is skipped.
        assert!(
            Transport::<RoleClient>::receive(&mut transport)
                .await
                .is_none()
        );
        assert_eq!(
            transport.raw.reads, 5,
            "noise and banners skipped, then the end"
        );
    }

    #[tokio::test]
    async fn an_answer_to_a_request_never_sent_ends_the_connection_for_good() {
        for hostile in [
            Frame::Bytes(answer(99)),
            Frame::Parsed(Box::new(serde_json::from_slice(&answer(99)).unwrap())),
        ] {
            let mut transport = judged(vec![hostile, Frame::Bytes(answer(1))]);
            assert!(
                Transport::<RoleClient>::receive(&mut transport)
                    .await
                    .is_none()
            );
            assert!(
                Transport::<RoleClient>::receive(&mut transport)
                    .await
                    .is_none()
            );
            assert_eq!(
                transport.raw.reads, 1,
                "nothing is read after the judge closed"
            );
            assert!(transport.incoming.fault().is_some_and(|f| f.contains("99")));
        }
    }
}

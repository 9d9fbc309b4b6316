//! What a server sends, checked before rmcp sees it. rmcp drops a message it cannot parse
//! and waits on, so a server that answers with invalid UTF-8, with the wrong id or with
//! JSON nested past serde_json's limit leaves the call hanging until its tool timeout.
//! Here such an answer fails its call at once with a message that says what was wrong,
//! and a server that breaks the protocol beyond that is disconnected (and restarted at the
//! next call).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{
    ClientJsonRpcMessage, ErrorCode, ErrorData, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
    ServerNotification,
};
use tokio::sync::watch;

/// The error code of a synthesized answer to a call whose real answer was unreadable.
pub(super) const UNREADABLE_ANSWER: ErrorCode = ErrorCode(-32_098);

/// What to do with one message from the server.
#[derive(Debug)]
pub(super) enum Verdict {
    /// Hand it to rmcp (possibly an error answer standing in for an unreadable one).
    Deliver(Box<ServerJsonRpcMessage>),
    /// Ignore it (text a server printed on stdout, a notification antler does not know).
    Skip(String),
    /// The server broke the protocol: close the connection, for this reason.
    Close(String),
}

/// The ids of the requests sent and not answered yet, the reason the connection was
/// closed, if it was, and where a changed tool list is announced. Shared by a transport
/// and the server that owns it.
#[derive(Debug, Clone, Default)]
pub(super) struct Incoming {
    ids: Arc<Mutex<Ids>>,
    fault: Arc<OnceLock<String>>,
    changes: Option<watch::Sender<u64>>,
    /// Set by `prompts/list_changed`, as it is read (see [`Incoming::announcing`]).
    prompts_changed: Arc<std::sync::atomic::AtomicBool>,
}

/// Request ids by what became of them.
#[derive(Debug, Default)]
struct Ids {
    outstanding: HashSet<RequestId>,
    answered: HashSet<RequestId>,
}

impl Ids {
    /// Marks `id` answered; whether it was waiting for its answer.
    fn answer(&mut self, id: &RequestId) -> bool {
        let waiting = self.outstanding.remove(id);
        if waiting {
            self.answered.insert(id.clone());
        }
        waiting
    }
}

/// Just enough of a message to know what it answers: the top-level `id` and `method` of
/// an object, found by a flat scan that no nesting depth or bad byte further on can stop.
#[derive(Debug, Default, PartialEq)]
struct Probe {
    id: Option<RequestId>,
    method: Option<String>,
}

impl Probe {
    fn of(text: &str) -> Self {
        let mut probe = Self::default();
        let mut scan = Scan {
            bytes: text.as_bytes(),
            at: 0,
        };
        scan.skip_ws();
        if !scan.eat(b'{') {
            return probe;
        }
        loop {
            scan.skip_ws();
            let Some(key) = scan.string() else {
                return probe;
            };
            scan.skip_ws();
            if !scan.eat(b':') {
                return probe;
            }
            scan.skip_ws();
            let start = scan.at;
            scan.skip_value();
            let raw = text.get(start..scan.at.min(text.len())).unwrap_or_default();
            match key.as_str() {
                "id" => probe.id = serde_json::from_str(raw).ok(),
                "method" => probe.method = serde_json::from_str(raw).ok(),
                _ => {}
            }
            scan.skip_ws();
            if !scan.eat(b',') {
                return probe;
            }
        }
    }
}

/// A cursor over JSON text that skips values without recursing.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    /// Skips a string starting here (at its `"`).
    fn skip_string(&mut self) {
        self.at += 1;
        while let Some(byte) = self.peek() {
            self.at += 1;
            match byte {
                b'\\' => self.at += 1,
                b'"' => return,
                _ => {}
            }
        }
    }

    /// A string value starting here, decoded.
    fn string(&mut self) -> Option<String> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.at;
        self.skip_string();
        let raw = self.bytes.get(start..self.at)?;
        serde_json::from_slice(raw).ok()
    }

    /// Skips one value of any depth: brackets are counted, not followed.
    fn skip_value(&mut self) {
        let mut depth = 0usize;
        while let Some(byte) = self.peek() {
            match byte {
                b'"' => {
                    self.skip_string();
                    if depth == 0 {
                        return;
                    }
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth == 0 => return,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.at += 1;
                        return;
                    }
                }
                b',' if depth == 0 => return,
                _ => {}
            }
            self.at += 1;
        }
    }
}

impl Incoming {
    /// Bumps `changes` whenever the server announces `tools/list_changed`. It is bumped
    /// here, as the message is read, rather than in rmcp's handler, which runs in a task
    /// of its own: so the change is seen before the answer the server sent after it (a
    /// tool that changes the tool list is followed by a step that sees the new list).
    pub(super) fn announcing(changes: watch::Sender<u64>) -> Self {
        Self {
            changes: Some(changes),
            ..Self::default()
        }
    }

    /// Set whenever the server announces `prompts/list_changed`; whoever lists the
    /// prompts again clears it.
    pub(super) fn prompts_changed(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.prompts_changed.clone()
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, Ids> {
        self.ids
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes a message antler sends: a request's id is now expected back.
    pub(super) fn sent(&self, message: &ClientJsonRpcMessage) {
        if let JsonRpcMessage::Request(request) = message {
            self.ids().outstanding.insert(request.id.clone());
        }
    }

    /// Why the connection was closed by [`Verdict::Close`], once it was.
    pub(super) fn fault(&self) -> Option<&str> {
        self.fault.get().map(String::as_str)
    }

    /// Records `reason` as the fault and returns the verdict that closes.
    fn close(&self, reason: String) -> Verdict {
        let _ = self.fault.set(reason.clone());
        Verdict::Close(reason)
    }

    /// Judges one message (a line of stdio, the data of an SSE event).
    pub(super) fn judge(&self, bytes: &[u8]) -> Verdict {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let parsed = std::str::from_utf8(bytes)
            .map_err(|e| format!("it is not valid UTF-8 (at byte {})", e.valid_up_to()))
            .and_then(|text| {
                serde_json::from_str::<ServerJsonRpcMessage>(text).map_err(|e| e.to_string())
            });
        match parsed {
            Ok(message) => self.check_id(message),
            Err(problem) => self.unreadable(bytes, problem),
        }
    }

    /// A message a transport parsed itself: an answer must answer a request antler sent.
    pub(super) fn check_id(&self, message: ServerJsonRpcMessage) -> Verdict {
        let answered = match &message {
            JsonRpcMessage::Response(response) => Some(Some(response.id.clone())),
            JsonRpcMessage::Error(error) => Some(error.id.clone()),
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => None,
        };
        if let JsonRpcMessage::Notification(notification) = &message
            && matches!(
                notification.notification,
                ServerNotification::ToolListChangedNotification(_)
            )
            && let Some(changes) = &self.changes
        {
            changes.send_modify(|generation| *generation += 1);
        }
        if let JsonRpcMessage::Notification(notification) = &message
            && matches!(
                notification.notification,
                ServerNotification::PromptListChangedNotification(_)
            )
        {
            self.prompts_changed
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let Some(Some(id)) = answered else {
            return Verdict::Deliver(Box::new(message));
        };
        let mut ids = self.ids();
        if ids.answer(&id) {
            Verdict::Deliver(Box::new(message))
        } else if ids.answered.contains(&id) {
            // A stream replayed after a reconnect may repeat an answer.
            Verdict::Skip(format!("a repeated answer to request {id}"))
        } else {
            drop(ids);
            self.close(format!("it answered request {id}, which antler never sent"))
        }
    }

    /// A message that did not parse: if it answers a request antler is waiting on, that
    /// call fails with `problem`; anything else is skipped, as rmcp would (servers print
    /// banners and JSON logs on stdout).
    fn unreadable(&self, bytes: &[u8], problem: String) -> Verdict {
        let text = String::from_utf8_lossy(bytes);
        match Probe::of(&text) {
            Probe {
                id: Some(id),
                method: None,
            } if self.ids().answer(&id) => {
                let error = ErrorData::new(
                    UNREADABLE_ANSWER,
                    format!("its answer cannot be read: {problem}"),
                    None,
                );
                Verdict::Deliver(Box::new(JsonRpcMessage::error(error, Some(id))))
            }
            Probe {
                method: Some(method),
                ..
            } => Verdict::Skip(format!("an unreadable `{method}` message: {problem}")),
            _ => Verdict::Skip(format!(
                "not a JSON-RPC message ({problem}): {}",
                preview(&text)
            )),
        }
    }
}

/// The start of `text`, for logs.
fn preview(text: &str) -> String {
    let mut out: String = text.chars().take(120).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ClientRequest, NumberOrString, PingRequest};

    use super::*;

    fn incoming_with_request(id: i64) -> Incoming {
        let incoming = Incoming::default();
        let request = ClientJsonRpcMessage::request(
            ClientRequest::PingRequest(PingRequest::default()),
            NumberOrString::Number(id),
        );
        incoming.sent(&request);
        incoming
    }

    fn answer_error(verdict: Verdict) -> String {
        match verdict {
            Verdict::Deliver(message) => match *message {
                JsonRpcMessage::Error(error) => error.error.message.to_string(),
                other => panic!("not an error answer: {other:?}"),
            },
            other => panic!("not delivered: {other:?}"),
        }
    }

    #[test]
    fn good_answers_are_delivered_once() {
        let incoming = incoming_with_request(3);
        let answer = br#"{"jsonrpc":"2.0","id":3,"result":{}}"#;
        assert!(matches!(incoming.judge(answer), Verdict::Deliver(_)));
        assert!(
            matches!(incoming.judge(answer), Verdict::Skip(_)),
            "a repeat"
        );
        assert!(incoming.fault().is_none());
    }

    #[test]
    fn a_changed_tool_list_is_counted_as_it_is_read() {
        let (changes, seen) = watch::channel(0u64);
        let incoming = Incoming::announcing(changes);
        let verdict =
            incoming.judge(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#);
        assert!(matches!(verdict, Verdict::Deliver(_)), "{verdict:?}");
        assert_eq!(*seen.borrow(), 1, "bumped before rmcp sees the message");
        incoming.judge(br#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}"#);
        assert_eq!(*seen.borrow(), 1, "other notifications do not count");
        let prompts = incoming.prompts_changed();
        assert!(!prompts.load(std::sync::atomic::Ordering::Relaxed));
        incoming.judge(br#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#);
        assert!(prompts.load(std::sync::atomic::Ordering::Relaxed));
        assert_eq!(*seen.borrow(), 1);
    }

    #[test]
    fn a_wrong_id_closes_the_connection() {
        let incoming = incoming_with_request(3);
        let verdict = incoming.judge(br#"{"jsonrpc":"2.0","id":99,"result":{}}"#);
        let Verdict::Close(reason) = verdict else {
            panic!("{verdict:?}");
        };
        assert!(
            reason.contains("request 99, which antler never sent"),
            "{reason}"
        );
    }

    #[test]
    fn an_unreadable_answer_fails_its_own_call() {
        let incoming = incoming_with_request(4);
        let mut bad =
            br#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"#.to_vec();
        bad.extend_from_slice(b"\"\xff\xfe\"}]}}");
        let message = answer_error(incoming.judge(&bad));
        assert!(message.contains("not valid UTF-8"), "{message}");

        let incoming = incoming_with_request(5);
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":5,"result":{{"structuredContent":{}{}}}}}"#,
            "[".repeat(500),
            "]".repeat(500)
        );
        let message = answer_error(incoming.judge(deep.as_bytes()));
        assert!(message.contains("recursion limit"), "{message}");

        let incoming = incoming_with_request(6);
        let deep_first = format!(
            r#"{{"jsonrpc":"2.0","result":{}{},"id":6}}"#,
            "{\"a\":".repeat(300),
            "}".repeat(300)
        );
        let message = answer_error(incoming.judge(deep_first.as_bytes()));
        assert!(
            message.contains("recursion limit"),
            "the id after the depth: {message}"
        );
    }

    #[test]
    fn the_probe_finds_top_level_ids_only() {
        let probe = Probe::of(r#"{"result":{"id":1,"s":"}\""},"id":"x","method":"m"}"#);
        assert_eq!(probe.id, Some(RequestId::String("x".into())));
        assert_eq!(probe.method.as_deref(), Some("m"));
        assert_eq!(Probe::of("[1, 2]"), Probe::default());
        assert_eq!(
            Probe::of("{\"id\": 7"),
            Probe {
                id: Some(RequestId::Number(7)),
                method: None
            }
        );
        assert_eq!(Probe::of(""), Probe::default());
    }

    #[test]
    fn noise_and_unknown_notifications_are_skipped() {
        let incoming = Incoming::default();
        for noise in [
            &b"Server listening on stdio"[..],
            b"[dotenv@17.2.0] injecting env (3) from .env",
            br#"{"level":30,"time":1,"msg":"started"}"#,
            br#"{"jsonrpc":"2.0","id":5,"method":"elicitation/brandNew","params":"#,
        ] {
            assert!(
                matches!(incoming.judge(noise), Verdict::Skip(_)),
                "{noise:?}"
            );
        }
        assert!(matches!(
            incoming.judge(br#"{"jsonrpc":"2.0","method":"custom/thing","params":{"x":1}}"#),
            Verdict::Deliver(_) | Verdict::Skip(_)
        ));
        assert!(incoming.fault().is_none());
    }
}

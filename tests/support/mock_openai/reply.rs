//! Scripted replies and builders for realistic OpenAI chat-completion streams.

use serde_json::{Value, json};

/// The model name the mock reports in every chunk and in `GET /v1/models`.
pub(crate) const MODEL: &str = "mock-model";

/// The prompt size `Reply::text` and `Reply::tool_calls` report in their usage chunk.
pub(crate) const DEFAULT_PROMPT_TOKENS: u64 = 42;

/// One scripted answer to one `POST /v1/chat/completions`.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// An SSE stream: each string is the JSON of one `data:` event, then `data: [DONE]`.
    Stream(Vec<String>),
    /// An SSE stream that sends these events and then drops the connection (no [DONE]).
    Cut(Vec<String>),
    /// An SSE stream that sends these events then stays silent without closing (for idle
    /// timeouts); it ends when the client hangs up or the `MockOpenAi` is dropped.
    Stall(Vec<String>),
    /// A plain HTTP error response.
    Status {
        /// The HTTP status code.
        status: u16,
        /// The response body (served as `application/json` when it parses as JSON).
        body: String,
        /// The `Retry-After` header value, if any.
        retry_after: Option<String>,
    },
    /// A non-streaming JSON response.
    Json(Value),
    /// An SSE body written exactly as given, each piece after its pause (a recorded
    /// stream with its keep-alive comments; pieces are raw SSE text, `data:` lines and
    /// `: comment` lines alike, and end the body with whatever they end with).
    Paced(Vec<(std::time::Duration, String)>),
    /// An SSE stream that sends these events, then only `: keep-alive` comments, one every
    /// `every`, until the client hangs up (a broken proxy, or a server that never answers).
    KeepAlive {
        /// The `data:` events sent first.
        events: Vec<String>,
        /// The pause between two comments.
        every: std::time::Duration,
    },
}

impl Reply {
    /// A realistic text stream: a role chunk, the text in 2–3 content chunks, a
    /// `finish_reason: "stop"` chunk, then a usage chunk with empty `choices`
    /// (`DEFAULT_PROMPT_TOKENS` prompt tokens, about a token per 4 characters, none cached).
    pub(crate) fn text(text: &str) -> Self {
        Self::text_with_usage(text, DEFAULT_PROMPT_TOKENS, rough_tokens(text), 0)
    }

    /// `Reply::text` with the given usage figures.
    pub(crate) fn text_with_usage(
        text: &str,
        prompt_tokens: u64,
        completion_tokens: u64,
        cached: u64,
    ) -> Self {
        Self::Stream(text_events(text, prompt_tokens, completion_tokens, cached))
    }

    /// A realistic tool-call stream: per call a first delta with `index`, `id`, `type` and
    /// `function.name` and empty `arguments`, then the arguments JSON text in 2 fragments;
    /// then a `finish_reason: "tool_calls"` chunk and a usage chunk.
    pub(crate) fn tool_calls(calls: &[(&str, &str, Value)]) -> Self {
        Self::Stream(tool_call_events(calls))
    }

    /// An OpenAI-style error: `{"error": {"message", "type", "param", "code"}}`.
    pub(crate) fn error(status: u16, message: &str) -> Self {
        let kind = match status {
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            500..=599 => "server_error",
            _ => "invalid_request_error",
        };
        let body =
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}});
        Self::Status {
            status,
            body: body.to_string(),
            retry_after: None,
        }
    }
}

/// The events of `Reply::text_with_usage`, for tests that want to edit or cut them.
pub(crate) fn text_events(
    text: &str,
    prompt_tokens: u64,
    completion_tokens: u64,
    cached: u64,
) -> Vec<String> {
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    )];
    let pieces = split_chars(text, 3);
    for piece in pieces {
        events.push(chunk(json!({"content": piece}), None));
    }
    events.push(chunk(json!({}), Some("stop")));
    events.push(usage_chunk(prompt_tokens, completion_tokens, cached));
    events
}

/// The events of `Reply::tool_calls`, for tests that want to edit or cut them.
pub(crate) fn tool_call_events(calls: &[(&str, &str, Value)]) -> Vec<String> {
    let mut events = Vec::new();
    let mut completion_tokens = 0;
    for (index, (id, name, args)) in calls.iter().enumerate() {
        let call = json!({
            "index": index,
            "id": id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        });
        let delta = if index == 0 {
            json!({"role": "assistant", "content": null, "tool_calls": [call], "refusal": null})
        } else {
            json!({"tool_calls": [call]})
        };
        events.push(chunk(delta, None));
        let arguments = args.to_string();
        completion_tokens += rough_tokens(name) + rough_tokens(&arguments);
        for fragment in split_chars(&arguments, 2) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                None,
            ));
        }
    }
    events.push(chunk(json!({}), Some("tool_calls")));
    events.push(usage_chunk(DEFAULT_PROMPT_TOKENS, completion_tokens, 0));
    events
}

/// One `chat.completion.chunk` with a single choice.
pub(crate) fn chunk(delta: Value, finish_reason: Option<&str>) -> String {
    json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "system_fingerprint": "fp_mock",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        "usage": null,
    })
    .to_string()
}

/// The final usage chunk (`stream_options.include_usage`): empty `choices`.
pub(crate) fn usage_chunk(prompt_tokens: u64, completion_tokens: u64, cached: u64) -> String {
    json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "system_fingerprint": "fp_mock",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        },
    })
    .to_string()
}

/// About a token per 4 characters, at least 1.
fn rough_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4).max(1)
}

/// `text` in at most `parts` non-empty pieces of about equal length, split on char
/// boundaries; an empty text gives no pieces.
fn split_chars(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(parts.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

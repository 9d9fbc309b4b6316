//! Model providers: one trait the agent core calls, and its implementations (an
//! OpenAI-compatible chat-completions endpoint, and a replay of recorded turns for CI).
//!
//! A provider turns one [`ModelRequest`] into one [`ModelReply`], reporting streamed text
//! and reasoning as [`ModelEvent`]s while it arrives. Retries happen inside the provider;
//! the core sees either a complete reply or a final [`ProviderError`].

use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::{ErrorKind, FinishReason, Message, ToolCall, Usage};

pub mod embedded;
pub(crate) mod openai;
pub(crate) mod replay;
pub(crate) mod resolve;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod text_calls;

pub use openai::{OpenAiProvider, OpenAiSettings};
pub use replay::{RecordingProvider, ReplayProvider};
pub use resolve::{ResolveError, resolve_model};

/// A tool schema as bound to one model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// A JSON Schema object for its arguments.
    pub parameters: Value,
}

/// Everything one model call is given.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The system prompt, sent first (byte-identical within a thread).
    pub system: String,
    /// The conversation, oldest first.
    pub messages: Vec<Message>,
    /// The bound tools, in order.
    pub tools: Vec<ToolSpec>,
    /// The most tokens the answer may take, if limited (e.g. `doctor`'s one-token probe).
    pub max_tokens: Option<u32>,
    /// Tools the model may name besides the bound ones (the deferred ones: a call naming
    /// one promotes it): a tool call written as text may name them too. Shared with the
    /// catalog.
    pub callable: std::sync::Arc<[String]>,
}

impl ModelRequest {
    /// Whether a call may name `name`: a bound tool or a callable one.
    pub fn may_call(&self, name: &str) -> bool {
        self.tools.iter().any(|tool| tool.name == name) || self.callable.iter().any(|n| n == name)
    }
}

/// Something a provider reports while a call is under way.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    /// A piece of the answer's text.
    TextDelta(String),
    /// A piece of the model's reasoning (`reasoning_content`).
    ReasoningDelta(String),
    /// The call failed and will be tried again after `delay`; text streamed so far by this
    /// call is void.
    Retrying {
        /// The attempt about to start (2 for the first retry).
        attempt: u32,
        /// How long the provider waits first.
        delay: Duration,
        /// Why the previous attempt failed.
        reason: String,
    },
}

/// One complete model answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelReply {
    /// The answer's text (may be empty when it only calls tools).
    pub content: String,
    /// The reasoning text, when the server sends `reasoning_content`.
    pub reasoning: String,
    /// The tool calls, accumulated by index, in index order.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// Token usage, when the server reported it.
    pub usage: Option<Usage>,
    /// The tool calls were written as text and taken as calls (`tool_call_format`).
    pub from_text: bool,
}

/// Why a model call failed for good.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The endpoint answered with an error status after the last try.
    #[error("{endpoint}: HTTP {status}: {message}")]
    Status {
        /// As [`Provider::endpoint`] gives it (a base URL never with credentials).
        endpoint: String,
        /// 429 is a rate limit, 401 and 403 a refused key (see [`ProviderError::kind`]).
        status: u16,
        /// The server's error message.
        message: String,
    },
    /// The endpoint could not be reached, or the connection broke, after the last try.
    #[error("{endpoint}: {message}")]
    Transport {
        /// As [`Provider::endpoint`] gives it.
        endpoint: String,
        /// What went wrong.
        message: String,
    },
    /// The server sent something that is not a chat-completions stream.
    #[error("{endpoint}: invalid response: {message}")]
    Protocol {
        /// As [`Provider::endpoint`] gives it.
        endpoint: String,
        /// What was wrong.
        message: String,
    },
    /// The replay file has no turn left or cannot be read.
    #[error("replay {path}: {message}")]
    Replay {
        /// The replay file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

impl ProviderError {
    /// What kind of failure this is, for scripts and front-ends.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Status { status: 429, .. } => ErrorKind::RateLimit,
            Self::Status {
                status: 401 | 403, ..
            } => ErrorKind::Auth,
            Self::Status { message, .. } if is_context_length(message) => ErrorKind::ContextLength,
            Self::Status { .. } => ErrorKind::Endpoint,
            Self::Transport { .. } => ErrorKind::Transport,
            Self::Protocol { .. } | Self::Replay { .. } => ErrorKind::Protocol,
        }
    }
}

/// Whether an endpoint's error message says the prompt is too long (OpenAI's
/// `context_length_exceeded`, llama.cpp's "exceeds the available context size", ...).
fn is_context_length(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    [
        "context_length",
        "context length",
        "context size",
        "context window",
        "too many tokens",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

/// The future a model call returns.
pub type ReplyFuture<'a> = BoxFuture<'a, Result<ModelReply, ProviderError>>;

/// A chat model. Implementations retry what is worth retrying and never log secrets.
pub trait Provider: Send + Sync {
    /// Runs one call, reporting deltas to `events` as they arrive.
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a (dyn Fn(ModelEvent) + Send + Sync),
    ) -> ReplyFuture<'a>;

    /// The model's identifier, for threads, events and errors.
    fn model(&self) -> &str;

    /// Where the calls go (a base URL or a replay file), for errors and `doctor`.
    fn endpoint(&self) -> &str;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_have_kinds() {
        let status = |status, message: &str| ProviderError::Status {
            endpoint: String::from("e"),
            status,
            message: message.to_string(),
        };
        assert_eq!(status(429, "slow down").kind(), ErrorKind::RateLimit);
        assert_eq!(status(401, "bad key").kind(), ErrorKind::Auth);
        let long = "This model's maximum context length is 8192 tokens";
        assert_eq!(status(400, long).kind(), ErrorKind::ContextLength);
        assert_eq!(status(500, "boom").kind(), ErrorKind::Endpoint);
        let transport = ProviderError::Transport {
            endpoint: String::from("e"),
            message: String::from("refused"),
        };
        assert_eq!(transport.kind(), ErrorKind::Transport);
    }
}

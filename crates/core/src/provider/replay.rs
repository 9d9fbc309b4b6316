//! Recorded model turns: [`ReplayProvider`] plays a JSONL file of turns back (for CI and
//! tests, with no model at all), and [`RecordingProvider`] writes such a file from a real
//! provider's replies, so a session can be recorded once and replayed identically.
//!
//! One turn per line:
//! `{"content": "text", "reasoning": "...", "tool_calls": [{"id": "optional", "name":
//! "tool", "arguments": {..} or "raw string"}], "finish_reason": "stop", "usage":
//! {"input_tokens": 1, "cached_input_tokens": 0, "output_tokens": 1}}`. Only one of
//! `content` and `tool_calls` is required; blank lines and `#` comments are skipped.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ModelEvent, ModelReply, ModelRequest, Provider, ProviderError, ReplyFuture};
use crate::protocol::ToolCall;
use crate::protocol::{FinishReason, Usage};

/// One line of a replay file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnLine {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reasoning: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<CallLine>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finish_reason: Option<FinishReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<UsageLine>,
}

/// One tool call of a turn.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallLine {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    name: String,
    /// A JSON value, or a string holding the raw text the model wrote.
    #[serde(default)]
    arguments: Value,
}

/// Token usage of a turn; missing counts are 0.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct UsageLine {
    input_tokens: u64,
    cached_input_tokens: u64,
    output_tokens: u64,
}

impl TurnLine {
    /// The reply this line describes; `turn` (from 1) numbers generated call ids.
    fn into_reply(self, turn: usize) -> ModelReply {
        let tool_calls: Vec<ToolCall> = self
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, call)| ToolCall {
                id: call.id.unwrap_or_else(|| format!("call_{turn}_{}", i + 1)),
                name: call.name,
                arguments: match call.arguments {
                    Value::Null => String::from("{}"),
                    Value::String(text) => text,
                    other => other.to_string(),
                },
            })
            .collect();
        let finish_reason = self.finish_reason.unwrap_or(if tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        });
        ModelReply {
            content: self.content.unwrap_or_default(),
            reasoning: self.reasoning.unwrap_or_default(),
            tool_calls,
            finish_reason,
            usage: self.usage.map(|u| Usage {
                input_tokens: u.input_tokens,
                cached_input_tokens: u.cached_input_tokens,
                output_tokens: u.output_tokens,
            }),
            from_text: false,
        }
    }

    /// The line that replays as `reply`. Arguments are written as a JSON object when they
    /// are one (key order kept; replayed in compact form), else as the raw string, so a
    /// model's invalid arguments replay as they came.
    fn from_reply(reply: &ModelReply) -> Self {
        let calls = reply.tool_calls.iter().map(|call| CallLine {
            id: Some(call.id.clone()),
            name: call.name.clone(),
            arguments: match serde_json::from_str::<Value>(&call.arguments) {
                Ok(value) if value.is_object() => value,
                _ => Value::String(call.arguments.clone()),
            },
        });
        let has_calls = !reply.tool_calls.is_empty();
        Self {
            content: (!reply.content.is_empty() || !has_calls).then(|| reply.content.clone()),
            reasoning: (!reply.reasoning.is_empty()).then(|| reply.reasoning.clone()),
            tool_calls: has_calls.then(|| calls.collect()),
            finish_reason: Some(reply.finish_reason.clone()),
            usage: reply.usage.map(|u| UsageLine {
                input_tokens: u.input_tokens,
                cached_input_tokens: u.cached_input_tokens,
                output_tokens: u.output_tokens,
            }),
        }
    }
}

/// The most of a replay file that is read: a recording of hundreds of long turns.
const MAX_REPLAY_BYTES: u64 = 256 << 20;

/// A provider that plays recorded turns in order, for CI and tests without a model.
#[derive(Debug)]
pub struct ReplayProvider {
    path: String,
    turns: Vec<ModelReply>,
    next: AtomicUsize,
}

impl ReplayProvider {
    /// Reads every turn of the file; a bad line is an error naming `file:line` and field.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ProviderError> {
        let path = path.as_ref().display().to_string();
        let text = crate::base::bounded_read::read_to_string(
            Path::new(&path),
            MAX_REPLAY_BYTES,
            "a replay file",
        )
        .map_err(|error| ProviderError::Replay {
            path: path.clone(),
            message: format!("cannot read the file: {error}"),
        })?;
        let mut turns = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |message: String| ProviderError::Replay {
                path: format!("{path}:{}", index + 1),
                message,
            };
            let mut deserializer = serde_json::Deserializer::from_str(line);
            let turn: TurnLine =
                serde_path_to_error::deserialize(&mut deserializer).map_err(|error| match error
                    .path()
                    .to_string()
                    .as_str()
                {
                    "." => bad(error.inner().to_string()),
                    field => bad(format!("{field}: {}", error.inner())),
                })?;
            let has_calls = turn.tool_calls.as_ref().is_some_and(|c| !c.is_empty());
            if turn.content.is_none() && !has_calls {
                return Err(bad(String::from("a turn needs `content` or `tool_calls`")));
            }
            turns.push(turn.into_reply(turns.len() + 1));
        }
        Ok(Self {
            path,
            turns,
            next: AtomicUsize::new(0),
        })
    }
}

impl Provider for ReplayProvider {
    fn complete<'a>(
        &'a self,
        _request: &'a ModelRequest,
        events: &'a (dyn Fn(ModelEvent) + Send + Sync),
    ) -> ReplyFuture<'a> {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let turn = self.turns.get(index).cloned().ok_or_else(|| {
            let count = self.turns.len();
            ProviderError::Replay {
                path: self.path.clone(),
                message: format!(
                    "no turn left: the file holds {count} turn{}",
                    if count == 1 { "" } else { "s" }
                ),
            }
        });
        Box::pin(async move {
            let turn = turn?;
            if !turn.reasoning.is_empty() {
                events(ModelEvent::ReasoningDelta(turn.reasoning.clone()));
            }
            if !turn.content.is_empty() {
                events(ModelEvent::TextDelta(turn.content.clone()));
            }
            Ok(turn)
        })
    }

    fn model(&self) -> &str {
        "replay"
    }

    fn endpoint(&self) -> &str {
        &self.path
    }
}

/// A provider that forwards to another and appends each successful reply to a replay
/// file, so that the session can be replayed with [`ReplayProvider`].
pub struct RecordingProvider {
    inner: Arc<dyn Provider>,
    path: String,
    file: Mutex<File>,
}

impl RecordingProvider {
    /// Creates (or truncates) the file at `path` and records `inner`'s replies into it.
    pub fn create(path: impl AsRef<Path>, inner: Arc<dyn Provider>) -> Result<Self, ProviderError> {
        // Never through a link: a tool of an earlier run may have planted one. Owner-only:
        // it holds the model's replies.
        let file = crate::base::output_file::OutputFile::at_start(path.as_ref(), 0o600)
            .and_then(|file| file.create());
        let path = path.as_ref().display().to_string();
        let file = file.map_err(|error| ProviderError::Replay {
            path: path.clone(),
            message: format!("cannot create the file: {error}"),
        })?;
        Ok(Self {
            inner,
            path,
            file: Mutex::new(file),
        })
    }

    /// Appends one turn and flushes it, so a crash loses nothing already answered.
    fn append(&self, reply: &ModelReply) -> Result<(), ProviderError> {
        let failed = |message: String| ProviderError::Replay {
            path: self.path.clone(),
            message,
        };
        let mut line = serde_json::to_string(&TurnLine::from_reply(reply))
            .map_err(|error| failed(format!("cannot encode a turn: {error}")))?;
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(|error| failed(format!("cannot write: {error}")))
    }
}

impl Provider for RecordingProvider {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a (dyn Fn(ModelEvent) + Send + Sync),
    ) -> ReplyFuture<'a> {
        Box::pin(async move {
            let reply = self.inner.complete(request, events).await?;
            self.append(&reply)?;
            Ok(reply)
        })
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }
}

#[cfg(test)]
mod tests;

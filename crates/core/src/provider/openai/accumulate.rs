//! Builds one [`ModelReply`] from the chunks of a stream, reporting deltas as they come.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::chunk::{Chunk, ChunkUsage, ToolCallDelta};
use crate::protocol::ToolCall;
use crate::protocol::{FinishReason, Usage};
use crate::provider::{ModelEvent, ModelReply};

/// The most text one reply may carry (content, reasoning and tool calls): far beyond any
/// real answer, so that an endpoint streaming without end fails instead of exhausting
/// memory before the call's timeout.
const MAX_REPLY_BYTES: usize = 64 << 20;
/// The most tool calls one reply may carry.
const MAX_CALLS: usize = 1024;

/// A tool call still arriving.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The reply so far.
#[derive(Debug, Default)]
pub(super) struct Accumulator {
    content: String,
    reasoning: String,
    calls: BTreeMap<u64, PartialCall>,
    /// The slot an index-less fragment extends.
    last_slot: Option<u64>,
    finish_reason: Option<FinishReason>,
    usage: Option<Usage>,
    /// The bytes of text taken so far.
    size: usize,
}

impl Accumulator {
    /// Adds one chunk, reporting its text and reasoning to `events`. Returns the server's
    /// message when the chunk is an error report.
    pub(super) fn push(&mut self, chunk: Chunk, events: &dyn Fn(ModelEvent)) -> Result<(), String> {
        if let Some(error) = chunk.error {
            let message = error
                .get("message")
                .and_then(|m| m.as_str())
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(message);
        }
        if let Some(usage) = chunk.usage.and_then(usage_of) {
            self.usage = Some(usage);
        }
        for choice in chunk.choices {
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.reasoning_text() {
                    self.take(text.len())?;
                    self.reasoning.push_str(text);
                    events(ModelEvent::ReasoningDelta(text.to_string()));
                }
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    self.take(text.len())?;
                    self.content.push_str(&text);
                    events(ModelEvent::TextDelta(text));
                }
                for call in delta.tool_calls {
                    self.push_call(call)?;
                }
            }
            if let Some(reason) = choice
                .finish_reason
                .as_deref()
                .and_then(FinishReason::parse)
            {
                self.finish_reason = Some(reason);
            }
        }
        Ok(())
    }

    /// Adds a tool-call fragment to its slot. Without an `index`, a fragment with a new id
    /// starts the next call; any other extends the latest.
    /// Counts `bytes` more of the reply; an error past [`MAX_REPLY_BYTES`].
    fn take(&mut self, bytes: usize) -> Result<(), String> {
        self.size = self.size.saturating_add(bytes);
        if self.size > MAX_REPLY_BYTES {
            return Err(format!(
                "the reply grew past {} MiB, more than any answer antler takes",
                MAX_REPLY_BYTES >> 20
            ));
        }
        Ok(())
    }

    fn push_call(&mut self, delta: ToolCallDelta) -> Result<(), String> {
        let slot = match delta.index {
            Some(index) => index,
            None => {
                let latest = self
                    .last_slot
                    .and_then(|slot| Some((slot, self.calls.get(&slot)?)));
                match (latest, delta.id.as_deref()) {
                    (Some((slot, call)), Some(id)) if !call.id.is_empty() && call.id != id => {
                        slot + 1
                    }
                    (Some((slot, _)), _) => slot,
                    (None, _) => 0,
                }
            }
        };
        self.last_slot = Some(slot);
        if !self.calls.contains_key(&slot) && self.calls.len() >= MAX_CALLS {
            return Err(format!("the reply has more than {MAX_CALLS} tool calls"));
        }
        let size = delta.id.as_ref().map_or(0, String::len)
            + delta.function.as_ref().map_or(0, |f| {
                f.name.as_ref().map_or(0, String::len) + f.arguments.as_ref().map_or(0, String::len)
            });
        self.take(size)?;
        let call = self.calls.entry(slot).or_default();
        if let Some(id) = delta.id.filter(|id| !id.is_empty())
            && call.id.is_empty()
        {
            call.id = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty())
                && call.name.is_empty()
            {
                call.name = name;
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
        Ok(())
    }

    /// Whether the server said why it stopped (so the end of the stream is no cut).
    pub(super) fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The complete reply; calls without an id get `call_<n>` from `ids`.
    pub(super) fn finish(self, ids: &AtomicU64) -> ModelReply {
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_values()
            .map(|call| ToolCall {
                id: if call.id.is_empty() {
                    format!("call_{}", ids.fetch_add(1, Ordering::Relaxed))
                } else {
                    call.id
                },
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        let finish_reason = self.finish_reason.unwrap_or(if tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        });
        ModelReply {
            content: self.content,
            reasoning: self.reasoning,
            tool_calls,
            finish_reason,
            usage: self.usage,
            from_text: false,
        }
    }
}

/// Our usage from the server's; `None` when it reported no count at all (`usage: {}`).
fn usage_of(usage: ChunkUsage) -> Option<Usage> {
    let cached = usage
        .prompt_tokens_details
        .and_then(|details| details.cached_tokens)
        .or(usage.prompt_cache_hit_tokens);
    if usage.prompt_tokens.is_none() && usage.completion_tokens.is_none() && cached.is_none() {
        return None;
    }
    Some(Usage {
        input_tokens: usage.prompt_tokens.unwrap_or(0),
        cached_input_tokens: cached.unwrap_or(0),
        output_tokens: usage.completion_tokens.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&str]) -> (ModelReply, Vec<ModelEvent>) {
        let events = std::sync::Mutex::new(Vec::new());
        let mut acc = Accumulator::default();
        for text in chunks {
            let chunk: Chunk = serde_json::from_str(text).unwrap();
            acc.push(chunk, &|e| events.lock().unwrap().push(e))
                .unwrap();
        }
        (acc.finish(&AtomicU64::new(0)), events.into_inner().unwrap())
    }

    #[test]
    fn parallel_calls_accumulate_by_index_in_order() {
        let (reply, _) = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"g","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        let calls: Vec<_> = reply
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(calls, [("a", "f", r#"{"x":1}"#), ("b", "g", "{}")]);
        assert_eq!(reply.finish_reason, FinishReason::ToolCalls);
    }

    #[test]
    fn index_less_calls_split_on_new_ids_and_missing_ids_are_generated() {
        let (reply, _) = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":5,"function":{"name":"h"}}]}}]}"#,
        ]);
        let ids: Vec<_> = reply.tool_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "call_0"]);
        assert_eq!(reply.tool_calls[0].arguments, "{}");
        assert_eq!(reply.tool_calls[2].arguments, "");
        assert_eq!(reply.finish_reason, FinishReason::ToolCalls);
    }

    #[test]
    fn text_reasoning_and_usage_are_collected() {
        let (reply, events) = run(&[
            r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hel"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":1,"delta":{"content":"other choice"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_cache_hit_tokens":4}}"#,
        ]);
        assert_eq!(reply.content, "Hello");
        assert_eq!(reply.reasoning, "think");
        assert_eq!(
            reply.usage,
            Some(Usage {
                input_tokens: 10,
                cached_input_tokens: 4,
                output_tokens: 2
            })
        );
        assert_eq!(
            events,
            [
                ModelEvent::ReasoningDelta("think".into()),
                ModelEvent::TextDelta("Hel".into()),
                ModelEvent::TextDelta("lo".into()),
            ]
        );
    }

    #[test]
    fn an_error_chunk_is_reported() {
        let mut acc = Accumulator::default();
        let chunk: Chunk = serde_json::from_str(r#"{"error":{"message":"overloaded"}}"#).unwrap();
        assert_eq!(acc.push(chunk, &|_| {}), Err(String::from("overloaded")));
    }

    #[test]
    fn a_reply_without_end_is_refused_past_its_bounds() {
        let mut acc = Accumulator::default();
        let piece = "x".repeat(1 << 20);
        let text = format!(r#"{{"choices":[{{"delta":{{"content":"{piece}"}}}}]}}"#);
        let chunk = || serde_json::from_str::<Chunk>(&text).unwrap();
        for _ in 0..(MAX_REPLY_BYTES >> 20) {
            acc.push(chunk(), &|_| {}).unwrap();
        }
        let err = acc.push(chunk(), &|_| {}).unwrap_err();
        assert!(err.contains("grew past 64 MiB"), "{err}");

        let mut acc = Accumulator::default();
        for index in 0..MAX_CALLS {
            let text =
                format!(r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":{index}}}]}}}}]}}"#);
            acc.push(serde_json::from_str(&text).unwrap(), &|_| {})
                .unwrap();
        }
        let more = r#"{"choices":[{"delta":{"tool_calls":[{"index":99999}]}}]}"#;
        let err = acc
            .push(serde_json::from_str(more).unwrap(), &|_| {})
            .unwrap_err();
        assert!(err.contains("more than 1024 tool calls"), "{err}");
    }
}

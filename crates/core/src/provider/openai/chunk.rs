//! Lenient shapes of a streamed chat-completions chunk. OpenAI-compatible servers differ:
//! fields go missing, come as `null` or `""`, numbers come as floats, tool-call deltas
//! lack `index`, `function` or `arguments`. Everything here is optional and unknown fields
//! are ignored; only what the reply needs is read.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One `data:` event of the stream.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Chunk {
    /// The choices; only index 0 is used (antler never asks for `n > 1`).
    #[serde(deserialize_with = "null_default")]
    pub(super) choices: Vec<ChunkChoice>,
    /// Token usage, usually on the last chunk (with empty `choices`).
    pub(super) usage: Option<ChunkUsage>,
    /// An error some servers report inside the stream instead of an HTTP status.
    pub(super) error: Option<Value>,
}

/// One choice's delta.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ChunkChoice {
    /// The choice index (0 when absent).
    #[serde(deserialize_with = "lenient_u64")]
    pub(super) index: Option<u64>,
    /// What this chunk adds.
    pub(super) delta: Option<Delta>,
    /// Why the model stopped; `null` or `""` until it does.
    pub(super) finish_reason: Option<String>,
}

/// What one chunk adds to the reply.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Delta {
    /// Answer text.
    pub(super) content: Option<String>,
    /// Reasoning text (DeepSeek, vLLM, llama.cpp).
    pub(super) reasoning_content: Option<String>,
    /// Reasoning text under the name some other servers use (OpenRouter, Ollama).
    pub(super) reasoning: Option<String>,
    /// Tool-call fragments.
    #[serde(deserialize_with = "null_default")]
    pub(super) tool_calls: Vec<ToolCallDelta>,
}

impl Delta {
    /// The reasoning fragment, whichever name the server used.
    pub(super) fn reasoning_text(&self) -> Option<&str> {
        [&self.reasoning_content, &self.reasoning]
            .into_iter()
            .find_map(|text| text.as_deref().filter(|t| !t.is_empty()))
    }
}

/// A fragment of one tool call.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ToolCallDelta {
    /// Which call this extends; absent on some servers.
    #[serde(deserialize_with = "lenient_u64")]
    pub(super) index: Option<u64>,
    /// The call id, usually on the first fragment only.
    pub(super) id: Option<String>,
    /// The function name and an arguments fragment.
    pub(super) function: Option<FunctionDelta>,
}

/// The function part of a tool-call fragment.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct FunctionDelta {
    /// The tool name, usually on the first fragment only.
    pub(super) name: Option<String>,
    /// A piece of the arguments' JSON text (an object from some servers, kept as text).
    #[serde(deserialize_with = "text_or_json")]
    pub(super) arguments: Option<String>,
}

/// Token counts as the servers send them.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ChunkUsage {
    /// Prompt tokens, cached included.
    #[serde(deserialize_with = "lenient_u64")]
    pub(super) prompt_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient_u64")]
    pub(super) completion_tokens: Option<u64>,
    /// OpenAI's cache report.
    pub(super) prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek's cache report.
    #[serde(deserialize_with = "lenient_u64")]
    pub(super) prompt_cache_hit_tokens: Option<u64>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct PromptDetails {
    /// Prompt tokens served from the cache.
    #[serde(deserialize_with = "lenient_u64")]
    pub(super) cached_tokens: Option<u64>,
}

/// `null` as the type's default (serde's `default` covers only a missing field).
fn null_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A count that may come as an integer, a float or `null`; anything else is absent.
fn lenient_u64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(|f| f as u64)
        }),
        _ => None,
    })
}

/// Text as is; any other JSON value as its serialisation; `null` as absent.
fn text_or_json<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(deserializer)? {
        Value::Null => None,
        Value::String(text) => Some(text),
        other => Some(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Chunk {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn sparse_and_null_fields_parse() {
        let chunk = parse(r#"{"choices":null,"usage":null}"#);
        assert!(chunk.choices.is_empty() && chunk.usage.is_none());
        let chunk = parse(r#"{"created":1.7e9,"choices":[{"delta":{"content":"hi"}}],"x":1}"#);
        assert_eq!(chunk.choices[0].index, None);
        assert_eq!(
            chunk.choices[0].delta.as_ref().unwrap().content.as_deref(),
            Some("hi")
        );
        let chunk = parse(r#"{"choices":[{"delta":null,"finish_reason":""}],"usage":{}}"#);
        assert!(chunk.choices[0].delta.is_none());
        assert!(chunk.usage.unwrap().prompt_tokens.is_none());
    }

    #[test]
    fn tool_call_fragments_tolerate_gaps() {
        let chunk = parse(
            r#"{"choices":[{"delta":{"tool_calls":[
                {"id":"a","function":{"name":"f"}},
                {"index":1.0,"function":{"arguments":{"k":1}}},
                {"index":2}
            ]}}]}"#,
        );
        let calls = &chunk.choices[0].delta.as_ref().unwrap().tool_calls;
        assert_eq!(calls[0].index, None);
        assert_eq!(calls[0].function.as_ref().unwrap().arguments, None);
        assert_eq!(calls[1].index, Some(1));
        let args = calls[1].function.as_ref().unwrap().arguments.as_deref();
        assert_eq!(args, Some(r#"{"k":1}"#));
        assert!(calls[2].function.is_none());
    }

    #[test]
    fn reasoning_comes_under_either_name() {
        let delta: Delta = serde_json::from_str(r#"{"reasoning":"r"}"#).unwrap();
        assert_eq!(delta.reasoning_text(), Some("r"));
        let delta: Delta =
            serde_json::from_str(r#"{"reasoning_content":"a","reasoning":"a"}"#).unwrap();
        assert_eq!(delta.reasoning_text(), Some("a"));
        let delta: Delta = serde_json::from_str(r#"{"reasoning_content":""}"#).unwrap();
        assert_eq!(delta.reasoning_text(), None);
    }
}

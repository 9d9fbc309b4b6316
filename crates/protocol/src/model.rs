//! What a model call reports: token usage and why it stopped.

use serde::{Deserialize, Serialize};

/// Token usage of one call (or a sum of calls).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    pub cached_input_tokens: u64,
    /// Completion tokens, reasoning included.
    pub output_tokens: u64,
}

impl Usage {
    /// Adds `other` to this total.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
    }

    /// This total without `other` (never below zero).
    pub fn minus(&self, other: &Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(other.input_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_sub(other.cached_input_tokens),
            output_tokens: self.output_tokens.saturating_sub(other.output_tokens),
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end (also assumed when the server sends none).
    #[default]
    Stop,
    /// It wants its tool calls run.
    ToolCalls,
    /// It hit the token limit: the answer is cut.
    Length,
    /// The provider's filter stopped it.
    ContentFilter,
    /// Anything else the server said.
    #[serde(untagged)]
    Other(String),
}

impl FinishReason {
    /// Parses a server's `finish_reason`; empty means none.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "" => return None,
            "stop" | "end_turn" | "eos" => Self::Stop,
            "tool_calls" | "function_call" | "tool_use" => Self::ToolCalls,
            "length" | "max_tokens" => Self::Length,
            "content_filter" => Self::ContentFilter,
            other => Self::Other(other.to_string()),
        })
    }
}

//! Summarisation: when the history grows past a token budget, the model summarises the
//! older messages and the summary replaces them. Unlike the other layers it makes a model
//! call of its own, so the runner awaits it before the chain's `before_model` hooks.
//!
//! Promoted tools live in the thread state, not in the messages, so they survive.

use crate::protocol::Message;
use crate::protocol::Usage;
use crate::provider::{ModelRequest, Provider, ProviderError};

/// The instructions for the summarising call.
const SUMMARY_PROMPT: &str = "You compress conversations between a user and an AI agent. \
Write a summary of the conversation below that lets the agent continue the work without it: \
the user's goals and constraints, decisions made, facts and results found (names, paths, \
numbers, identifiers verbatim), tools used and what they returned, and what is still open. \
Write plain prose and short lists, no preamble.";

/// How many characters of one message the summarising call sees.
const MESSAGE_CHARS: usize = 4_000;

/// When and how much to summarise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summarization {
    /// The history size in tokens that triggers a summary.
    pub trigger_tokens: u64,
    /// How many recent messages are kept verbatim (a few more when needed not to split a
    /// tool call from its results).
    pub keep_messages: usize,
}

/// A cheap token estimate (about four characters a token), for deciding when to summarise
/// between the provider's exact counts.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    let chars: usize = messages
        .iter()
        .map(|m| match m {
            Message::User { content } | Message::Summary { content } => content.len(),
            // Providers count an image as a fixed block of tokens, roughly this many chars.
            Message::Images { content, images } => content.len() + images.len() * 3_000,
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                content.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.len())
                        .sum::<usize>()
            }
            Message::Tool { content, .. } => content.len(),
        })
        .sum();
    (chars / 4 + messages.len() * 4) as u64
}

impl Summarization {
    /// Where to cut, given the history's size in tokens: the messages before the returned
    /// index are summarised. `None` below the trigger, or when too little would be summarised.
    /// The cut never lands on a tool result, so a call and its results stay together.
    pub fn cut_point(&self, messages: &[Message], tokens: u64) -> Option<usize> {
        if tokens < self.trigger_tokens {
            return None;
        }
        let mut cut = messages.len().saturating_sub(self.keep_messages.max(1));
        while cut > 0 && matches!(messages[cut], Message::Tool { .. }) {
            cut -= 1;
        }
        // One message (say, an earlier summary) alone is not worth a call.
        (cut >= 2).then_some(cut)
    }

    /// The request that asks the model for a summary of `older`.
    pub fn request(older: &[Message]) -> ModelRequest {
        let mut transcript = String::new();
        for message in older {
            let (who, text) = match message {
                Message::User { content } => ("User", content.clone()),
                Message::Summary { content } => ("Summary of earlier messages", content.clone()),
                Message::Images { content, .. } => ("Images shown to the agent", content.clone()),
                Message::Assistant {
                    content,
                    tool_calls,
                    ..
                } => {
                    let mut text = content.clone();
                    for call in tool_calls {
                        text.push_str(&format!("\n[calls {}({})]", call.name, call.arguments));
                    }
                    ("Agent", text)
                }
                Message::Tool {
                    name,
                    content,
                    is_error,
                    ..
                } => (
                    if *is_error {
                        "Tool error"
                    } else {
                        "Tool result"
                    },
                    format!("{name}: {content}"),
                ),
            };
            transcript.push_str(&format!("## {who}\n{}\n\n", clip(&text, MESSAGE_CHARS)));
        }
        ModelRequest {
            system: SUMMARY_PROMPT.to_string(),
            messages: vec![Message::User {
                content: format!("<conversation>\n{transcript}</conversation>"),
            }],
            tools: Vec::new(),
            max_tokens: Some(2_000),
            callable: Default::default(),
        }
    }

    /// Asks `provider` for a summary of `older`; returns it with the call's token usage.
    pub async fn summarize(
        provider: &dyn Provider,
        older: &[Message],
    ) -> Result<(String, Option<Usage>), ProviderError> {
        let request = Self::request(older);
        let reply = provider.complete(&request, &|_| {}).await?;
        Ok((reply.content.trim().to_string(), reply.usage))
    }

    /// Replaces the messages before `cut` with one summary message.
    pub fn apply(messages: &mut Vec<Message>, cut: usize, summary: String) {
        messages.splice(..cut, [Message::Summary { content: summary }]);
    }
}

/// `text` cut to at most `max` bytes on a char boundary, marking the cut.
fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more characters]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;

    fn history() -> Vec<Message> {
        vec![
            Message::User {
                content: "zero".into(),
            },
            Message::Assistant {
                content: "ok".into(),
                reasoning: String::new(),
                tool_calls: Vec::new(),
            },
            Message::User {
                content: "first".into(),
            },
            Message::Assistant {
                content: "calling".into(),
                reasoning: String::new(),
                tool_calls: vec![
                    ToolCall {
                        id: "a".into(),
                        name: "t".into(),
                        arguments: "{}".into(),
                    },
                    ToolCall {
                        id: "b".into(),
                        name: "t".into(),
                        arguments: "{}".into(),
                    },
                ],
            },
            Message::Tool {
                call_id: "a".into(),
                name: "t".into(),
                content: "ra".into(),
                is_error: false,
            },
            Message::Tool {
                call_id: "b".into(),
                name: "t".into(),
                content: "rb".into(),
                is_error: false,
            },
            Message::Assistant {
                content: "done".into(),
                reasoning: String::new(),
                tool_calls: Vec::new(),
            },
            Message::User {
                content: "next".into(),
            },
        ]
    }

    #[test]
    fn below_the_trigger_nothing_happens() {
        let s = Summarization {
            trigger_tokens: 100,
            keep_messages: 2,
        };
        assert_eq!(s.cut_point(&history(), 99), None);
        assert_eq!(s.cut_point(&history(), 100), Some(6));
    }

    #[test]
    fn the_cut_never_separates_a_call_from_its_results() {
        let s = Summarization {
            trigger_tokens: 0,
            keep_messages: 3,
        };
        // Keeping 3 would start at the second tool result: move back to the assistant call.
        assert_eq!(s.cut_point(&history(), 10), Some(3));
        let s = Summarization {
            trigger_tokens: 0,
            keep_messages: 7,
        };
        assert_eq!(
            s.cut_point(&history(), 10),
            None,
            "only one message would go"
        );
        let s = Summarization {
            trigger_tokens: 0,
            keep_messages: 1,
        };
        let mut messages = history();
        let cut = s.cut_point(&messages, 10).unwrap();
        assert_eq!(cut, 7);
        Summarization::apply(&mut messages, cut, "sum".into());
        assert_eq!(messages.len(), 2);
        assert_eq!(
            messages[0],
            Message::Summary {
                content: "sum".into()
            }
        );
    }

    #[test]
    fn the_request_carries_the_transcript_clipped() {
        let mut messages = history();
        messages[2] = Message::User {
            content: "é".repeat(3_000),
        };
        let request = Summarization::request(&messages);
        let text = match &request.messages[0] {
            Message::User { content } => content.clone(),
            other => panic!("{other:?}"),
        };
        assert!(text.contains("[calls t({})]"));
        assert!(text.contains("Tool result\nt: ra"));
        assert!(
            text.contains("… [2000 more characters]"),
            "clipped on a char boundary"
        );
        assert!(request.tools.is_empty());
    }

    #[test]
    fn estimate_grows_with_content() {
        let small = estimate_tokens(&history());
        let mut more = history();
        more.push(Message::User {
            content: "x".repeat(400),
        });
        assert!(estimate_tokens(&more) >= small + 100);
    }
}

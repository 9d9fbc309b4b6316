//! Dangling tool calls: a call without a result (after an interrupt or a killed process)
//! would make every later request invalid, so it gets a placeholder result.

use std::collections::HashSet;

use crate::agent::middleware::{Layer, ModelCall};
use crate::agent::state::ThreadState;
use crate::protocol::Message;

/// The result a dangling call gets.
pub(crate) const PLACEHOLDER: &str = "Error: this tool call was interrupted before it returned a result; it may or may not \
     have taken effect. Check before repeating it.";

/// Before each model call, gives every tool call without a result a placeholder result,
/// placed right after the results its assistant message did get.
pub(crate) struct Dangling;

impl Layer for Dangling {
    fn name(&self) -> &'static str {
        "dangling_tool_calls"
    }

    fn before_model(&self, _state: &mut ThreadState, call: &mut ModelCall<'_>) {
        if patch_dangling(call.messages) > 0 {
            call.rewritten = true;
        }
    }
}

/// Inserts a placeholder result for every tool call that has none; returns how many.
pub(crate) fn patch_dangling(messages: &mut Vec<Message>) -> usize {
    let mut patched = 0;
    let mut i = 0;
    while i < messages.len() {
        let Message::Assistant { tool_calls, .. } = &messages[i] else {
            i += 1;
            continue;
        };
        let calls: Vec<(String, String)> = tool_calls
            .iter()
            .map(|c| (c.id.clone(), c.name.clone()))
            .collect();
        let mut end = i + 1;
        let mut answered = HashSet::new();
        while let Some(Message::Tool { call_id, .. }) = messages.get(end) {
            answered.insert(call_id.clone());
            end += 1;
        }
        let missing: Vec<Message> = calls
            .into_iter()
            .filter(|(id, _)| !answered.contains(id))
            .map(|(call_id, name)| Message::Tool {
                call_id,
                name,
                content: PLACEHOLDER.to_string(),
                is_error: true,
            })
            .collect();
        patched += missing.len();
        let added = missing.len();
        messages.splice(end..end, missing);
        i = end + added;
    }
    patched
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;

    fn assistant(ids: &[&str]) -> Message {
        Message::Assistant {
            content: String::new(),
            reasoning: String::new(),
            tool_calls: ids
                .iter()
                .map(|id| ToolCall {
                    id: id.to_string(),
                    name: format!("tool_{id}"),
                    arguments: "{}".into(),
                })
                .collect(),
        }
    }

    fn result(id: &str) -> Message {
        Message::Tool {
            call_id: id.into(),
            name: format!("tool_{id}"),
            content: "ok".into(),
            is_error: false,
        }
    }

    fn shape(messages: &[Message]) -> Vec<String> {
        messages
            .iter()
            .map(|m| match m {
                Message::User { .. } => "user".to_string(),
                Message::Assistant { tool_calls, .. } => format!("assistant({})", tool_calls.len()),
                Message::Tool {
                    call_id, is_error, ..
                } => format!("{}{call_id}", if *is_error { "!" } else { "" }),
                Message::Summary { .. } | Message::Images { .. } => "other".to_string(),
            })
            .collect()
    }

    #[test]
    fn missing_results_are_patched_in_place() {
        let mut messages = vec![
            Message::User {
                content: "hi".into(),
            },
            assistant(&["a", "b"]),
            result("a"),
            Message::User {
                content: "again".into(),
            },
            assistant(&["c"]),
        ];
        assert_eq!(patch_dangling(&mut messages), 2);
        assert_eq!(
            shape(&messages),
            [
                "user",
                "assistant(2)",
                "a",
                "!b",
                "user",
                "assistant(1)",
                "!c"
            ]
        );
        assert_eq!(patch_dangling(&mut messages), 0, "idempotent");
    }

    #[test]
    fn the_layer_marks_the_history_rewritten_only_when_it_patched() {
        let chain = crate::agent::middleware::Chain::new().with(Dangling);
        let mut state = ThreadState::default();
        let mut complete = vec![assistant(&["a"]), result("a")];
        assert!(
            !chain
                .prepare_model_call(&mut state, &mut complete, Vec::new())
                .1
        );
        let mut broken = vec![assistant(&["a"])];
        assert!(
            chain
                .prepare_model_call(&mut state, &mut broken, Vec::new())
                .1
        );
        assert_eq!(shape(&broken), ["assistant(1)", "!a"]);
    }
}

//! Loop detection: a model that repeats the same tool call with the same arguments is told
//! so, and if it keeps going the run stops instead of burning tokens.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::agent::middleware::{Layer, ModelTurn};
use crate::agent::state::{OutcomeChange, ThreadState};
use crate::protocol::{Message, ToolCall};
use crate::tools::{PreparedCall, ToolOutput};

/// Counts identical calls (same name, same arguments up to key order and whitespace) since
/// the latest user message. At `warn_at` the call still runs but its result carries a
/// warning for the model; at `stop_at` the reply's tool calls are dropped and the run stops.
pub(crate) struct LoopDetection {
    warn_at: usize,
    stop_at: usize,
}

impl Default for LoopDetection {
    /// Warn at the 3rd identical call, stop at the 5th.
    fn default() -> Self {
        Self {
            warn_at: 3,
            stop_at: 5,
        }
    }
}

/// A call's identity for counting: its name and canonical arguments.
fn signature(call: &ToolCall) -> String {
    let arguments = match serde_json::from_str::<Value>(&call.arguments) {
        Ok(value) => canonical(&value),
        Err(_) => call.arguments.trim().to_string(),
    };
    format!("{}\u{0}{arguments}", call.name)
}

/// JSON text with object keys sorted, so `{"a":1,"b":2}` and `{"b":2, "a":1}` match.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, String> =
                map.iter().map(|(k, v)| (k, canonical(v))).collect();
            let fields: Vec<String> = sorted
                .into_iter()
                .map(|(k, v)| format!("{}:{v}", Value::String(k.clone())))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

impl Layer for LoopDetection {
    fn name(&self) -> &'static str {
        "loop_detection"
    }

    fn after_model(&self, state: &mut ThreadState, turn: &mut ModelTurn<'_>) {
        let since_user = turn
            .history
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }))
            .map_or(0, |i| i + 1);
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for message in &turn.history[since_user..] {
            match message {
                Message::Assistant { tool_calls, .. } => {
                    for call in tool_calls {
                        *counts.entry(signature(call)).or_default() += 1;
                    }
                }
                // Calls made before a promotion (or a catalog change) may now turn out
                // differently: repeating them is not a loop.
                Message::Tool { call_id, .. } => match state.outcome_changes.get(call_id) {
                    Some(OutcomeChange::Catalog) => counts.clear(),
                    Some(OutcomeChange::Promoted(names)) => counts.retain(|signature, _| {
                        let name = signature.split('\u{0}').next().unwrap_or_default();
                        !names.iter().any(|n| n == name)
                    }),
                    None => {}
                },
                _ => {}
            }
        }
        let live: Vec<&String> = turn.history[since_user..]
            .iter()
            .filter_map(|m| match m {
                Message::Tool { call_id, .. } => Some(call_id),
                _ => None,
            })
            .collect();
        state
            .outcome_changes
            .retain(|call_id, _| live.contains(&call_id));
        let mut stop = None;
        for call in &turn.reply.tool_calls {
            let count = counts.entry(signature(call)).or_default();
            *count += 1;
            if *count >= self.stop_at {
                stop.get_or_insert_with(|| {
                    format!(
                        "loop detected: the model called '{}' {count} times with the same \
                         arguments ({})",
                        call.name,
                        shown_arguments(&call.arguments)
                    )
                });
            } else if *count >= self.warn_at {
                state.call_notes.insert(
                    call.id.clone(),
                    format!(
                        "Warning: you have now called '{}' {count} times with the same \
                         arguments. Repeating it will not give a different result; change the \
                         arguments, try another tool, or answer with what you have. The run \
                         stops at {} identical calls.",
                        call.name, self.stop_at
                    ),
                );
                turn.notices.push(format!(
                    "'{}' was called {count} times with the same arguments; the model was \
                     warned.",
                    call.name
                ));
            }
        }
        if let Some(reason) = stop {
            turn.reply.tool_calls.clear();
            turn.notices.push(format!("Stopped: {reason}."));
            turn.stop = Some(reason);
        }
    }

    fn after_tool(&self, state: &mut ThreadState, call: &PreparedCall, output: &mut ToolOutput) {
        if let Some(note) = state.call_notes.remove(&call.id) {
            output.content.push_str("\n\n");
            output.content.push_str(&note);
        }
    }
}

/// The arguments as the user is shown them: one line, at most [`SHOWN_ARGUMENTS`]
/// characters, control characters escaped.
fn shown_arguments(arguments: &str) -> String {
    let (mut shown, cut) = crate::base::text::short_line(arguments, SHOWN_ARGUMENTS);
    if cut {
        shown.push('…');
    }
    shown
}

/// How much of a looping call's arguments its error shows.
const SHOWN_ARGUMENTS: usize = 120;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::middleware::Chain;
    use crate::provider::ModelReply;

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "search".into(),
            arguments: arguments.into(),
        }
    }

    /// Plays `n` identical calls (arguments spelled differently) after a user message and
    /// returns the last turn's notices and stop reason, and the state.
    fn play(n: usize) -> (Vec<String>, Option<String>, ThreadState, ModelReply) {
        let chain = Chain::new().with(LoopDetection::default());
        let mut state = ThreadState::default();
        let mut history = vec![
            Message::User {
                content: "old".into(),
            },
            Message::Assistant {
                content: String::new(),
                reasoning: String::new(),
                tool_calls: vec![call("old", r#"{"q":"x"}"#)],
            },
            Message::User {
                content: "now".into(),
            },
        ];
        let spellings = [r#"{"q":"x","n":1}"#, r#"{"n":1, "q":"x"}"#];
        let mut last = (Vec::new(), None, ModelReply::default());
        for i in 0..n {
            let mut reply = ModelReply {
                tool_calls: vec![call(&format!("c{i}"), spellings[i % 2])],
                ..ModelReply::default()
            };
            let (notices, stop) = chain.finish_model_call(&mut state, &history, &mut reply);
            history.push(Message::Assistant {
                content: String::new(),
                reasoning: String::new(),
                tool_calls: reply.tool_calls.clone(),
            });
            last = (notices, stop, reply);
        }
        (last.0, last.1, state, last.2)
    }

    #[test]
    fn calls_made_before_their_tool_was_promoted_do_not_count() {
        let chain = Chain::new().with(LoopDetection::default());
        let mut state = ThreadState::default();
        let mut history = vec![Message::User {
            content: "time?".into(),
        }];
        let mut play = |state: &mut ThreadState, id: &str, output: ToolOutput| {
            let mut reply = ModelReply {
                tool_calls: vec![call(id, "{}")],
                ..ModelReply::default()
            };
            let (_, stop) = chain.finish_model_call(state, &history, &mut reply);
            history.push(Message::Assistant {
                content: String::new(),
                reasoning: String::new(),
                tool_calls: reply.tool_calls.clone(),
            });
            if let Some(call) = reply.tool_calls.first() {
                let out = chain.end_tool_call(state, &call.into(), 1, output);
                history.push(Message::Tool {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: out.content,
                    is_error: out.is_error,
                });
            }
            stop
        };
        let blocked = || ToolOutput::error("deferred");
        for i in 0..3 {
            assert_eq!(play(&mut state, &format!("b{i}"), blocked()), None);
        }
        // The fourth identical call's answer promotes the tool it names.
        let mut promoting = ToolOutput::error("deferred; now loaded");
        promoting.state_update = Some(Box::new(crate::tools::StateUpdate {
            promoted: Some(crate::tools::PromotedUpdate {
                catalog_hash: "h".into(),
                names: vec!["search".into()],
            }),
            ..Default::default()
        }));
        assert_eq!(play(&mut state, "b3", promoting), None);
        // Now the call runs: the four before do not make this a fifth.
        for i in 0..4 {
            assert_eq!(
                play(&mut state, &format!("r{i}"), ToolOutput::ok("12:00")),
                None
            );
        }
        let stop = play(&mut state, "r4", ToolOutput::ok("12:00"));
        assert!(
            stop.is_some(),
            "five identical calls after the change still stop"
        );
    }

    #[test]
    fn two_identical_calls_are_fine() {
        let (notices, stop, state, _) = play(2);
        assert!(notices.is_empty() && stop.is_none() && state.call_notes.is_empty());
    }

    #[test]
    fn the_third_identical_call_warns_the_model_through_its_result() {
        let (notices, stop, mut state, reply) = play(3);
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(stop.is_none());
        let chain = Chain::new().with(LoopDetection::default());
        let out = chain.end_tool_call(
            &mut state,
            &(&reply.tool_calls[0]).into(),
            1,
            ToolOutput::ok("r"),
        );
        assert!(
            out.content
                .starts_with("r\n\nWarning: you have now called 'search' 3 times")
        );
        assert!(state.call_notes.is_empty(), "the note is used once");
    }

    #[test]
    fn the_fifth_identical_call_stops_the_run() {
        let (notices, stop, _, reply) = play(5);
        assert_eq!(
            stop.as_deref(),
            Some(
                "loop detected: the model called 'search' 5 times with the same arguments \
                 ({\"q\":\"x\",\"n\":1})"
            )
        );
        assert!(reply.tool_calls.is_empty(), "its calls never run");
        assert!(
            notices
                .last()
                .unwrap()
                .starts_with("Stopped: loop detected")
        );
    }

    #[test]
    fn different_arguments_do_not_count() {
        assert_ne!(
            signature(&call("a", r#"{"q":"x"}"#)),
            signature(&call("a", r#"{"q":"y"}"#))
        );
        assert_eq!(
            signature(&call("a", r#"{"q":{"b":1,"a":[1, 2]}}"#)),
            signature(&call("a", r#"{ "q": {"a":[1,2],"b":1} }"#))
        );
    }
}

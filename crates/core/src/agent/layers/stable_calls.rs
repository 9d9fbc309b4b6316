//! Turns `call_tool` calls into direct calls of the tool they name (stable binding).

use crate::agent::middleware::{Layer, ModelTurn};
use crate::agent::state::ThreadState;
use crate::deferred::{CALL_TOOL, inner_call};

/// Rewrites every well-formed `call_tool(name, arguments)` in a reply into a call of
/// `name` with `arguments`, before anything else acts on the reply. The deferred filter,
/// loop detection, the events and the stored thread then see the real tool, exactly as if
/// the model had called it directly; a malformed call stays a `call_tool` call, and that
/// tool answers it with what to fix. As the innermost layer its `after_model` runs first.
pub(crate) struct StableCalls;

impl Layer for StableCalls {
    fn name(&self) -> &'static str {
        "stable_calls"
    }

    fn after_model(&self, _state: &mut ThreadState, turn: &mut ModelTurn<'_>) {
        for call in &mut turn.reply.tool_calls {
            if call.name != CALL_TOOL {
                continue;
            }
            match inner_call(call) {
                Ok(inner) => {
                    tracing::debug!(tool = %inner.name, "call_tool rewritten to its tool");
                    *call = inner;
                }
                Err(why) => tracing::debug!("call_tool left for the tool to refuse: {why}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::middleware::Chain;
    use crate::protocol::{FinishReason, ToolCall};
    use crate::provider::ModelReply;

    #[test]
    fn rewrites_well_formed_calls_and_leaves_the_rest() {
        let chain = Chain::new().with(StableCalls);
        let call = |id: &str, name: &str, arguments: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        };
        let mut reply = ModelReply {
            tool_calls: vec![
                call(
                    "a",
                    CALL_TOOL,
                    r#"{"name": "srv_get", "arguments": {"k": 1}}"#,
                ),
                call("b", CALL_TOOL, r#"{"arguments": {}}"#),
                call("c", "read_file", r#"{"path": "x"}"#),
            ],
            finish_reason: FinishReason::ToolCalls,
            ..Default::default()
        };
        chain.finish_model_call(&mut ThreadState::default(), &[], &mut reply);
        assert_eq!(
            reply.tool_calls,
            [
                call("a", "srv_get", r#"{"k":1}"#),
                call("b", CALL_TOOL, r#"{"arguments": {}}"#),
                call("c", "read_file", r#"{"path": "x"}"#),
            ]
        );
    }
}

//! Finish reasons: what the model's stop reason means for the user and for its tool calls.

use crate::agent::middleware::{Layer, ModelTurn};
use crate::agent::state::ThreadState;
use crate::protocol::FinishReason;

/// The notice when an answer hit the output limit.
pub(crate) const CUT_NOTICE: &str = "The model's answer was cut at its output token limit \
                              (finish_reason: length); it may be incomplete.";

/// The notice when the provider's filter stopped the answer.
pub(crate) const FILTER_NOTICE: &str = "The provider's content filter stopped the model's answer \
                                 (finish_reason: content_filter); its tool calls were dropped.";

/// `length` tells the user the answer was cut (its tool calls still run: a cut argument is
/// caught as invalid JSON); `content_filter` drops the reply's tool calls, which were
/// produced by a response the provider refused.
pub(crate) struct FinishReasons;

impl Layer for FinishReasons {
    fn name(&self) -> &'static str {
        "finish_reasons"
    }

    fn after_model(&self, _state: &mut ThreadState, turn: &mut ModelTurn<'_>) {
        match &turn.reply.finish_reason {
            FinishReason::Length => turn.notices.push(CUT_NOTICE.to_string()),
            FinishReason::ContentFilter => {
                turn.reply.tool_calls.clear();
                turn.notices.push(FILTER_NOTICE.to_string());
            }
            FinishReason::Other(reason) => {
                tracing::debug!(%reason, "unusual finish_reason");
            }
            FinishReason::Stop | FinishReason::ToolCalls => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::middleware::Chain;
    use crate::protocol::ToolCall;
    use crate::provider::ModelReply;

    fn finish(reason: FinishReason) -> (ModelReply, Vec<String>) {
        let mut reply = ModelReply {
            content: "partial".into(),
            tool_calls: vec![ToolCall {
                id: "1".into(),
                name: "x".into(),
                arguments: "{}".into(),
            }],
            finish_reason: reason,
            ..ModelReply::default()
        };
        let (notices, stop) = Chain::new().with(FinishReasons).finish_model_call(
            &mut ThreadState::default(),
            &[],
            &mut reply,
        );
        assert!(stop.is_none());
        (reply, notices)
    }

    #[test]
    fn each_reason() {
        let (reply, notices) = finish(FinishReason::Length);
        assert_eq!(notices, [CUT_NOTICE]);
        assert_eq!(reply.tool_calls.len(), 1);
        let (reply, notices) = finish(FinishReason::ContentFilter);
        assert_eq!(notices, [FILTER_NOTICE]);
        assert!(reply.tool_calls.is_empty());
        assert_eq!(reply.content, "partial");
        for reason in [
            FinishReason::Stop,
            FinishReason::ToolCalls,
            FinishReason::Other("eos_token".into()),
        ] {
            let (reply, notices) = finish(reason);
            assert!(notices.is_empty());
            assert_eq!(reply.tool_calls.len(), 1);
        }
    }
}

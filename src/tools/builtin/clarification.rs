//! `ask_clarification(question, options?)`: the model stops to ask the user. The call waits
//! until the interactive front-end answers, and the answer is the tool result, so the same
//! turn goes on. Only offered when a front-end can answer (never with `-p`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::protocol::ClarificationRequest;
use crate::tools::{Tool, ToolContext, ToolFuture, ToolInfo, ToolOutput, ToolSource, parse_args};

/// The tool's name.
pub const ASK_CLARIFICATION: &str = "ask_clarification";

/// The questions asked and not answered yet, by call id, and where new ones are announced.
/// The session holds it: a front-end answers with the call id (a command), so nothing but
/// plain data crosses to the front-end.
#[derive(Clone)]
pub struct Clarifications {
    pending: Arc<Mutex<HashMap<String, oneshot::Sender<String>>>>,
    announce: mpsc::UnboundedSender<ClarificationRequest>,
}

impl std::fmt::Debug for Clarifications {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clarifications").finish_non_exhaustive()
    }
}

impl Clarifications {
    /// The broker, and the receiver of the questions it announces.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<ClarificationRequest>) {
        let (announce, questions) = mpsc::unbounded_channel();
        let broker = Self {
            pending: Arc::default(),
            announce,
        };
        (broker, questions)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<String>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers the question of `call_id` (`None`: declined). `false` when nobody waits for
    /// that answer (it was answered, or its run ended).
    pub fn answer(&self, call_id: &str, answer: Option<String>) -> bool {
        let Some(waiting) = self.pending().remove(call_id) else {
            return false;
        };
        match answer {
            Some(text) => waiting.send(text).is_ok(),
            None => true,
        }
    }

    /// Announces `request` and waits for its answer; `None` when it is declined or nobody
    /// can answer. A call that is dropped (its run ended) withdraws its question.
    async fn ask(&self, request: ClarificationRequest) -> Option<String> {
        let call_id = request.call_id.clone();
        let (answer, reply) = oneshot::channel();
        self.pending().insert(call_id.clone(), answer);
        let _withdraw = Withdraw {
            broker: self,
            call_id,
        };
        self.announce.send(request).ok()?;
        reply.await.ok()
    }
}

/// Removes a question nobody will wait for any more.
struct Withdraw<'a> {
    broker: &'a Clarifications,
    call_id: String,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.broker.pending().remove(&self.call_id);
    }
}

/// The `ask_clarification` tool: its questions go through the session's [`Clarifications`].
pub struct AskClarification {
    info: ToolInfo,
    clarifications: Clarifications,
}

#[derive(Deserialize)]
struct Args {
    question: String,
    #[serde(default)]
    options: Vec<String>,
}

impl AskClarification {
    /// The tool, asking through `clarifications`.
    pub fn new(clarifications: Clarifications) -> Self {
        let info = ToolInfo {
            name: ASK_CLARIFICATION.to_string(),
            description: "Ask the user a question when the request is ambiguous or a decision \
                          is theirs to make, instead of guessing. Offer options when there are \
                          a few clear choices. The user's answer is the result."
                .to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question."},
                    "options": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Choices to offer, if any."
                    }
                },
                "required": ["question"]
            }),
            source: ToolSource::BuiltIn,
            metadata: Map::new(),
            parallel: false,
        };
        Self {
            info,
            clarifications,
        }
    }
}

impl Tool for AskClarification {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn call<'a>(&'a self, ctx: ToolContext<'a>, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let args: Args = match parse_args(arguments) {
                Ok(args) => args,
                Err(out) => return out,
            };
            if args.question.trim().is_empty() {
                return ToolOutput::error("Error: the question is empty.");
            }
            let request = ClarificationRequest {
                call_id: ctx.call_id,
                question: args.question,
                options: args.options,
            };
            match self.clarifications.ask(request).await {
                Some(answer) => ToolOutput::ok(format!("The user answered: {answer}")),
                None => ToolOutput::error(
                    "Error: the user did not answer. Continue with your best judgement and \
                     say what you assumed.",
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolContext;

    #[tokio::test]
    async fn a_question_is_answered_by_its_call_id() {
        let (broker, mut questions) = Clarifications::new();
        let tool = AskClarification::new(broker.clone());
        let answering = async {
            let q = questions.recv().await.unwrap();
            assert_eq!(
                (q.call_id.as_str(), q.question.as_str(), q.options.len()),
                ("c7", "Which colour?", 2)
            );
            assert!(
                !broker.answer("other", Some("red".into())),
                "no such question"
            );
            assert!(broker.answer("c7", Some("blue".into())));
            assert!(!broker.answer("c7", Some("again".into())), "answered once");
        };
        let asking = tool.call(
            ToolContext::standalone("c7"),
            json!({"question": "Which colour?", "options": ["red", "blue"]}),
        );
        let (out, ()) = tokio::join!(asking, answering);
        assert_eq!(out.content, "The user answered: blue");
    }

    #[tokio::test]
    async fn declined_and_withdrawn_questions_leave_nothing_behind() {
        let (broker, mut questions) = Clarifications::new();
        let tool = AskClarification::new(broker.clone());
        let declining = async {
            let q = questions.recv().await.unwrap();
            assert!(broker.answer(&q.call_id, None));
        };
        let asking = tool.call(ToolContext::standalone("d"), json!({"question": "Sure?"}));
        let (out, ()) = tokio::join!(asking, declining);
        assert!(out.is_error && out.content.contains("did not answer"));

        // A call dropped while it waits (its run was cancelled) withdraws its question.
        let call = tool.call(ToolContext::standalone("w"), json!({"question": "Still?"}));
        let timed_out = tokio::time::timeout(std::time::Duration::from_millis(10), call).await;
        assert!(timed_out.is_err());
        assert!(!broker.answer("w", Some("late".into())));
        let out = tool
            .call(ToolContext::standalone("e"), json!({"question": " "}))
            .await;
        assert!(out.is_error && out.content.contains("empty"));
    }
}

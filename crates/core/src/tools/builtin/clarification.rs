//! `ask_clarification(question, options?)`: the model stops to ask the user. The call waits
//! until the interactive front-end answers, and the answer is the tool result, so the same
//! turn goes on. Only offered when a front-end can answer (never with `-p`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Deserialize;
use serde_json::{Map, json};
use tokio::sync::{mpsc, oneshot};

use crate::protocol::ClarificationRequest;
use crate::tools::Effect;
use crate::tools::{ToolContext, ToolFuture, ToolInfo, ToolOutput, ToolSource, TypedTool};

pub(crate) const ASK_CLARIFICATION: &str = "ask_clarification";

/// The questions asked and not answered yet, by call id, and where new ones are announced.
/// The session holds it: a front-end answers with the call id (a command), so nothing but
/// plain data crosses to the front-end.
#[derive(Clone)]
pub struct Clarifications {
    pending: Arc<Mutex<HashMap<String, Waiting>>>,
    announce: mpsc::UnboundedSender<ClarificationRequest>,
}

/// One question's asker: a serial number, so that only its own asker withdraws it.
struct Waiting {
    serial: u64,
    answer: oneshot::Sender<String>,
}

/// Why a question was not answered.
enum Unanswered {
    /// Declined, withdrawn, or nobody can answer.
    NoAnswer,
    /// Another question with the same call id waits already (call ids come from the model).
    Duplicate,
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

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers the question of `call_id` (`None`: declined). `false` when nobody waits for
    /// that answer (it was answered, or its run ended).
    pub fn answer(&self, call_id: &str, answer: Option<String>) -> bool {
        let Some(waiting) = self.pending().remove(call_id) else {
            return false;
        };
        match answer {
            Some(text) => waiting.answer.send(text).is_ok(),
            None => true,
        }
    }

    /// Announces `request` and waits for its answer. A call that is dropped (its run
    /// ended) withdraws its question.
    async fn ask(&self, request: ClarificationRequest) -> Result<String, Unanswered> {
        static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let call_id = request.call_id.clone();
        let (answer, reply) = oneshot::channel();
        match self.pending().entry(call_id.clone()) {
            std::collections::hash_map::Entry::Occupied(_) => return Err(Unanswered::Duplicate),
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(Waiting { serial, answer });
            }
        }
        let _withdraw = Withdraw {
            broker: self,
            call_id,
            serial,
        };
        self.announce
            .send(request)
            .map_err(|_| Unanswered::NoAnswer)?;
        reply.await.map_err(|_| Unanswered::NoAnswer)
    }
}

/// Removes its own question once nobody waits for it any more.
struct Withdraw<'a> {
    broker: &'a Clarifications,
    call_id: String,
    serial: u64,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let mut pending = self.broker.pending();
        if pending
            .get(&self.call_id)
            .is_some_and(|w| w.serial == self.serial)
        {
            pending.remove(&self.call_id);
        }
    }
}

/// The `ask_clarification` tool: its questions go through the session's [`Clarifications`].
pub(crate) struct AskClarification {
    info: ToolInfo,
    clarifications: Clarifications,
}

#[derive(Deserialize)]
pub(crate) struct Args {
    question: String,
    #[serde(default)]
    options: Vec<String>,
}

impl AskClarification {
    /// The tool, asking through `clarifications`.
    pub(crate) fn new(clarifications: Clarifications) -> Self {
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

impl TypedTool for AskClarification {
    type Args = Args;

    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn run<'a>(&'a self, ctx: ToolContext<'a>, args: Args) -> ToolFuture<'a> {
        Box::pin(async move {
            if args.question.trim().is_empty() {
                return ToolOutput::error("Error: the question is empty.");
            }
            let request = ClarificationRequest {
                call_id: ctx.call_id,
                question: args.question,
                options: args.options,
            };
            match self.clarifications.ask(request).await {
                Ok(answer) => ToolOutput::ok(format!("The user answered: {answer}")),
                Err(Unanswered::NoAnswer) => ToolOutput::error(
                    "Error: the user did not answer. Continue with your best judgement and \
                     say what you assumed.",
                ),
                Err(Unanswered::Duplicate) => ToolOutput::error(
                    "Error: another question with this call id is waiting for the user; ask \
                     one question at a time, each in its own call.",
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Tool;
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

    #[tokio::test]
    async fn a_second_question_under_the_same_call_id_is_refused_and_the_first_kept() {
        let (broker, mut questions) = Clarifications::new();
        let tool = AskClarification::new(broker.clone());
        let first = tool.call(ToolContext::standalone("x"), json!({"question": "One?"}));
        let second_then_answer = async {
            let q = questions.recv().await.unwrap();
            assert_eq!(q.question, "One?");
            let second = tool
                .call(ToolContext::standalone("x"), json!({"question": "Two?"}))
                .await;
            assert!(second.is_error && second.content.contains("another question"));
            // The refused second call withdrew nothing: the first is still answerable.
            assert!(broker.answer("x", Some("yes".into())));
        };
        let (out, ()) = tokio::join!(first, second_then_answer);
        assert_eq!(out.content, "The user answered: yes");
    }
}

//! `ask_clarification(question, options?)`: the model stops to ask the user. The call waits
//! until the interactive front-end answers, and the answer is the tool result, so the same
//! turn goes on. Only offered when a front-end can answer (never with `-p`).

use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::tools::{Tool, ToolContext, ToolFuture, ToolInfo, ToolOutput, ToolSource, parse_args};

/// The tool's name.
pub const ASK_CLARIFICATION: &str = "ask_clarification";

/// A question for the user; the front-end sends the answer back on `answer`.
#[derive(Debug)]
pub struct Clarification {
    /// What the model asks.
    pub question: String,
    /// Choices the model offers (the user may still answer freely).
    pub options: Vec<String>,
    /// Where the answer goes.
    pub answer: oneshot::Sender<String>,
}

/// Sends questions to the front-end holding the other end of the channel.
pub struct AskClarification {
    info: ToolInfo,
    requests: mpsc::Sender<Clarification>,
}

#[derive(Deserialize)]
struct Args {
    question: String,
    #[serde(default)]
    options: Vec<String>,
}

impl AskClarification {
    /// The tool, and the receiver the front-end reads questions from.
    pub fn new() -> (Self, mpsc::Receiver<Clarification>) {
        let (requests, receiver) = mpsc::channel(1);
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
        (Self { info, requests }, receiver)
    }
}

impl Tool for AskClarification {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn call<'a>(&'a self, _ctx: ToolContext<'a>, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let args: Args = match parse_args(arguments) {
                Ok(args) => args,
                Err(out) => return out,
            };
            if args.question.trim().is_empty() {
                return ToolOutput::error("Error: the question is empty.");
            }
            let (answer, reply) = oneshot::channel();
            let request = Clarification {
                question: args.question,
                options: args.options,
                answer,
            };
            let unanswered = || {
                ToolOutput::error(
                    "Error: nobody can answer right now. Continue with your best judgement \
                     and say what you assumed.",
                )
            };
            if self.requests.send(request).await.is_err() {
                return unanswered();
            }
            match reply.await {
                Ok(answer) => ToolOutput::ok(format!("The user answered: {answer}")),
                Err(_) => unanswered(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_answer_is_the_result_and_a_gone_front_end_is_an_error() {
        let (tool, mut questions) = AskClarification::new();
        let answering = tokio::spawn(async move {
            let q = questions.recv().await.unwrap();
            assert_eq!((q.question.as_str(), q.options.len()), ("Which colour?", 2));
            q.answer.send("blue".into()).unwrap();
            // The front-end goes away: later questions cannot be answered.
        });
        let out = tool
            .call(
                crate::tools::ToolContext::standalone("test"),
                json!({"question": "Which colour?", "options": ["red", "blue"]}),
            )
            .await;
        assert_eq!(out.content, "The user answered: blue");
        answering.await.unwrap();
        let out = tool
            .call(
                crate::tools::ToolContext::standalone("test"),
                json!({"question": "Again?"}),
            )
            .await;
        assert!(out.is_error && out.content.contains("nobody can answer"));
    }
}

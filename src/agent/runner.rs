//! The runner: one user message in, model calls and tool calls until the model answers,
//! events out. It owns no I/O of its own: the provider talks to the model, the sink stores
//! the thread, front-ends render the events.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::event::{Event, RunResult, RunStatus};
use super::layers::summarize::{Summarization, estimate_tokens};
use super::message::{Message, ToolCall};
use super::middleware::{Chain, ToolStep, execute};
use super::state::ThreadState;
use crate::deferred::DeferredSetup;
use crate::provider::{ModelEvent, ModelReply, ModelRequest, Provider, ToolSpec, Usage};
use crate::tools::{Tool, ToolOutput};

/// The result a tool call gets when the user interrupts the run while it runs.
pub const INTERRUPTED: &str = "Error: interrupted by the user before the tool returned.";

/// A conversation as the runner works on it.
#[derive(Debug, Clone, Default)]
pub struct Thread {
    /// Its id in the store.
    pub id: String,
    /// The history, oldest first.
    pub messages: Vec<Message>,
    /// Promotions and other state.
    pub state: ThreadState,
    /// Tokens used so far.
    pub usage: Usage,
    /// Whether the thread existed before this process.
    pub resumed: bool,
}

/// Storing a thread failed: the run stops rather than go on with unsaved work.
#[derive(Debug, thiserror::Error)]
#[error("cannot save thread {thread}: {message}")]
pub struct SaveError {
    /// The thread.
    pub thread: String,
    /// What went wrong.
    pub message: String,
}

/// Where the runner saves the thread as it goes. Each call is one transaction.
pub trait ThreadSink: Send + Sync {
    /// Stores `thread.messages[from..]` and the thread's state and usage.
    fn append(&self, thread: &Thread, from: usize) -> Result<(), SaveError>;
    /// Stores the whole history again (after a layer rewrote it), with state and usage.
    fn rewrite(&self, thread: &Thread) -> Result<(), SaveError>;
}

/// A sink that stores nothing (tests, benchmarks).
pub struct NoSink;

impl ThreadSink for NoSink {
    fn append(&self, _: &Thread, _: usize) -> Result<(), SaveError> {
        Ok(())
    }
    fn rewrite(&self, _: &Thread) -> Result<(), SaveError> {
        Ok(())
    }
}

/// Receives the events of a run as they happen.
pub type EventSink<'a> = &'a (dyn Fn(Event) + Send + Sync);

/// Everything a run needs besides the thread: the model, the tools, the layers.
pub struct Agent {
    /// The model.
    pub provider: Arc<dyn Provider>,
    /// The tools: bound ones and the deferred catalog.
    pub deferred: Arc<DeferredSetup>,
    /// The layers, in the documented order.
    pub chain: Chain,
    /// The system prompt, fixed for the thread.
    pub system_prompt: String,
    /// The most model calls one run may make.
    pub max_turns: u32,
    /// When to summarise the history, if at all.
    pub summarization: Option<Summarization>,
}

impl Agent {
    /// Runs one user message to completion (or failure, or interruption). Never panics and
    /// always emits exactly one `run_finished`, whose payload it also returns.
    pub async fn run(
        &self,
        thread: &mut Thread,
        input: String,
        sink: &dyn ThreadSink,
        emit: EventSink<'_>,
        cancel: &CancellationToken,
    ) -> RunResult {
        emit(Event::RunStarted {
            thread_id: thread.id.clone(),
            model: self.provider.model().to_string(),
            resumed: thread.resumed,
        });
        let mut run = Run {
            agent: self,
            saved: thread.messages.len(),
            thread,
            sink,
            emit,
            cancel,
            turn: 0,
            usage: Usage::default(),
            notices: Vec::new(),
            answer: String::new(),
            last_input: None,
        };
        let outcome = run.drive(input).await;
        let result = run.finish(outcome);
        emit(Event::RunFinished(result.clone()));
        result
    }
}

/// How the loop ended.
enum Outcome {
    Success,
    Failed(String),
    Interrupted,
}

/// The mutable side of one run.
struct Run<'a> {
    agent: &'a Agent,
    thread: &'a mut Thread,
    sink: &'a dyn ThreadSink,
    emit: EventSink<'a>,
    cancel: &'a CancellationToken,
    /// How many of the thread's messages are stored.
    saved: usize,
    turn: u32,
    usage: Usage,
    notices: Vec<String>,
    answer: String,
    /// The provider's exact input count and how many messages it covered.
    last_input: Option<(u64, usize)>,
}

impl Run<'_> {
    async fn drive(&mut self, input: String) -> Outcome {
        self.thread.messages.push(Message::User { content: input });
        if let Err(err) = self.save() {
            return Outcome::Failed(err.to_string());
        }
        loop {
            if self.cancel.is_cancelled() {
                return Outcome::Interrupted;
            }
            if self.turn >= self.agent.max_turns {
                return Outcome::Failed(format!(
                    "the run reached --max-turns ({}) without a final answer",
                    self.agent.max_turns
                ));
            }
            self.turn += 1;
            (self.emit)(Event::TurnStarted { turn: self.turn });
            if let Some(outcome) = self.summarize().await {
                return outcome;
            }
            let reply = match self.call_model().await {
                Ok(Some(reply)) => reply,
                Ok(None) => return Outcome::Interrupted,
                Err(outcome) => return outcome,
            };
            match self.take_reply(reply) {
                Ok(None) => return Outcome::Success,
                Ok(Some(calls)) => {
                    if let Some(outcome) = self.run_tools(calls).await {
                        return outcome;
                    }
                }
                Err(outcome) => return outcome,
            }
        }
    }

    /// Stores the messages added since the last save.
    fn save(&mut self) -> Result<(), SaveError> {
        self.sink.append(self.thread, self.saved)?;
        self.saved = self.thread.messages.len();
        Ok(())
    }

    fn rewrite(&mut self) -> Result<(), SaveError> {
        self.sink.rewrite(self.thread)?;
        self.saved = self.thread.messages.len();
        Ok(())
    }

    fn notice(&mut self, message: String) {
        (self.emit)(Event::Notice {
            turn: self.turn,
            message: message.clone(),
        });
        self.notices.push(message);
    }

    /// Summarises older messages when the history is over budget. A failed summary is a
    /// notice, not a failure: the run goes on with the full history.
    async fn summarize(&mut self) -> Option<Outcome> {
        let summarization = self.agent.summarization.as_ref()?;
        let messages = &self.thread.messages;
        let tokens = match self.last_input {
            Some((exact, covered)) if covered <= messages.len() => {
                exact + estimate_tokens(&messages[covered..])
            }
            _ => estimate_tokens(messages),
        };
        let cut = summarization.cut_point(messages, tokens)?;
        let summary = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Some(Outcome::Interrupted),
            summary = Summarization::summarize(&*self.agent.provider, &messages[..cut]) => summary,
        };
        match summary {
            Ok(summary) if !summary.is_empty() => {
                Summarization::apply(&mut self.thread.messages, cut, summary);
                self.last_input = None;
                (self.emit)(Event::Summarized {
                    turn: self.turn,
                    replaced_messages: cut,
                    tokens_before: tokens,
                });
                if let Err(err) = self.rewrite() {
                    return Some(Outcome::Failed(err.to_string()));
                }
            }
            Ok(_) => self.notice(String::from(
                "The history could not be summarised (the model returned nothing); continuing \
                 with the full history.",
            )),
            Err(err) => self.notice(format!(
                "The history could not be summarised ({err}); continuing with the full history."
            )),
        }
        None
    }

    /// Prepares the call through the layers and makes it. `Ok(None)`: interrupted.
    async fn call_model(&mut self) -> Result<Option<ModelReply>, Outcome> {
        let before = self.thread.state.promoted.names.clone();
        let (tools, rewritten) = self.agent.chain.prepare_model_call(
            &mut self.thread.state,
            &mut self.thread.messages,
            self.agent.deferred.bound.clone(),
        );
        if rewritten {
            self.rewrite().map_err(|e| Outcome::Failed(e.to_string()))?;
        }
        self.report_promotions(&before);
        let request = ModelRequest {
            system: self.agent.system_prompt.clone(),
            messages: self.thread.messages.clone(),
            tools: tools.iter().map(|t| spec(t.as_ref())).collect(),
            max_tokens: None,
        };
        let turn = self.turn;
        let emit = self.emit;
        let on_event = move |event: ModelEvent| {
            emit(match event {
                ModelEvent::TextDelta(text) => Event::TextDelta { turn, text },
                ModelEvent::ReasoningDelta(text) => Event::ReasoningDelta { turn, text },
                ModelEvent::Retrying {
                    attempt,
                    delay,
                    reason,
                } => Event::Retrying {
                    turn,
                    attempt,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    reason,
                },
            })
        };
        let reply = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Ok(None),
            reply = self.agent.provider.complete(&request, &on_event) => reply,
        };
        match reply {
            Ok(reply) => Ok(Some(reply)),
            Err(err) => {
                let error = format!("model call failed: {err}");
                (self.emit)(Event::TurnFailed {
                    turn,
                    error: error.clone(),
                });
                Err(Outcome::Failed(error))
            }
        }
    }

    /// Lets the layers see the reply, stores it, and returns its tool calls (`None`: the
    /// model answered).
    fn take_reply(&mut self, mut reply: ModelReply) -> Result<Option<Vec<ToolCall>>, Outcome> {
        if let Some(usage) = &reply.usage {
            self.usage.add(usage);
            self.thread.usage.add(usage);
            self.last_input = Some((usage.input_tokens, self.thread.messages.len()));
            (self.emit)(Event::Usage {
                turn: self.turn,
                usage: *usage,
            });
        }
        let (notices, stop) = self.agent.chain.finish_model_call(
            &mut self.thread.state,
            &self.thread.messages,
            &mut reply,
        );
        for notice in notices {
            self.notice(notice);
        }
        if !reply.content.is_empty() {
            self.answer = reply.content.clone();
        }
        let calls = reply.tool_calls.clone();
        self.thread.messages.push(Message::Assistant {
            content: reply.content,
            reasoning: reply.reasoning,
            tool_calls: reply.tool_calls,
        });
        self.save().map_err(|e| Outcome::Failed(e.to_string()))?;
        (self.emit)(Event::TurnCompleted {
            turn: self.turn,
            finish_reason: reply.finish_reason,
        });
        if let Some(reason) = stop {
            return Err(Outcome::Failed(reason));
        }
        Ok((!calls.is_empty()).then_some(calls))
    }

    /// Runs the calls concurrently through the layers, appends the results in call order
    /// and stores them. `Some`: the run ends here.
    async fn run_tools(&mut self, calls: Vec<ToolCall>) -> Option<Outcome> {
        let before = self.thread.state.promoted.names.clone();
        let mut outputs: Vec<Option<(ToolOutput, usize, u64)>> = vec![None; calls.len()];
        let mut pending = FuturesUnordered::new();
        for (i, call) in calls.iter().enumerate() {
            (self.emit)(Event::ToolCallStarted {
                turn: self.turn,
                call_id: call.id.clone(),
                name: call.name.clone(),
                arguments: serde_json::from_str(&call.arguments)
                    .unwrap_or_else(|_| Value::String(call.arguments.clone())),
            });
            match self
                .agent
                .chain
                .begin_tool_call(&mut self.thread.state, call)
            {
                ToolStep::Answered { output, ran } => outputs[i] = Some((output, ran, 0)),
                ToolStep::Run => {
                    let tool = self.agent.deferred.tool(&call.name);
                    pending.push(async move {
                        let started = Instant::now();
                        let output = execute(call, tool).await;
                        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                        (i, output, ms)
                    });
                }
            }
        }
        let layers = self.agent.chain.len();
        let mut interrupted = false;
        while !pending.is_empty() {
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => {
                    interrupted = true;
                    break;
                }
                Some((i, output, ms)) = pending.next() => outputs[i] = Some((output, layers, ms)),
            }
        }
        drop(pending);
        for (call, slot) in calls.iter().zip(outputs) {
            let (output, ran, ms) =
                slot.unwrap_or_else(|| (ToolOutput::error(INTERRUPTED), layers, 0));
            let output = self
                .agent
                .chain
                .end_tool_call(&mut self.thread.state, call, ran, output);
            (self.emit)(Event::ToolCallFinished {
                turn: self.turn,
                call_id: call.id.clone(),
                name: call.name.clone(),
                is_error: output.is_error,
                content: output.content.clone(),
                duration_ms: ms,
            });
            self.thread.messages.push(Message::Tool {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: output.content,
                is_error: output.is_error,
            });
        }
        if let Err(err) = self.save() {
            return Some(Outcome::Failed(err.to_string()));
        }
        self.report_promotions(&before);
        interrupted.then_some(Outcome::Interrupted)
    }

    fn report_promotions(&self, before: &[String]) {
        let now = &self.thread.state.promoted.names;
        let added: Vec<String> = now
            .iter()
            .filter(|n| !before.contains(n))
            .cloned()
            .collect();
        let removed: Vec<String> = before
            .iter()
            .filter(|n| !now.contains(n))
            .cloned()
            .collect();
        if added.is_empty() && removed.is_empty() {
            return;
        }
        (self.emit)(Event::ToolsPromoted {
            turn: self.turn,
            added,
            removed,
            promoted: now.clone(),
            catalog_hash: self.thread.state.promoted.catalog_hash.clone(),
        });
    }

    fn finish(self, outcome: Outcome) -> RunResult {
        let (status, errors) = match outcome {
            Outcome::Success => (RunStatus::Success, Vec::new()),
            Outcome::Failed(error) => (RunStatus::Failed, vec![error]),
            Outcome::Interrupted => (RunStatus::Interrupted, vec![String::from("interrupted")]),
        };
        RunResult {
            status,
            result: self.answer,
            thread_id: self.thread.id.clone(),
            model: self.agent.provider.model().to_string(),
            turns: self.turn,
            usage: self.usage,
            thread_usage: self.thread.usage,
            promoted_tools: self.thread.state.promoted.names.clone(),
            notices: self.notices,
            errors,
        }
    }
}

/// The schema of a tool as bound to a model call.
pub fn spec(tool: &dyn Tool) -> ToolSpec {
    let info = tool.info();
    ToolSpec {
        name: info.name.clone(),
        description: info.description.clone(),
        parameters: info.parameters.clone(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use serde_json::{Map, json};

    use super::*;
    use crate::agent::layers::{agent_chain, dangling};
    use crate::config::{ToolSearchConfig, ToolSearchMode};
    use crate::deferred::setup_deferred;
    use crate::deferred::testing::mcp_tools;
    use crate::provider::{FinishReason, ProviderError, ReplyFuture};
    use crate::tools::{ToolFuture, ToolInfo, ToolSource, assemble_toolset};

    /// Plays scripted replies and records every request.
    struct Scripted {
        replies: Mutex<Vec<Result<ModelReply, String>>>,
        requests: Mutex<Vec<ModelRequest>>,
        cancel_on_call: Option<(usize, CancellationToken)>,
    }

    impl Scripted {
        fn new(replies: Vec<ModelReply>) -> Arc<Self> {
            Arc::new(Self {
                replies: Mutex::new(replies.into_iter().rev().map(Ok).collect()),
                requests: Mutex::new(Vec::new()),
                cancel_on_call: None,
            })
        }
        fn bound(&self, i: usize) -> Vec<String> {
            self.requests.lock().unwrap()[i]
                .tools
                .iter()
                .map(|t| t.name.clone())
                .collect()
        }
    }

    impl Provider for Scripted {
        fn complete<'a>(
            &'a self,
            request: &'a ModelRequest,
            events: &'a (dyn Fn(ModelEvent) + Send + Sync),
        ) -> ReplyFuture<'a> {
            Box::pin(async move {
                let n = {
                    let mut requests = self.requests.lock().unwrap();
                    requests.push(request.clone());
                    requests.len()
                };
                if let Some((at, token)) = &self.cancel_on_call
                    && *at == n
                {
                    token.cancel();
                    std::future::pending::<()>().await;
                }
                let next = self.replies.lock().unwrap().pop();
                match next.unwrap_or_else(|| Err("no reply left".into())) {
                    Ok(reply) => {
                        events(ModelEvent::TextDelta(reply.content.clone()));
                        Ok(reply)
                    }
                    Err(message) => Err(ProviderError::Transport {
                        endpoint: "scripted".into(),
                        message,
                    }),
                }
            })
        }
        fn model(&self) -> &str {
            "scripted"
        }
        fn endpoint(&self) -> &str {
            "scripted"
        }
    }

    /// Echoes its `text` argument after `delay_ms`.
    struct Echo(ToolInfo);
    impl Tool for Echo {
        fn info(&self) -> &ToolInfo {
            &self.0
        }
        fn call(&self, arguments: Value) -> ToolFuture<'_> {
            Box::pin(async move {
                let delay = arguments["delay_ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(delay)).await;
                ToolOutput::ok(arguments["text"].as_str().unwrap_or("").to_string())
            })
        }
    }

    fn echo() -> Arc<dyn Tool> {
        Arc::new(Echo(ToolInfo {
            name: "echo".into(),
            description: "Echo text".into(),
            parameters: json!({"type": "object"}),
            source: ToolSource::BuiltIn,
            metadata: Map::new(),
        }))
    }

    fn text(content: &str) -> ModelReply {
        ModelReply {
            content: content.into(),
            ..ModelReply::default()
        }
    }

    fn calls(calls: &[(&str, &str, Value)]) -> ModelReply {
        ModelReply {
            tool_calls: calls
                .iter()
                .map(|(id, name, args)| ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    arguments: args.to_string(),
                })
                .collect(),
            finish_reason: FinishReason::ToolCalls,
            usage: Some(Usage {
                input_tokens: 10,
                cached_input_tokens: 4,
                output_tokens: 2,
            }),
            ..ModelReply::default()
        }
    }

    fn agent(provider: Arc<dyn Provider>, tool_search: bool) -> Agent {
        let mcp = mcp_tools(&[
            ("time", "now", "Current time in a timezone"),
            ("github", "get_file", "Read a file from a GitHub repository"),
        ]);
        let (toolset, _) = assemble_toolset(Vec::new(), vec![echo()], mcp);
        let config = ToolSearchConfig {
            enabled: if tool_search {
                ToolSearchMode::On
            } else {
                ToolSearchMode::Off
            },
            ..ToolSearchConfig::default()
        };
        let deferred = setup_deferred(&toolset, &config, None).unwrap();
        Agent {
            provider,
            chain: agent_chain(&deferred, &config, &[]),
            deferred: Arc::new(deferred),
            system_prompt: "system".into(),
            max_turns: 50,
            summarization: None,
        }
    }

    /// Stores what it is given, like the SQLite store would.
    #[derive(Default)]
    struct Memory {
        saved: Mutex<Vec<Message>>,
        appends: Mutex<usize>,
    }

    impl ThreadSink for Memory {
        fn append(&self, thread: &Thread, from: usize) -> Result<(), SaveError> {
            let mut saved = self.saved.lock().unwrap();
            assert_eq!(saved.len(), from, "appends are contiguous");
            saved.extend_from_slice(&thread.messages[from..]);
            *self.appends.lock().unwrap() += 1;
            Ok(())
        }
        fn rewrite(&self, thread: &Thread) -> Result<(), SaveError> {
            *self.saved.lock().unwrap() = thread.messages.clone();
            Ok(())
        }
    }

    async fn run(agent: &Agent, thread: &mut Thread, input: &str) -> (RunResult, Vec<Event>) {
        let events = Mutex::new(Vec::new());
        let emit = |e: Event| events.lock().unwrap().push(e);
        let result = agent
            .run(
                thread,
                input.into(),
                &NoSink,
                &emit,
                &CancellationToken::new(),
            )
            .await;
        (result, events.into_inner().unwrap())
    }

    fn kinds(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[tokio::test]
    async fn tools_run_concurrently_and_results_keep_call_order() {
        let provider = Scripted::new(vec![
            calls(&[
                ("a", "echo", json!({"text": "slow", "delay_ms": 50})),
                ("b", "echo", json!({"text": "fast"})),
                ("c", "nope", json!({})),
            ]),
            text("done"),
        ]);
        let agent = agent(provider.clone(), false);
        let mut thread = Thread::default();
        let (result, events) = run(&agent, &mut thread, "go").await;
        assert_eq!(result.status, RunStatus::Success);
        assert_eq!(result.result, "done");
        assert_eq!(result.turns, 2);
        assert_eq!(result.usage.input_tokens, 10);
        let results: Vec<(&str, &str, bool)> = thread
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool {
                    call_id,
                    content,
                    is_error,
                    ..
                } => Some((call_id.as_str(), content.as_str(), *is_error)),
                _ => None,
            })
            .collect();
        assert_eq!(results[..2], [("a", "slow", false), ("b", "fast", false)]);
        assert!(results[2].2 && results[2].1.contains("no tool named 'nope'"));
        assert_eq!(
            kinds(&events),
            [
                "run_started",
                "turn_started",
                "text_delta",
                "usage",
                "turn_completed",
                "tool_call_started",
                "tool_call_started",
                "tool_call_started",
                "tool_call_finished",
                "tool_call_finished",
                "tool_call_finished",
                "turn_started",
                "text_delta",
                "turn_completed",
                "run_finished",
            ]
        );
        // The second request carries the results after the assistant's calls.
        let second = &provider.requests.lock().unwrap()[1];
        assert_eq!(second.messages.len(), 5);
        assert_eq!(second.system, "system");
    }

    #[tokio::test]
    async fn the_deferred_flow_promotes_then_binds() {
        let provider = Scripted::new(vec![
            calls(&[("s", "tool_search", json!({"query": "select:time_now"}))]),
            calls(&[("t", "time_now", json!({}))]),
            text("it is noon"),
        ]);
        let agent = agent(provider.clone(), true);
        let mut thread = Thread::default();
        let (result, events) = run(&agent, &mut thread, "what time is it").await;
        assert_eq!(result.status, RunStatus::Success, "{result:?}");
        assert_eq!(provider.bound(0), ["echo", "tool_search"]);
        assert_eq!(provider.bound(1), ["echo", "tool_search", "time_now"]);
        assert_eq!(result.promoted_tools, ["time_now"]);
        let promoted = events
            .iter()
            .find_map(|e| match e {
                Event::ToolsPromoted { added, .. } => Some(added.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(promoted, ["time_now"]);
        // An unpromoted deferred tool is blocked with the exact message.
        let provider = Scripted::new(vec![
            calls(&[("g", "github_get_file", json!({}))]),
            text("ok"),
        ]);
        let agent = self::agent(provider, true);
        let mut thread = Thread::default();
        run(&agent, &mut thread, "read it").await;
        assert!(matches!(
            &thread.messages[2],
            Message::Tool { content, is_error: true, .. } if content.contains("is deferred and has not been promoted")
        ));
    }

    #[tokio::test]
    async fn max_turns_fails_the_run() {
        let provider = Scripted::new(vec![
            calls(&[("a", "echo", json!({"text": "1"}))]),
            calls(&[("b", "echo", json!({"text": "2"}))]),
        ]);
        let mut agent = agent(provider, false);
        agent.max_turns = 2;
        let (result, _) = run(&agent, &mut Thread::default(), "loop").await;
        assert_eq!(result.status, RunStatus::Failed);
        assert_eq!(
            result.errors,
            ["the run reached --max-turns (2) without a final answer"]
        );
    }

    #[tokio::test]
    async fn a_provider_error_fails_the_run_and_keeps_the_user_message() {
        let provider = Scripted::new(Vec::new());
        let agent = agent(provider, false);
        let sink = Memory::default();
        let mut thread = Thread::default();
        let result = agent
            .run(
                &mut thread,
                "hi".into(),
                &sink,
                &|_| {},
                &CancellationToken::new(),
            )
            .await;
        assert_eq!(result.status, RunStatus::Failed);
        assert!(
            result.errors[0].contains("no reply left"),
            "{:?}",
            result.errors
        );
        assert_eq!(
            sink.saved.lock().unwrap().len(),
            1,
            "the user message is stored"
        );
    }

    #[tokio::test]
    async fn every_step_is_saved_as_it_happens() {
        let provider = Scripted::new(vec![
            calls(&[("a", "echo", json!({"text": "1"}))]),
            text("done"),
        ]);
        let agent = agent(provider, false);
        let sink = Memory::default();
        let mut thread = Thread::default();
        agent
            .run(
                &mut thread,
                "hi".into(),
                &sink,
                &|_| {},
                &CancellationToken::new(),
            )
            .await;
        assert_eq!(*sink.saved.lock().unwrap(), thread.messages);
        assert_eq!(
            *sink.appends.lock().unwrap(),
            4,
            "user, reply, results, reply"
        );
    }

    #[tokio::test]
    async fn an_interrupt_during_the_model_call_ends_the_run_cleanly() {
        let token = CancellationToken::new();
        let provider = Arc::new(Scripted {
            replies: Mutex::new(vec![
                Ok(text("never")),
                Ok(calls(&[("a", "echo", json!({"text": "1"}))])),
            ]),
            requests: Mutex::new(Vec::new()),
            cancel_on_call: Some((2, token.clone())),
        });
        let agent = agent(provider, false);
        let sink = Memory::default();
        let mut thread = Thread::default();
        let result = agent
            .run(&mut thread, "hi".into(), &sink, &|_| {}, &token)
            .await;
        assert_eq!(result.status, RunStatus::Interrupted);
        assert_eq!(result.turns, 2);
        // user, the call, its result: valid and stored; the unfinished call is lost.
        assert_eq!(sink.saved.lock().unwrap().len(), 3);
    }

    #[tokio::test]
    async fn a_resumed_history_with_a_dangling_call_is_patched_and_stored() {
        let provider = Scripted::new(vec![text("fine")]);
        let agent = agent(provider.clone(), false);
        let sink = Memory::default();
        let mut thread = Thread {
            messages: vec![
                Message::User {
                    content: "x".into(),
                },
                Message::Assistant {
                    content: String::new(),
                    reasoning: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "k".into(),
                        name: "echo".into(),
                        arguments: "{}".into(),
                    }],
                },
            ],
            ..Thread::default()
        };
        *sink.saved.lock().unwrap() = thread.messages.clone();
        agent
            .run(
                &mut thread,
                "again".into(),
                &sink,
                &|_| {},
                &CancellationToken::new(),
            )
            .await;
        let sent = &provider.requests.lock().unwrap()[0].messages;
        assert!(
            matches!(&sent[2], Message::Tool { content, .. } if content == dangling::PLACEHOLDER)
        );
        assert_eq!(*sink.saved.lock().unwrap(), thread.messages);
    }

    #[tokio::test]
    async fn summarisation_replaces_older_messages_and_keeps_promotions() {
        let provider = Scripted::new(vec![
            calls(&[("s", "tool_search", json!({"query": "select:time_now"}))]),
            text("first answer"),
            text("SUMMARY"),
            text("second answer"),
        ]);
        let mut agent = agent(provider.clone(), true);
        agent.summarization = Some(Summarization {
            trigger_tokens: 1,
            keep_messages: 1,
        });
        let mut thread = Thread::default();
        run(&agent, &mut thread, "one").await;
        let (result, events) = run(&agent, &mut thread, "two").await;
        assert_eq!(result.result, "second answer");
        assert!(events.iter().any(|e| matches!(
            e,
            Event::Summarized {
                replaced_messages: 4,
                ..
            }
        )));
        assert_eq!(
            thread.messages[0],
            Message::Summary {
                content: "SUMMARY".into()
            }
        );
        assert_eq!(provider.bound(3), ["echo", "tool_search", "time_now"]);
    }
}

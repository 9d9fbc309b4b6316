//! The runner: one user message in, model calls and tool calls until the model answers,
//! events out. It owns no I/O of its own: the provider talks to the model, the sink stores
//! the thread, front-ends render the events.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::layers::summarize::{Summarization, estimate_tokens};
use super::ledger::{LedgerMode, LedgerRecorder, add_run};
use super::middleware::Chain;
use super::state::ThreadState;
use crate::deferred::DeferredSetup;
use crate::hooks::Hooks;
use crate::permissions::CallGates;
use crate::protocol::{Counting, Usage};
use crate::protocol::{ErrorKind, Event, RunResult, RunStatus, STREAM_JSON_VERSION};
use crate::protocol::{Message, ToolCall};
use crate::provider::{ModelEvent, ModelReply, ModelRequest, Provider, ToolSpec};
use crate::tools::{RunScope, Tool};

mod batch;
mod hooks;

pub use batch::INTERRUPTED;

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
    /// The thread's id.
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
    /// Every model call of the run goes to it, summaries included.
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
    /// When a run's context ledger is taken.
    pub ledger: LedgerMode,
    /// Which calls run, ask the user first, or are refused: the policy, then the hooks.
    pub gates: Arc<CallGates>,
    /// The user's hooks (the run fires `UserPromptSubmit`, `Stop` and `PreCompact`).
    pub hooks: Arc<Hooks>,
}

/// Where a run gets its agent from before each step: a session's assembly, which rebuilds
/// the agent when its tools changed (a server's tool list, the extensions file).
pub trait AgentSource: Send + Sync {
    /// The agent as things are now (the same `Arc` while nothing changed); `None` keeps
    /// the run's agent (a rebuild failed, and the source said why).
    fn current(&self) -> BoxFuture<'_, Option<Arc<Agent>>>;
}

/// The agent of a run: fixed, or followed from its source.
enum Held<'a> {
    Fixed(&'a Agent),
    Live {
        source: &'a dyn AgentSource,
        agent: Arc<Agent>,
    },
}

impl Held<'_> {
    fn get(&self) -> &Agent {
        match self {
            Self::Fixed(agent) => agent,
            Self::Live { agent, .. } => agent,
        }
    }

    /// The source's current agent when it is not the one held (never when cancelled
    /// first: a server that is slow to list its tools does not hold up Ctrl-C).
    async fn latest(&self, cancel: &CancellationToken) -> Option<Arc<Agent>> {
        let Self::Live { source, agent } = self else {
            return None;
        };
        let current = tokio::select! {
            biased;
            () = cancel.cancelled() => return None,
            current = source.current() => current?,
        };
        (!Arc::ptr_eq(&current, agent)).then_some(current)
    }

    /// Takes the source's current agent; the one it replaces when it changed.
    async fn refresh(&mut self, cancel: &CancellationToken) -> Option<Arc<Agent>> {
        let current = self.latest(cancel).await?;
        let Self::Live { agent, .. } = self else {
            return None;
        };
        Some(std::mem::replace(agent, current))
    }
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
        run_with(Held::Fixed(self), thread, input, sink, emit, cancel).await
    }
}

/// [`Agent::run`] starting with `agent` and taking the agent from `source` before every
/// step, so that a tool list that changes during the run takes effect before the next
/// model call.
pub async fn run_live(
    source: &dyn AgentSource,
    agent: Arc<Agent>,
    thread: &mut Thread,
    input: String,
    sink: &dyn ThreadSink,
    emit: EventSink<'_>,
    cancel: &CancellationToken,
) -> RunResult {
    run_with(
        Held::Live { source, agent },
        thread,
        input,
        sink,
        emit,
        cancel,
    )
    .await
}

async fn run_with(
    agent: Held<'_>,
    thread: &mut Thread,
    input: String,
    sink: &dyn ThreadSink,
    emit: EventSink<'_>,
    cancel: &CancellationToken,
) -> RunResult {
    emit(Event::RunStarted {
        version: STREAM_JSON_VERSION,
        thread_id: thread.id.clone(),
        model: agent.get().provider.model().to_string(),
        resumed: thread.resumed,
    });
    let hooks = agent.get().hooks.clone();
    let scope = match hooks.has(crate::hooks::HookEvent::Notification) {
        true => RunScope::for_thread(&thread.id).with_notify(hooks),
        false => RunScope::for_thread(&thread.id),
    };
    let mut run = Run {
        agent,
        presented: Vec::new(),
        just_presented: Vec::new(),
        saved: thread.messages.len(),
        thread,
        sink,
        emit,
        cancel,
        turn: 0,
        usage: Usage::default(),
        model_usage: BTreeMap::new(),
        started: Instant::now(),
        notices: Vec::new(),
        answer: String::new(),
        last_input: None,
        scope,
        ledger: LedgerRecorder::default(),
        store_failed: false,
        calls_from_text: false,
        stop_hook_active: false,
    };
    let outcome = run.drive(input).await;
    let result = run.finish(outcome);
    emit(Event::RunFinished(result.clone()));
    result
}

/// How the loop ended.
enum Outcome {
    Success,
    Failed(ErrorKind, String),
    Interrupted,
}

impl Outcome {
    fn storage(err: SaveError) -> Self {
        Self::Failed(ErrorKind::Storage, err.to_string())
    }
}

/// The mutable side of one run.
struct Run<'a> {
    agent: Held<'a>,
    thread: &'a mut Thread,
    sink: &'a dyn ThreadSink,
    emit: EventSink<'a>,
    cancel: &'a CancellationToken,
    /// How many of the thread's messages are stored.
    saved: usize,
    /// Files presented in this run (also ones presented in earlier runs again).
    presented: Vec<String>,
    /// Files the current batch presented, not announced yet.
    just_presented: Vec<String>,
    turn: u32,
    usage: Usage,
    /// `usage` by model id (subagents may use another).
    model_usage: BTreeMap<String, Usage>,
    /// When the run began.
    started: Instant,
    notices: Vec<String>,
    answer: String,
    /// The provider's exact input count and how many messages it covered.
    last_input: Option<(u64, usize)>,
    /// What the run's tool calls share (budgets, their model usage).
    scope: RunScope,
    /// The facts of the run's context ledger.
    ledger: LedgerRecorder,
    /// A save failed: the store's copy of the thread is not known any more.
    store_failed: bool,
    /// The last reply's tool calls were written as text.
    calls_from_text: bool,
    /// A `Stop` hook kept the run going already.
    stop_hook_active: bool,
}

impl Run<'_> {
    async fn drive(&mut self, input: String) -> Outcome {
        let input = match self.submit_prompt(input).await {
            Ok(input) => input,
            Err(outcome) => return outcome,
        };
        self.thread.messages.push(Message::User { content: input });
        if let Err(err) = self.save() {
            return Outcome::storage(err);
        }
        loop {
            if self.cancel.is_cancelled() {
                return Outcome::Interrupted;
            }
            if self.turn >= self.agent.get().max_turns {
                return Outcome::Failed(
                    ErrorKind::TurnLimit,
                    format!(
                        "the run reached --max-turns ({}) without a final answer",
                        self.agent.get().max_turns
                    ),
                );
            }
            self.turn += 1;
            (self.emit)(Event::TurnStarted { turn: self.turn });
            self.agent.refresh(self.cancel).await;
            if let Some(outcome) = self.summarize().await {
                return outcome;
            }
            let reply = match self.call_model().await {
                Ok(Some(reply)) => reply,
                Ok(None) => return Outcome::Interrupted,
                Err(outcome) => return outcome,
            };
            match self.take_reply(reply) {
                Ok(None) => match self.stop_blocked().await {
                    Ok(true) => {}
                    Ok(false) => return Outcome::Success,
                    Err(outcome) => return outcome,
                },
                Ok(Some(calls)) => {
                    if let Some(outcome) = self.run_tools(calls).await {
                        return outcome;
                    }
                    if let Some(reason) = self.scope.take_stop() {
                        return Outcome::Failed(ErrorKind::Hook, reason);
                    }
                }
                Err(outcome) => return outcome,
            }
        }
    }

    /// Stores the messages added since the last save.
    fn save(&mut self) -> Result<(), SaveError> {
        let saved = self.sink.append(self.thread, self.saved);
        self.store_failed |= saved.is_err();
        saved?;
        self.saved = self.thread.messages.len();
        Ok(())
    }

    fn rewrite(&mut self) -> Result<(), SaveError> {
        let saved = self.sink.rewrite(self.thread);
        self.store_failed |= saved.is_err();
        saved?;
        self.saved = self.thread.messages.len();
        Ok(())
    }

    /// Counts a model call of the run's own model.
    fn spend(&mut self, usage: &Usage) {
        self.usage.add(usage);
        self.thread.usage.add(usage);
        let model = self.agent.get().provider.model().to_string();
        self.model_usage.entry(model).or_default().add(usage);
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
        let summarization = self.agent.get().summarization.as_ref()?;
        let messages = &self.thread.messages;
        let tokens = match self.last_input {
            Some((exact, covered)) if covered <= messages.len() => {
                exact + estimate_tokens(&messages[covered..])
            }
            _ => estimate_tokens(messages),
        };
        let cut = summarization.cut_point(messages, tokens)?;
        self.before_compact().await;
        let messages = &self.thread.messages;
        let summary = tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Some(Outcome::Interrupted),
            summary = Summarization::summarize(&*self.agent.get().provider, &messages[..cut]) => summary,
        };
        if let Ok((_, Some(usage))) = &summary {
            // The summary call is paid for like any other.
            self.spend(usage);
        }
        match summary.map(|(text, _)| text) {
            Ok(summary) if !summary.is_empty() => {
                if self.agent.get().ledger == LedgerMode::Always {
                    self.ledger.archive(&self.thread.messages);
                }
                Summarization::apply(&mut self.thread.messages, cut, summary);
                self.last_input = None;
                (self.emit)(Event::Summarized {
                    turn: self.turn,
                    replaced_messages: cut,
                    tokens_before: tokens,
                });
                if let Err(err) = self.rewrite() {
                    return Some(Outcome::storage(err));
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
        let (tools, rewritten) = self.agent.get().chain.prepare_model_call(
            &mut self.thread.state,
            &mut self.thread.messages,
            self.agent.get().deferred.bound.clone(),
        );
        if rewritten {
            self.rewrite().map_err(Outcome::storage)?;
        } else if self.thread.messages.len() > self.saved {
            // A layer appended (e.g. images): store it before the call can be interrupted.
            self.save().map_err(Outcome::storage)?;
        }
        self.report_promotions(&before);
        let agent = self.agent.get();
        self.ledger.call(
            self.turn,
            &agent.system_prompt,
            &tools,
            self.thread.messages.len(),
        );
        let tools: Vec<ToolSpec> = tools.iter().map(|t| spec(t.as_ref())).collect();
        let callable = agent
            .deferred
            .catalog
            .as_ref()
            .map(|catalog| catalog.names())
            .unwrap_or_default();
        let request = ModelRequest {
            system: agent.system_prompt.clone(),
            messages: self.thread.messages.clone(),
            tools,
            max_tokens: None,
            callable,
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
            reply = self.agent.get().provider.complete(&request, &on_event) => reply,
        };
        match reply {
            Ok(reply) => Ok(Some(reply)),
            Err(err) => {
                let error = format!("model call failed: {err}");
                let kind = err.kind();
                (self.emit)(Event::TurnFailed {
                    turn,
                    kind,
                    error: error.clone(),
                });
                Err(Outcome::Failed(kind, error))
            }
        }
    }

    /// Lets the layers see the reply, stores it, and returns its tool calls (`None`: the
    /// model answered).
    fn take_reply(&mut self, mut reply: ModelReply) -> Result<Option<Vec<ToolCall>>, Outcome> {
        if let Some(usage) = &reply.usage {
            self.spend(usage);
            self.last_input = Some((usage.input_tokens, self.thread.messages.len()));
            (self.emit)(Event::Usage {
                turn: self.turn,
                usage: *usage,
            });
        }
        let (notices, stop) = self.agent.get().chain.finish_model_call(
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
        self.calls_from_text = reply.from_text;
        self.thread.messages.push(Message::Assistant {
            content: reply.content,
            reasoning: reply.reasoning,
            tool_calls: reply.tool_calls,
        });
        self.save().map_err(Outcome::storage)?;
        (self.emit)(Event::TurnCompleted {
            turn: self.turn,
            finish_reason: reply.finish_reason,
        });
        if let Some(reason) = stop {
            return Err(Outcome::Failed(ErrorKind::Loop, reason));
        }
        Ok((!calls.is_empty()).then_some(calls))
    }

    fn report_promotions(&mut self, before: &[String]) {
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
        let deferred = &self.agent.get().deferred;
        self.ledger
            .promoted(added.iter().filter_map(|name| deferred.tool(name)));
        (self.emit)(Event::ToolsPromoted {
            turn: self.turn,
            added,
            removed,
            promoted: now.clone(),
            catalog_hash: self.thread.state.promoted.catalog_hash.clone(),
        });
    }

    /// The run's ledger (estimated), added to the thread's and stored with it (the state
    /// only, never messages, and not after the store failed: what it holds is then
    /// unknown); a run without one is counted as such.
    fn take_ledger(&mut self, outcome: &Outcome) -> Option<Box<crate::protocol::Ledger>> {
        let agent = self.agent.get();
        let ledger = if agent.ledger == LedgerMode::Always {
            self.ledger
                .ledger(&self.thread.messages, &agent.deferred, Counting::Estimate)
                .inspect_err(|err| tracing::warn!("no context ledger for this run: {err}"))
                .ok()
        } else {
            None
        };
        match &ledger {
            Some(ledger) => add_run(&mut self.thread.state.ledger, ledger),
            None if agent.ledger == LedgerMode::Never => return None,
            None => self.thread.state.ledger.runs_without_ledger += 1,
        }
        if self.store_failed || matches!(outcome, Outcome::Failed(ErrorKind::Storage, _)) {
            tracing::warn!("the thread's context ledger is not saved: its last save failed");
        } else if let Err(err) = self.sink.append(self.thread, self.thread.messages.len()) {
            tracing::warn!("the thread's context ledger was not saved: {err}");
        }
        ledger.map(Box::new)
    }

    fn finish(mut self, outcome: Outcome) -> RunResult {
        // A skill is active for the run that loaded it.
        self.thread.state.active_skills.clear();
        let ledger = self.take_ledger(&outcome);
        let (status, errors, error_kind) = match outcome {
            Outcome::Success => (RunStatus::Success, Vec::new(), None),
            Outcome::Failed(kind, error) => (RunStatus::Failed, vec![error], Some(kind)),
            Outcome::Interrupted => (
                RunStatus::Interrupted,
                vec![String::from("interrupted")],
                None,
            ),
        };
        RunResult {
            is_error: status != RunStatus::Success,
            duration_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            model_usage: self.model_usage,
            status,
            result: self.answer,
            thread_id: self.thread.id.clone(),
            model: self.agent.get().provider.model().to_string(),
            turns: self.turn,
            usage: self.usage,
            thread_usage: self.thread.usage,
            promoted_tools: self.thread.state.promoted.names.clone(),
            files: self.presented,
            notices: self.notices,
            errors,
            error_kind,
            ledger,
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
mod tests;

//! One reply's tool calls: each parsed once into a [`PreparedCall`], through the layers'
//! `before_tool`, the call gates (policy, hooks, the user's answer), the tool, the gates'
//! `after`, and the layers' `after_tool`; results appended in call order.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;

use super::{Agent, Outcome, Run};
use crate::agent::middleware::{ToolStep, execute};
use crate::permissions::CallGates;
use crate::protocol::{Event, Message, ToolCall, ToolRole};
use crate::tools::{PreparedCall, Tool, ToolContext, ToolOutput, ToolSource};

/// The result a tool call gets when the user interrupts the run while it runs.
pub const INTERRUPTED: &str = "Error: interrupted by the user before the tool returned.";

/// How long an interrupted run waits for its running tool calls to end by themselves
/// (each sees the cancellation; an MCP call tells its server) before it drops them.
pub(super) const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// A call's result: the output, how many layers saw it, how long it ran (ms).
type Slot = Option<(ToolOutput, usize, u64)>;

/// A tool to run for a call (`Some(None)`: its tool is unknown, `execute` says so).
type ToRun = Option<Option<Arc<dyn Tool>>>;

impl Run<'_> {
    /// Runs the calls through the layers, appends the results in call order and stores
    /// them. The calls run concurrently when every tool that runs may run in parallel,
    /// else one after the other in call order. `Some`: the run ends here.
    pub(super) async fn run_tools(&mut self, calls: Vec<ToolCall>) -> Option<Outcome> {
        // The tools may have changed since the model saw them: a call made against a
        // schema that is gone is refused, the rest run with the current tools.
        let seen = self.agent.refresh(self.cancel).await;
        let before = self.thread.state.promoted.names.clone();
        let mut prepared: Vec<PreparedCall> = calls.into_iter().map(PreparedCall::new).collect();
        let mut outputs: Vec<Slot> = vec![None; prepared.len()];
        let mut to_run: Vec<ToRun> = vec![None; prepared.len()];
        for (i, call) in prepared.iter().enumerate() {
            (self.emit)(Event::ToolCallStarted {
                turn: self.turn,
                call_id: call.id.clone(),
                name: call.name.clone(),
                role: self.role_of(&call.name),
                arguments: call
                    .value()
                    .cloned()
                    .unwrap_or_else(|| Value::String(call.arguments.clone())),
                from_text: self.calls_from_text,
            });
            let agent = self.agent.get();
            if let Some(stale) = seen.as_ref().and_then(|old| stale_call(old, agent, call)) {
                outputs[i] = Some((stale, agent.chain.len(), 0));
                continue;
            }
            match agent.chain.begin_tool_call(&mut self.thread.state, call) {
                ToolStep::Answered { output, ran } => outputs[i] = Some((output, ran, 0)),
                ToolStep::Run => to_run[i] = Some(agent.deferred.tool(&call.name)),
            }
        }
        let parallel = to_run
            .iter()
            .flatten()
            .all(|tool| tool.as_ref().is_some_and(|t| t.info().parallel));
        let began = vec![None; prepared.len()];
        let mut batch = Batch {
            outputs,
            began,
            interrupted: false,
            layers: self.agent.get().chain.len(),
        };
        if parallel {
            self.run_parallel(&mut prepared, to_run, &mut batch).await;
        } else {
            self.run_in_order(&mut prepared, to_run, seen.as_deref(), &mut batch)
                .await;
        }
        self.take_scope();
        self.finish_calls(&prepared, batch.outputs, batch.began, batch.layers);
        if let Err(err) = self.save() {
            return Some(Outcome::storage(err));
        }
        self.report_promotions(&before);
        self.report_presented();
        batch.interrupted.then_some(Outcome::Interrupted)
    }

    fn context(&self, call: &ToolCall) -> ToolContext<'_> {
        ToolContext {
            call_id: call.id.clone(),
            turn: self.turn,
            cancel: self.cancel.child_token(),
            events: self.emit,
            scope: self.scope.clone(),
        }
    }

    async fn run_parallel(
        &self,
        prepared: &mut [PreparedCall],
        mut to_run: Vec<ToRun>,
        batch: &mut Batch,
    ) {
        let cancel = self.cancel;
        if cancel.is_cancelled() {
            batch.interrupted = true;
            return;
        }
        let gates = self.agent.get().gates.clone();
        let mut pending: FuturesUnordered<_> = prepared
            .iter_mut()
            .enumerate()
            .filter_map(|(i, call)| to_run[i].take().map(|tool| (i, call, tool)))
            .map(|(i, call, tool)| {
                batch.began[i] = Some(Instant::now());
                let ctx = self.context(call);
                timed(i, ctx, call, tool, &gates)
            })
            .collect();
        let layers = batch.layers;
        while !pending.is_empty() {
            tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    batch.interrupted = true;
                    // Calls that see the cancellation end now (an MCP call tells its
                    // server first); their results are the interruption's.
                    let drain = async {
                        while let Some((i, output, ms)) = pending.next().await {
                            batch.outputs[i] = Some((output, layers, ms));
                        }
                    };
                    let _ = tokio::time::timeout(CANCEL_GRACE, drain).await;
                    break;
                }
                Some((i, output, ms)) = pending.next() => {
                    batch.outputs[i] = Some((output, layers, ms));
                }
            }
        }
    }

    /// One call may change the tool list (a server's `tools/list_changed`): each later
    /// call runs only if its tool is still the one the model saw. It runs through the
    /// agent the batch began with, whose layers finish every result.
    async fn run_in_order(
        &self,
        prepared: &mut [PreparedCall],
        to_run: Vec<ToRun>,
        seen: Option<&Agent>,
        batch: &mut Batch,
    ) {
        let cancel = self.cancel;
        let gates = self.agent.get().gates.clone();
        let mut first = true;
        for (i, tool) in to_run.into_iter().enumerate() {
            let Some(tool) = tool else { continue };
            let call = &mut prepared[i];
            if !std::mem::take(&mut first)
                && let Some(latest) = self.agent.latest(cancel).await
            {
                let saw = seen.unwrap_or(self.agent.get());
                if let Some(stale) = stale_call(saw, &latest, call) {
                    batch.outputs[i] = Some((stale, batch.layers, 0));
                    continue;
                }
            }
            // Cancelled before it began: it never begins.
            if cancel.is_cancelled() {
                batch.interrupted = true;
                break;
            }
            batch.began[i] = Some(Instant::now());
            let ctx = self.context(call);
            let running = timed(i, ctx, call, tool, &gates);
            tokio::pin!(running);
            tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    batch.interrupted = true;
                    if let Ok((i, output, ms)) =
                        tokio::time::timeout(CANCEL_GRACE, &mut running).await
                    {
                        batch.outputs[i] = Some((output, batch.layers, ms));
                    }
                    break;
                }
                (i, output, ms) = &mut running => {
                    batch.outputs[i] = Some((output, batch.layers, ms));
                }
            }
        }
    }

    /// The notices and the subagents' model use the calls left in the run's scope.
    fn take_scope(&mut self) {
        for notice in self.scope.take_notices() {
            self.notice(notice);
        }
        // A subagent's model calls count for this run.
        for (model, spent) in self.scope.take_usage() {
            self.usage.add(&spent);
            self.thread.usage.add(&spent);
            self.model_usage.entry(model).or_default().add(&spent);
        }
    }

    /// Hands each output to the layers, reports it and appends it, in call order.
    fn finish_calls(
        &mut self,
        calls: &[PreparedCall],
        outputs: Vec<Slot>,
        began: Vec<Option<Instant>>,
        layers: usize,
    ) {
        for ((call, slot), began) in calls.iter().zip(outputs).zip(began) {
            let (output, ran, ms) = slot.unwrap_or_else(|| {
                let ran_for = began.map_or(0, |at| millis(at.elapsed()));
                (ToolOutput::error(INTERRUPTED), layers, ran_for)
            });
            if let Some(update) = &output.state_update {
                self.just_presented
                    .extend(update.presented_files.iter().cloned());
            }
            let output =
                self.agent
                    .get()
                    .chain
                    .end_tool_call(&mut self.thread.state, call, ran, output);
            (self.emit)(Event::ToolCallFinished {
                turn: self.turn,
                call_id: call.id.clone(),
                name: call.name.clone(),
                role: self.role_of(&call.name),
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
            self.ledger
                .result(&call.name, self.thread.messages.len() - 1);
        }
    }

    /// Announces the files the batch presented that the run had not presented yet.
    fn report_presented(&mut self) {
        let mut presented = std::mem::take(&mut self.just_presented);
        presented.retain(|f| !self.presented.contains(f));
        presented.dedup();
        if !presented.is_empty() {
            self.presented.extend(presented.iter().cloned());
            (self.emit)(Event::FilesPresented {
                turn: self.turn,
                files: presented,
            });
        }
    }

    /// What the tool called `name` is, as its tool says.
    pub(super) fn role_of(&self, name: &str) -> ToolRole {
        self.agent
            .get()
            .deferred
            .tool(name)
            .map_or(ToolRole::Unknown, |tool| tool.role())
    }
}

/// What a batch has found so far.
struct Batch {
    outputs: Vec<Slot>,
    /// When each call began, so that one the interruption ends says how long it ran.
    began: Vec<Option<Instant>>,
    interrupted: bool,
    layers: usize,
}

fn millis(elapsed: std::time::Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

/// The error for a call that `old` (the agent the model saw) and `new` (the agent now) do
/// not offer alike: the tool is gone, has another schema, is now another server's (or
/// another original tool), or was not offered when the model called it.
pub(super) fn stale_call(old: &Agent, new: &Agent, call: &ToolCall) -> Option<ToolOutput> {
    let before = old.deferred.tool(&call.name);
    let now = new.deferred.tool(&call.name);
    let change = match (&before, &now) {
        (None, None) => return None,
        (None, Some(_)) => "was not offered when you called it",
        (Some(_), None) => "is gone",
        (Some(b), Some(n)) if b.info().source != n.info().source => "is now another tool",
        (Some(b), Some(n)) if b.info().parameters != n.info().parameters => "has a new schema",
        (Some(_), Some(_)) => return None,
    };
    let server = match before.as_ref().or(now.as_ref()).map(|t| &t.info().source) {
        Some(ToolSource::Mcp { server, .. }) => format!("MCP server `{server}`"),
        _ => String::from("the toolset"),
    };
    Some(ToolOutput::error(format!(
        "Error: the tools of {server} changed while you were working, and `{}` {change}; \
         this call was not made. Call tool_search again to get the current tools and schemas.",
        call.name
    )))
}

/// Runs call `i` if the gates let it, and measures it: `(i, output, milliseconds)`. The
/// gates see the output of a call that ran before the layers do.
async fn timed(
    i: usize,
    ctx: ToolContext<'_>,
    call: &mut PreparedCall,
    tool: Option<Arc<dyn Tool>>,
    gates: &CallGates,
) -> (usize, ToolOutput, u64) {
    let admitted = match &tool {
        Some(tool) => match gates.admit(&ctx, call, tool.as_ref()).await {
            Ok(admitted) => Some(admitted),
            Err(refused) => return (i, refused, 0),
        },
        None => None,
    };
    let started = Instant::now();
    let output = execute(ctx.clone(), call, tool.clone()).await;
    let ms = millis(started.elapsed());
    match (admitted, &tool) {
        (Some(admitted), Some(tool)) => {
            let mut output = admitted.settle(&ctx, call, output).await;
            gates.after(&ctx, call, tool.as_ref(), &mut output).await;
            (i, output, ms)
        }
        _ => (i, output, ms),
    }
}

//! Subagents: the `task(description, prompt)` tool delegates a self-contained task to an
//! agent that runs the same loop with its own thread state — its own promotions, none of
//! the parent's — and a tool allowlist. Its final answer is the tool result; its events
//! reach the front-ends wrapped in [`Event::Subagent`] with the parent's call id; its model
//! usage counts for the parent's run; cancelling the run cancels it.
//!
//! Limits: at most `subagents.max_concurrent` at once (a semaphore here), at most
//! `subagents.max_total_per_run` per run (a budget of the run's scope), each within
//! `subagents.timeout_seconds`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, json};
use tokio::sync::Semaphore;

use crate::agent::layers::output_budget::OutputBudget;
use crate::agent::layers::redact::Redact;
use crate::agent::layers::{ChainOptions, agent_chain};
use crate::agent::ledger::LedgerMode;
use crate::agent::runner::{Agent, NoSink, Thread};
use crate::config::{McpServerConfig, SubagentsConfig, ToolSearchConfig};
use crate::deferred::{DeferredSetup, TOOL_SEARCH};
use crate::protocol::{Event, RunStatus, Usage};
use crate::provider::Provider;
use crate::tools::Effect;
use crate::tools::{Tool, ToolContext, ToolFuture, ToolInfo, ToolOutput, ToolSource, TypedTool};

pub(crate) const TASK: &str = crate::protocol::SUBAGENT_TOOL;

/// The run-scope budget subagents are counted in.
const BUDGET: &str = "subagents";

/// Tools a subagent never gets unless the allowlist names them: no recursion, no questions
/// to a user who is not watching, no presenting files on the parent's behalf.
const NOT_FOR_SUBAGENTS: &[&str] = &[TASK, "ask_clarification", "present_files"];

/// What a subagent runs with; set once the parent's agent is assembled (the `task` tool is
/// part of the toolset that the deferred setup is computed from, so it cannot be given
/// these at construction).
pub struct SubagentEnv {
    /// The parent's model: subagents call the same one.
    pub provider: Arc<dyn Provider>,
    /// The parent's tools: bound ones and the deferred catalog.
    pub deferred: Arc<DeferredSetup>,
    /// Deferred-loading settings (for the subagent's own chain).
    pub tool_search: ToolSearchConfig,
    /// The MCP servers' configs (routing hints).
    pub servers: Vec<McpServerConfig>,
    /// The subagent's system prompt.
    pub system_prompt: String,
    /// Model calls one subagent may make.
    pub max_turns: u32,
    /// The parent's output budget (`tool_output.max_chars`) and outputs folder: subagents
    /// cap long results the same way, saving them in a subfolder each.
    pub output_budget: Option<(usize, std::path::PathBuf)>,
    /// The parent's secrets, kept out of the subagents' tool results too.
    pub redact: Redact,
    /// The MCP servers' `instructions`, for the subagents' own first searches.
    pub instructions: std::collections::BTreeMap<String, String>,
    /// Whether the model can see images.
    pub vision: bool,
    /// The parent's call gates: a subagent's calls ask, are refused or meet the hooks alike.
    pub gates: Arc<crate::permissions::CallGates>,
    /// The parent's hooks as a subagent fires them (its end is `SubagentStop`).
    pub hooks: Arc<crate::hooks::Hooks>,
    /// The session's skills (their `allowed-tools` restrict a subagent that loads one).
    pub skills: Option<crate::skills::Skills>,
}

/// Where the `task` tool finds its [`SubagentEnv`]: set by whoever assembles the parent
/// agent (the tool is part of the toolset that agent is computed from), and set again when
/// the parent is rebuilt. Clones share it.
#[derive(Clone, Default)]
pub struct SubagentSlot(Arc<RwLock<Option<Arc<SubagentEnv>>>>);

impl SubagentSlot {
    /// Sets the environment of the subagents started from now on.
    pub fn set(&self, env: SubagentEnv) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(env));
    }

    fn get(&self) -> Option<Arc<SubagentEnv>> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The `task` tool.
pub(crate) struct Task {
    info: ToolInfo,
    env: SubagentSlot,
    running: Semaphore,
    max_concurrent: usize,
    max_per_run: usize,
    timeout: Duration,
    allowed: Option<Vec<String>>,
    next_id: AtomicU64,
}

/// A `task` call's arguments.
#[derive(Deserialize)]
pub(crate) struct Args {
    description: String,
    prompt: String,
    #[serde(default)]
    subagent_type: Option<String>,
}

impl Task {
    /// The tool with `config`'s limits; `env` is filled in before the first run.
    pub(crate) fn new(config: &SubagentsConfig, env: SubagentSlot) -> Self {
        Self {
            info: ToolInfo {
                name: TASK.to_string(),
                description: "Delegate a self-contained task to a subagent that works with \
                              its own context and tools and returns only its final answer. \
                              Use it for independent research or multi-step work whose \
                              details you do not need; give it everything it needs in \
                              `prompt`. Several tasks can run in parallel."
                    .to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "description": {"type": "string", "description": "A short (3-5 word) label."},
                        "prompt": {"type": "string", "description": "The complete task, with all context needed."},
                        "subagent_type": {"type": "string", "description": "Optional; only \"general-purpose\" exists."}
                    },
                    "required": ["description", "prompt"]
                }),
                source: ToolSource::BuiltIn,
                metadata: Map::new(),
                // Subagents are meant to work side by side (each has its own thread).
                parallel: true,
            },
            env,
            running: Semaphore::new(config.max_concurrent),
            max_concurrent: config.max_concurrent,
            max_per_run: config.max_total_per_run,
            timeout: Duration::from_secs(config.timeout_seconds),
            allowed: config.tools.clone(),
            next_id: AtomicU64::new(1),
        }
    }

    /// The subagent's tools: the allowlist, or everything but [`NOT_FOR_SUBAGENTS`]. The
    /// deferred catalog stays reachable only if `tool_search` is allowed.
    fn subagent_setup(&self, parent: &DeferredSetup) -> DeferredSetup {
        let allowed = |name: &str| match &self.allowed {
            Some(list) => list.iter().any(|n| n == name),
            None => !NOT_FOR_SUBAGENTS.contains(&name),
        };
        let bound: Vec<Arc<dyn Tool>> = parent
            .bound
            .iter()
            .filter(|t| allowed(&t.info().name))
            .cloned()
            .collect();
        let searchable = bound.iter().any(|t| t.info().name == TOOL_SEARCH);
        parent.narrowed(bound, searchable)
    }

    async fn delegate(&self, ctx: ToolContext<'_>, env: &SubagentEnv, args: Args) -> ToolOutput {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let setup = self.subagent_setup(&env.deferred);
        let agent = Agent {
            provider: env.provider.clone(),
            chain: agent_chain(
                &setup,
                &env.tool_search,
                &env.servers,
                ChainOptions {
                    output_budget: env.output_budget.as_ref().map(|(max, dir)| {
                        OutputBudget::new(*max, dir.join(format!("subagent-{id}")))
                    }),
                    redact: env.redact.clone(),
                    instructions: env.instructions.clone(),
                    vision: env.vision,
                    skills: env.skills.clone(),
                },
            ),
            deferred: Arc::new(setup),
            system_prompt: env.system_prompt.clone(),
            max_turns: env.max_turns,
            summarization: None,
            ledger: LedgerMode::Never,
            gates: env.gates.clone(),
            hooks: env.hooks.clone(),
        };
        let mut thread = Thread {
            id: format!("subagent-{id}"),
            ..Thread::default()
        };
        let description = args.description.clone();
        let (events, parent_call_id) = (ctx.events, ctx.call_id.clone());
        // Each model call's usage is the parent run's as soon as it is known, so that an
        // interrupted subagent (its call dropped) has still been paid for.
        let counted_total = Mutex::new(Usage::default());
        let (scope, counted) = (ctx.scope.clone(), &counted_total);
        let model = env.provider.model().to_string();
        let emit = move |event: Event| {
            if let Event::Usage { usage, .. } = &event {
                scope.add_usage(&model, usage);
                counted
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .add(usage);
            }
            events(Event::Subagent {
                parent_call_id: parent_call_id.clone(),
                subagent: id,
                description: description.clone(),
                event: Box::new(event),
            })
        };
        let run = agent.run(&mut thread, args.prompt, &NoSink, &emit, &ctx.cancel);
        let outcome = tokio::time::timeout(self.timeout, run).await;
        // The rest of what it spent (its own tools' model calls) once it is done.
        let counted = *counted_total.lock().unwrap_or_else(PoisonError::into_inner);
        ctx.scope
            .add_usage(env.provider.model(), &thread.usage.minus(&counted));
        match outcome {
            Err(_) => ToolOutput::error(format!(
                "Error: the subagent `{}` timed out after {} s (subagents.timeout_seconds).",
                args.description,
                self.timeout.as_secs()
            )),
            Ok(result) if result.status == RunStatus::Success => ToolOutput::ok(result.result),
            Ok(result) => ToolOutput::error(format!(
                "Error: the subagent `{}` failed: {}{}",
                args.description,
                result.errors.join("; "),
                if result.result.is_empty() {
                    String::new()
                } else {
                    format!("\nIts last answer: {}", result.result)
                }
            )),
        }
    }
}

impl TypedTool for Task {
    type Args = Args;

    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn role(&self) -> crate::protocol::ToolRole {
        crate::protocol::ToolRole::Subagent
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn unparsed(&self, parse_error: ToolOutput) -> ToolOutput {
        refuse(parse_error.content)
    }

    fn run<'a>(&'a self, ctx: ToolContext<'a>, args: Args) -> ToolFuture<'a> {
        Box::pin(async move {
            if let Some(kind) = args.subagent_type.as_deref()
                && kind != "general-purpose"
            {
                return refuse(format!(
                    "unknown subagent_type `{kind}`; the only type is `general-purpose`."
                ));
            }
            let Some(env) = self.env.get() else {
                return refuse(String::from("subagents are not available in this session."));
            };
            let Ok(_permit) = self.running.try_acquire() else {
                return refuse(format!(
                    "{} subagents are already running (subagents.max_concurrent); wait for \
                     their results or do this task yourself.",
                    self.max_concurrent
                ));
            };
            // Counted last: a call refused for another reason leaves the budget alone.
            if !ctx.scope.take(BUDGET, self.max_per_run) {
                return refuse(format!(
                    "this run has already started {} subagents (subagents.max_total_per_run); \
                     do the remaining work yourself.",
                    self.max_per_run
                ));
            }
            self.delegate(ctx, &env, args).await
        })
    }
}

fn refuse(why: String) -> ToolOutput {
    ToolOutput::error(format!("Error: no subagent was started: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deferred::setup_deferred;
    use crate::provider::testing::Silent;
    use crate::tools::CallStandalone;
    use crate::tools::Toolset;
    use serde_json::Value;

    fn task(max_concurrent: usize, env: Option<SubagentEnv>) -> Task {
        let config = SubagentsConfig {
            enabled: true,
            max_concurrent,
            ..SubagentsConfig::default()
        };
        let slot = SubagentSlot::default();
        if let Some(env) = env {
            slot.set(env);
        }
        Task::new(&config, slot)
    }

    fn env() -> SubagentEnv {
        SubagentEnv {
            provider: Arc::new(Silent::new()),
            deferred: Arc::new(
                setup_deferred(&Toolset::default(), &ToolSearchConfig::default(), None).unwrap(),
            ),
            tool_search: ToolSearchConfig::default(),
            servers: Vec::new(),
            system_prompt: String::new(),
            max_turns: 5,
            output_budget: None,
            redact: Redact::default(),
            instructions: Default::default(),
            vision: false,
            gates: Arc::new(crate::permissions::CallGates::allow_all()),
            hooks: Arc::default(),
            skills: None,
        }
    }

    fn args() -> Value {
        json!({"description": "d", "prompt": "p"})
    }

    #[tokio::test]
    async fn calls_beyond_max_concurrent_get_an_error_at_once() {
        let tool = task(1, Some(env()));
        let first = tool.call_standalone(args());
        let second = tool.call_standalone(args());
        // The first holds the only slot (its model never answers); the second is refused
        // without waiting.
        let out = tokio::select! {
            biased;
            _ = first => panic!("the first subagent cannot finish"),
            out = second => out,
        };
        assert!(out.is_error);
        assert!(
            out.content.contains("1 subagents are already running"),
            "{}",
            out.content
        );
        let out = tool
            .call_standalone(json!({"description": "d", "prompt": "p", "subagent_type": "x"}))
            .await;
        assert!(
            out.content.contains("unknown subagent_type"),
            "{}",
            out.content
        );
        // Arguments that do not parse are refused in the tool's own words, before a slot
        // or the run's budget is touched.
        let out = tool.call_standalone(json!({"prompt": "p"})).await;
        assert!(out.is_error);
        assert!(
            out.content.starts_with("Error: no subagent was started: ")
                && out.content.contains("description"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn without_an_environment_or_with_a_timeout_the_call_fails_cleanly() {
        let out = task(1, None).call_standalone(args()).await;
        assert!(out.is_error && out.content.contains("not available"));
        let mut tool = task(1, Some(env()));
        tool.timeout = Duration::from_millis(10);
        let out = tool.call_standalone(args()).await;
        assert!(
            out.is_error && out.content.contains("timed out"),
            "{}",
            out.content
        );
    }
}

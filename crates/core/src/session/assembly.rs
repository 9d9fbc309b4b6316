//! One long-lived assembly per session: the sandbox and configured tools, the built-in
//! tools, the MCP servers and the current deferred setup, kept from run to run. Before each
//! step of a run, [`AgentSource::current`] checks cheaply what could have changed — the
//! extensions file, each server's tool-list version, the model, the thread — and rebuilds
//! only what did: a changed tool list rebuilds the MCP tier and the catalog, not the
//! sandbox; a new thread only the prompt and the output folder (and, under Landlock, the
//! sandbox, whose rules name that folder).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::Mutex;

use crate::agent::layers::output_budget::OutputBudget;
use crate::agent::layers::summarize::Summarization;
use crate::agent::layers::{ChainOptions, agent_chain};
use crate::agent::ledger::LedgerMode;
use crate::agent::prompt::{PromptParts, subagent_prompt, system_prompt};
use crate::agent::runner::{Agent, AgentSource};
use crate::agent::subagent::{SubagentEnv, SubagentSlot};
use crate::config::{EnvLookup, SandboxMode, SummarizationConfig};
use crate::deferred::{DEFAULT_CONTEXT_WINDOW, DeferredSetup};
use crate::hooks::Hooks;
use crate::mcp::McpManager;
use crate::permissions::CallGates;
use crate::provider::Provider;
use crate::setup::{Setup, SetupError, assemble_tiers};
use crate::tools::Tool;
use crate::tools::builtin::Clarifications;
use crate::tools::sandbox::ThreadOutputs;

/// How many recent messages summarisation keeps when config.yaml does not say.
const DEFAULT_KEEP_MESSAGES: usize = 10;

/// What a session's agents are built with besides the setup.
pub struct AssemblySpec {
    /// The model in use; [`Assembly::set_model`] switches it.
    pub provider: Arc<dyn Provider>,
    /// The configured model name in use (`None`: the default).
    pub model: Option<String>,
    /// The most model calls per run.
    pub max_turns: u32,
    /// Where `ask_clarification` asks, when a person can answer.
    pub clarifications: Option<Clarifications>,
    /// Which calls run, ask first, or are refused: the policy, then the hooks' gate.
    pub gates: Arc<CallGates>,
    /// The session's hooks; subagents get their [`Hooks::for_subagent`] form.
    pub hooks: Arc<Hooks>,
    /// What the user and the project add to the system prompt.
    pub prompt: PromptParts,
}

/// The thread the agent works on: its creation date (for a system prompt that stays the
/// same for the thread) and its saved-outputs folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadPlace {
    /// `YYYY-MM-DD`.
    pub date: String,
    /// Where the output budget saves full tool outputs for this thread.
    pub outputs: PathBuf,
}

/// The assembly. Every method takes `&self`: a run holds it as its [`AgentSource`] while
/// the session keeps using it.
pub struct Assembly {
    inner: Mutex<Inner>,
}

struct Inner {
    setup: Setup,
    cwd: PathBuf,
    spec: AssemblySpec,
    /// The thread worked on; none before the first run of a new session.
    place: Option<ThreadPlace>,
    /// Shared with the file tools' workspace: switched, not rebuilt, with the thread.
    thread_outputs: ThreadOutputs,
    /// The configured tools, holding the sandbox runtime, and the outputs folder they were
    /// built for. Built once; under Landlock again for each thread, because the worker's
    /// rules (the thread's outputs folder among them) are fixed when it starts.
    configured: (Option<PathBuf>, Vec<Arc<dyn Tool>>),
    builtins: Vec<Arc<dyn Tool>>,
    subagents: Option<SubagentSlot>,
    mcp: Arc<McpManager>,
    /// Each server's tool-list version when its tools were last taken.
    listed: Vec<u64>,
    deferred: Option<Arc<DeferredSetup>>,
    agent: Option<Arc<Agent>>,
    /// How many times the tools were rebuilt (for the benchmark and the tests).
    rebuilds: u64,
}

impl Assembly {
    /// Starts the MCP servers and builds the configured and built-in tools.
    pub async fn new(
        mut setup: Setup,
        cwd: &Path,
        spec: AssemblySpec,
        env: EnvLookup<'_>,
    ) -> Result<Self, SetupError> {
        let mcp = setup.mcp(env).await?;
        let thread_outputs = ThreadOutputs::default();
        let configured = setup.configured_tools(None, &thread_outputs)?;
        let built = setup.builtins(
            spec.model.as_deref(),
            spec.clarifications.as_ref(),
            &thread_outputs,
        )?;
        let inner = Inner {
            setup,
            cwd: cwd.to_path_buf(),
            spec,
            place: None,
            thread_outputs,
            configured: (None, configured),
            builtins: built.tools,
            subagents: built.subagents,
            mcp,
            listed: Vec::new(),
            deferred: None,
            agent: None,
            rebuilds: 0,
        };
        Ok(Self {
            inner: Mutex::new(inner),
        })
    }

    /// The agent for the next run, built now if anything changed: a failure is reported
    /// here, before the run starts.
    pub async fn prepare(&self) -> Result<Arc<Agent>, SetupError> {
        self.inner.lock().await.current().await
    }

    /// Works on this thread from the next step on.
    pub async fn set_thread(&self, place: ThreadPlace) {
        let mut inner = self.inner.lock().await;
        if inner.place.as_ref() != Some(&place) {
            inner.thread_outputs.set(Some(&place.outputs));
            inner.place = Some(place);
            inner.agent = None;
        }
    }

    /// Uses another model from the next step on (its vision support decides `view_image`).
    pub async fn set_model(
        &self,
        provider: Arc<dyn Provider>,
        model: Option<String>,
    ) -> Result<(), SetupError> {
        let mut inner = self.inner.lock().await;
        let built = inner.setup.builtins(
            model.as_deref(),
            inner.spec.clarifications.as_ref(),
            &inner.thread_outputs,
        )?;
        inner.builtins = built.tools;
        inner.subagents = built.subagents;
        inner.spec.provider = provider;
        inner.spec.model = model;
        inner.deferred = None;
        inner.agent = None;
        Ok(())
    }

    /// Found once at start (frontmatter only): the same for every thread.
    pub async fn skills(&self) -> crate::skills::Skills {
        self.inner.lock().await.setup.skills().clone()
    }

    /// Lets the file tools read the folders of the skills `names` (the thread's loaded
    /// ones) and no others.
    pub async fn grant_skills(&self, names: &[String]) {
        let inner = self.inner.lock().await;
        let skills = inner.setup.skills();
        let folders = names
            .iter()
            .filter_map(|n| skills.get(n))
            .map(|s| s.dir.clone())
            .collect();
        inner.setup.skill_reads().set(folders);
    }

    /// The MCP servers in use now.
    pub async fn mcp(&self) -> Arc<McpManager> {
        self.inner.lock().await.mcp.clone()
    }

    /// `text` with every secret value antler knows replaced (for turns made of what MCP
    /// servers sent: prompts, attachments).
    pub async fn redact(&self, text: &str) -> String {
        let inner = self.inner.lock().await;
        inner.setup.redact(&inner.mcp).apply(text).into_owned()
    }

    /// Where OAuth tokens are kept.
    pub async fn tokens(&self) -> Option<crate::mcp::oauth::TokenStore> {
        self.inner.lock().await.setup.tokens().cloned()
    }

    /// The workspace the file tools work in.
    pub async fn workspace(&self) -> Result<crate::tools::sandbox::Workspace, SetupError> {
        let inner = self.inner.lock().await;
        inner.setup.workspace(&inner.thread_outputs)
    }

    /// The current deferred setup, refreshed (for the tools view).
    pub async fn deferred(&self) -> Result<Arc<DeferredSetup>, SetupError> {
        self.inner.lock().await.refresh().await
    }

    /// How many times the tools were rebuilt so far.
    pub async fn rebuilds(&self) -> u64 {
        self.inner.lock().await.rebuilds
    }

    /// The configured model name in use.
    pub async fn model(&self) -> Option<String> {
        self.inner.lock().await.spec.model.clone()
    }
}

impl AgentSource for Assembly {
    fn current(&self) -> BoxFuture<'_, Option<Arc<Agent>>> {
        Box::pin(async move {
            match self.inner.lock().await.current().await {
                Ok(agent) => Some(agent),
                Err(err) => {
                    tracing::warn!(
                        "the tools cannot be rebuilt; the run goes on with the old ones: {err}"
                    );
                    None
                }
            }
        })
    }
}

impl Inner {
    /// The tools as things are now: the MCP servers of the extensions file as it is, the
    /// servers that announced a change listed again, and the deferred setup rebuilt only
    /// when something changed.
    async fn refresh(&mut self) -> Result<Arc<DeferredSetup>, SetupError> {
        let env = |name: &str| std::env::var(name).ok();
        let mcp = self.setup.mcp(&env).await?;
        if !Arc::ptr_eq(&mcp, &self.mcp) {
            self.mcp = mcp;
            self.deferred = None;
        }
        // Re-lists the servers that announced a change.
        let versions = self.mcp.list_versions().await;
        if versions != self.listed {
            self.deferred = None;
        }
        let outputs = self.place.as_ref().map(|p| p.outputs.clone());
        if self.setup.app.value.sandbox.mode == SandboxMode::Landlock
            && self.configured.0 != outputs
        {
            let tools = self.setup.configured_tools(None, &self.thread_outputs)?;
            self.configured = (outputs, tools);
            self.deferred = None;
        }
        if let Some(deferred) = &self.deferred {
            return Ok(deferred.clone());
        }
        let toolset = assemble_tiers(
            self.configured.1.clone(),
            self.builtins.clone(),
            self.mcp.tools().await,
        );
        let deferred = Arc::new(self.setup.deferred(
            &toolset,
            self.spec.model.as_deref(),
            &self.mcp.configs(),
        )?);
        self.deferred = Some(deferred.clone());
        self.listed = versions;
        self.agent = None;
        self.rebuilds += 1;
        Ok(deferred)
    }

    /// The agent as things are now, rebuilding what changed.
    async fn current(&mut self) -> Result<Arc<Agent>, SetupError> {
        let deferred = self.refresh().await?;
        if let Some(agent) = &self.agent {
            return Ok(agent.clone());
        }
        let instructions = self.mcp.instructions().await;
        let agent = Arc::new(self.agent_over(deferred, instructions)?);
        self.agent = Some(agent.clone());
        Ok(agent)
    }

    /// The agent over `deferred` for the thread; the subagents' environment is set to
    /// match it.
    fn agent_over(
        &self,
        deferred: Arc<DeferredSetup>,
        instructions: BTreeMap<String, String>,
    ) -> Result<Agent, SetupError> {
        let Some(place) = &self.place else {
            return Err(SetupError::Workspace(std::io::Error::other(
                "no thread to work on yet",
            )));
        };
        let setup = &self.setup;
        let config = &setup.app.value;
        let model = self.spec.model.as_deref();
        let servers: Vec<_> = self
            .mcp
            .servers()
            .iter()
            .map(|s| s.config().clone())
            .collect();
        let window = setup
            .context_window(model)
            .unwrap_or(DEFAULT_CONTEXT_WINDOW);
        let redact = setup.redact(&self.mcp);
        let vision = setup.model_config(model).is_some_and(|m| m.supports_vision);
        if let Some(slot) = &self.subagents {
            slot.set(SubagentEnv {
                provider: self.spec.provider.clone(),
                deferred: deferred.clone(),
                tool_search: config.tool_search.clone(),
                servers: servers.clone(),
                system_prompt: subagent_prompt(
                    &place.date,
                    &self.cwd,
                    &deferred,
                    &self.spec.prompt,
                ),
                max_turns: self.spec.max_turns,
                output_budget: Some((config.tool_output.max_chars, place.outputs.clone())),
                redact: redact.clone(),
                instructions: instructions.clone(),
                vision,
                gates: self.spec.gates.clone(),
                hooks: Arc::new(self.spec.hooks.for_subagent()),
                skills: Some(setup.skills().clone()),
            });
        }
        let options = ChainOptions {
            output_budget: Some(OutputBudget::new(
                config.tool_output.max_chars,
                place.outputs.clone(),
            )),
            redact,
            instructions,
            vision,
            skills: Some(setup.skills().clone()),
        };
        Ok(Agent {
            provider: self.spec.provider.clone(),
            chain: agent_chain(&deferred, &config.tool_search, &servers, options),
            system_prompt: system_prompt(&place.date, &self.cwd, &deferred, &self.spec.prompt),
            deferred,
            max_turns: self.spec.max_turns,
            summarization: summarization(&config.summarization, window),
            // Every session run takes its (estimated) ledger; subagents set their own.
            ledger: LedgerMode::Always,
            gates: self.spec.gates.clone(),
            hooks: self.spec.hooks.clone(),
        })
    }
}

/// Summarisation settings: on unless disabled; the trigger defaults to 75% of the context
/// window.
fn summarization(config: &SummarizationConfig, window: u32) -> Option<Summarization> {
    if config.enabled == Some(false) {
        return None;
    }
    Some(Summarization {
        trigger_tokens: config.trigger_tokens.unwrap_or(u64::from(window) * 3 / 4),
        keep_messages: config.keep_messages.unwrap_or(DEFAULT_KEEP_MESSAGES),
    })
}

/// The folder for full tool outputs next to the threads database, created. Each thread
/// saves into (and its tools read only) its own subfolder.
pub fn prepare_outputs(db: &Path) -> std::io::Result<PathBuf> {
    let outputs = db.with_file_name("outputs");
    crate::base::private_file::create_dir(&outputs)?;
    Ok(outputs)
}

//! Building an [`Agent`] from the setup: the one place both front-ends (one-shot and
//! interactive) assemble the toolset, the deferred setup, the layer chain, the system
//! prompt and the subagents' environment.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::layers::output_budget::OutputBudget;
use crate::agent::layers::summarize::Summarization;
use crate::agent::layers::{ChainOptions, agent_chain};
use crate::agent::prompt::{subagent_prompt, system_prompt};
use crate::agent::runner::Agent;
use crate::agent::subagent::SubagentEnv;
use crate::config::SummarizationConfig;
use crate::deferred::{DEFAULT_CONTEXT_WINDOW, DeferredSetup};
use crate::mcp::McpManager;
use crate::provider::Provider;
use crate::setup::{Setup, SetupError};
use crate::tools::builtin::Clarifications;

/// How many recent messages summarisation keeps when config.yaml does not say.
const DEFAULT_KEEP_MESSAGES: usize = 10;

/// What an agent is built from besides the setup.
pub struct AgentSpec<'a> {
    /// The model.
    pub provider: Arc<dyn Provider>,
    /// The configured model name in use (`None`: the default).
    pub model: Option<&'a str>,
    /// The thread's creation date (`YYYY-MM-DD`), for a stable system prompt.
    pub date: &'a str,
    /// The working directory.
    pub cwd: &'a Path,
    /// Where the output budget saves full tool outputs for this thread.
    pub outputs: PathBuf,
    /// The most model calls per run.
    pub max_turns: u32,
    /// Where `ask_clarification` asks, when a person can answer.
    pub clarifications: Option<Clarifications>,
}

/// An assembled agent and the handles its front-end needs.
pub struct Assembled {
    /// The agent.
    pub agent: Agent,
    /// The deferred setup it uses (shared with the agent), for tool views.
    pub deferred: Arc<DeferredSetup>,
}

/// Assembles the agent for `spec` over the current MCP tools.
pub async fn assemble_agent(
    setup: &Setup,
    mcp: &McpManager,
    spec: AgentSpec<'_>,
) -> Result<Assembled, SetupError> {
    // The thread's own saved outputs are the only ones its tools may read.
    std::fs::create_dir_all(&spec.outputs).map_err(SetupError::Workspace)?;
    let builtins = setup.builtins(
        spec.model,
        spec.clarifications.as_ref(),
        Some(&spec.outputs),
    )?;
    let toolset = setup
        .toolset(mcp, None, builtins.tools, Some(&spec.outputs))
        .await?;
    let deferred = Arc::new(setup.deferred(&toolset, spec.model)?);
    let servers: Vec<_> = mcp.servers().iter().map(|s| s.config().clone()).collect();
    let config = &setup.app.value;
    let window = setup
        .context_window(spec.model)
        .unwrap_or(DEFAULT_CONTEXT_WINDOW);
    let section = deferred.prompt_section();
    let redact = setup.redact(mcp);
    if let Some(env) = &builtins.subagents {
        // Set once per assembly: each assembly has its own cell.
        let _ = env.set(SubagentEnv {
            provider: spec.provider.clone(),
            deferred: deferred.clone(),
            tool_search: config.tool_search.clone(),
            servers: servers.clone(),
            system_prompt: subagent_prompt(spec.date, spec.cwd, &section),
            max_turns: spec.max_turns,
            output_budget: Some((config.tool_output.max_chars, spec.outputs.clone())),
            redact: redact.clone(),
        });
    }
    let options = ChainOptions {
        output_budget: Some(OutputBudget::new(
            config.tool_output.max_chars,
            spec.outputs,
        )),
        redact: redact.clone(),
    };
    let agent = Agent {
        provider: spec.provider,
        chain: agent_chain(&deferred, &config.tool_search, &servers, options),
        system_prompt: system_prompt(spec.date, spec.cwd, &section),
        deferred: deferred.clone(),
        max_turns: spec.max_turns,
        summarization: summarization(&config.summarization, window),
    };
    Ok(Assembled { agent, deferred })
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
    std::fs::create_dir_all(&outputs)?;
    Ok(outputs)
}

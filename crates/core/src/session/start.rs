//! A session's start: the quick part that fails on what the user can fix at once (the
//! model, the thread asked for, the replay file, the store) before the chat takes the
//! screen, then the MCP servers and the tools ([`Starting::finish`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;

use super::assembly::{Assembly, AssemblySpec, prepare_outputs};
use super::handle::{OpenThread, Session, lookup, model_choices, open_stored, thread_info};
use super::options::{PermissionOptions, SessionError, SessionOptions, StartThread};
use crate::config::{EnvLookup, ModelConfig};
use crate::mcp::elicitation::Elicitations;
use crate::permissions::{
    ApprovalStore, Approvals, CallGates, Guarded, Permissions, Policy, Watched,
};
use crate::protocol::{ClarificationRequest, Message, SessionInfo};
use crate::provider::replay::{RecordingProvider, ReplayProvider};
use crate::provider::resolve::{ChosenModel, model_provider};
use crate::session::instructions::{self, Instructions, InstructionsError, PromptOptions};
use crate::setup::Setup;
use crate::store::{ThreadStore, default_path};
use crate::tools::builtin::Clarifications;
use crate::tools::sandbox::{HOOK_SETTINGS, STARTUP_FILES, ThreadOutputs};

/// The environment variables model resolution reads, captured at start so the session
/// owns everything it needs (and can run on any task).
const MODEL_ENV: &[&str] = &["OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTLER_MODEL"];

/// A session whose quick part is done — the model resolved, the store and the thread to
/// start on opened — before its MCP servers start ([`Starting::finish`]). The split lets
/// the chat report these errors before it takes the screen, and draw the screen while the
/// servers start.
pub struct Starting {
    setup: Setup,
    spec: AssemblySpec,
    models: Vec<ModelConfig>,
    env: Vec<(String, String)>,
    cwd: PathBuf,
    store: ThreadStore,
    outputs: PathBuf,
    thread: Option<OpenThread>,
    questions: Option<UnboundedReceiver<ClarificationRequest>>,
    elicitations: Option<Elicitations>,
    approvals: Option<Approvals>,
    model_notice: Option<String>,
}

impl Starting {
    /// The status line's facts before the servers are up (no MCP counts yet).
    pub fn info(&self) -> SessionInfo {
        let env = lookup(&self.env);
        thread_info(
            self.spec.provider.as_ref(),
            &model_choices(&self.models, self.spec.model.as_deref(), &env),
            self.thread.as_ref(),
            false,
        )
    }

    /// The messages of the thread to start on, if it is a stored one.
    pub fn history(&self) -> Option<&[Message]> {
        self.thread.as_ref().map(|t| t.thread.messages.as_slice())
    }

    /// Starts the MCP servers and builds the tools: the session is ready. With
    /// `clarify`, the questions of `ask_clarification` arrive on the receiver returned.
    /// Dropping the future stops the servers that were starting.
    pub async fn finish(
        self,
        env: EnvLookup<'_>,
    ) -> Result<(Session, Option<UnboundedReceiver<ClarificationRequest>>), SessionError> {
        let provider = self.spec.provider.clone();
        let model_name = self.spec.model.clone();
        let clarifications = self.spec.clarifications.clone();
        let elicitations = self.elicitations;
        let approvals = self.approvals;
        let prompt = self.spec.prompt.clone();
        let hooks = self.spec.hooks.clone();
        let assembly = Assembly::new(self.setup, &self.cwd, self.spec, env).await?;
        let session = Session {
            assembly,
            models: self.models,
            env: self.env,
            cwd: self.cwd,
            store: self.store,
            outputs: self.outputs,
            provider,
            thread: self.thread,
            clarifications,
            elicitations,
            approvals,
            prompt,
            hooks,
            started: false,
            model_notice: self.model_notice,
            model_name,
        };
        Ok((session, self.questions))
    }
}

impl Session {
    /// Resolves the model, opens the store and the thread to start on, and starts the MCP
    /// servers: [`Session::prepare`], then [`Starting::finish`].
    pub async fn start(
        setup: Setup,
        env: EnvLookup<'_>,
        cwd: &Path,
        options: SessionOptions,
    ) -> Result<(Self, Option<UnboundedReceiver<ClarificationRequest>>), SessionError> {
        Self::prepare(setup, env, cwd, options)?.finish(env).await
    }

    /// The quick part of the start, which fails on what the user can fix at once (the
    /// model, the thread asked for, the replay file) or the store: everything but the MCP
    /// servers.
    pub fn prepare(
        mut setup: Setup,
        env: EnvLookup<'_>,
        cwd: &Path,
        options: SessionOptions,
    ) -> Result<Starting, SessionError> {
        let models = setup.app.value.models.clone();
        let ChosenModel {
            provider,
            notice: model_notice,
            embedded,
        } = provider_for(&models, options.model.as_deref(), env, cwd, &options)?;
        let db = default_path(env)?;
        let store = ThreadStore::open(&db)?;
        let outputs = prepare_outputs(&db).map_err(SessionError::Outputs)?;
        let thread = match &options.thread {
            StartThread::New => None,
            StartThread::Resume(id) => Some(open_stored(&store, id).map_err(SessionError::Resume)?),
            StartThread::Latest => match store.latest_in(cwd)? {
                Some(meta) => Some(open_stored(&store, &meta.id).map_err(SessionError::Resume)?),
                None => return Err(SessionError::NothingToContinue(cwd.to_path_buf())),
            },
        };
        let elicitations = match options.clarify {
            true => Some(setup.answer_elicitations()),
            false => {
                setup.answer_elicitations_unattended(options.elicitation);
                None
            }
        };
        let approvals = options.clarify.then(Approvals::default);
        let permissions = permissions(&setup, env, cwd, options.permissions, approvals.clone());
        let hooks = setup.hooks().clone();
        let mut gates = CallGates::new(permissions);
        if let Some(gate) = crate::hooks::gate::HookGate::new(hooks.clone()) {
            gates = gates.with(Arc::new(gate));
        }
        let instructions = instructions(&setup, env, cwd, &options.prompt)?;
        let (clarifications, questions) = match options.clarify {
            true => {
                let (broker, questions) = Clarifications::new();
                (Some(broker), Some(questions))
            }
            false => (None, None),
        };
        Ok(Starting {
            setup,
            spec: AssemblySpec {
                provider,
                // The embedded model's window and limits follow its name.
                model: match embedded {
                    true => Some(crate::provider::embedded::EMBEDDED.to_string()),
                    false => options.model,
                },
                max_turns: options.max_turns,
                clarifications,
                gates: Arc::new(gates),
                hooks,
                prompt: instructions.parts.clone(),
            },
            models,
            env: MODEL_ENV
                .iter()
                .filter_map(|name| env(name).map(|value| (name.to_string(), value)))
                .collect(),
            cwd: cwd.to_path_buf(),
            store,
            outputs,
            thread,
            questions,
            elicitations,
            approvals,
            model_notice,
        })
    }
}

/// Opens a stored thread by id or prefix, to continue it.
/// The session's permission gate: config.yaml's rules with the command line's, the
/// approvals kept for this project (the working directory), and who answers questions.
fn permissions(
    setup: &Setup,
    env: EnvLookup<'_>,
    cwd: &Path,
    options: PermissionOptions,
    approvals: Option<Approvals>,
) -> Arc<Permissions> {
    let policy = Policy::new(
        setup.app.value.permissions.clone(),
        options.allowed,
        options.denied,
        options.allow_all,
    );
    let project = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let store =
        crate::config::dirs::data_dir(env).map(|dir| (ApprovalStore::in_dir(&dir), project));
    Arc::new(Permissions::new(policy, store, approvals).watching(guarded(setup, env, cwd)))
}

/// The files no call may change unasked: every place an instructions file of this session
/// could be, and antler's start-up files (in the workspace root and the working directory,
/// and the config files in use).
fn guarded(setup: &Setup, env: EnvLookup<'_>, cwd: &Path) -> Guarded {
    let workspace = workspace_of(setup, cwd);
    let config_dir = crate::config::dirs::config_dir(env);
    let instructions = instructions::candidate_paths(config_dir.as_deref(), &workspace)
        .into_iter()
        .map(|path| (path, Watched::Instructions));
    let startup = [workspace.as_path(), cwd]
        .into_iter()
        .flat_map(|dir| {
            STARTUP_FILES
                .iter()
                .chain(HOOK_SETTINGS)
                .map(move |name| dir.join(name))
        })
        .chain(setup.protected(&ThreadOutputs::default()).files)
        // The user's Claude Code settings, whose hooks run at the next start unasked.
        .chain(
            setup
                .app
                .value
                .hooks
                .import_claude
                .then(|| {
                    crate::hooks::claude::user_settings(env("HOME").map(PathBuf::from).as_deref())
                })
                .flatten(),
        )
        .map(|path| (path, Watched::Startup));
    Guarded::new(instructions.chain(startup).collect(), &workspace)
}

/// The workspace root `sandbox.workspace` names (the working directory by default).
fn workspace_of(setup: &Setup, cwd: &Path) -> PathBuf {
    let sandbox = &setup.app.value.sandbox;
    cwd.join(sandbox.workspace.as_deref().unwrap_or(Path::new(".")))
}

/// The session's additions to the system prompt, read once (the instruction files named in
/// the log).
fn instructions(
    setup: &Setup,
    env: EnvLookup<'_>,
    cwd: &Path,
    options: &PromptOptions,
) -> Result<Instructions, InstructionsError> {
    let workspace = workspace_of(setup, cwd);
    let config_dir = crate::config::dirs::config_dir(env);
    let loaded = Instructions::load(
        options,
        setup.app.value.instructions.as_deref(),
        config_dir.as_deref(),
        &workspace,
    )?;
    for file in &loaded.files {
        tracing::info!("instructions from {}", file.display());
    }
    Ok(loaded)
}

/// The model: a replay file, or the one `model` resolves to (an endpoint, or the embedded
/// model); recorded when asked.
fn provider_for(
    models: &[ModelConfig],
    model: Option<&str>,
    env: EnvLookup<'_>,
    cwd: &Path,
    options: &SessionOptions,
) -> Result<ChosenModel, SessionError> {
    let mut chosen = match &options.replay {
        Some(path) => ChosenModel {
            provider: Arc::new(ReplayProvider::open(cwd.join(path)).map_err(SessionError::Replay)?),
            notice: None,
            embedded: false,
        },
        None => model_provider(models, model, env)?,
    };
    if let Some(path) = &options.record {
        chosen.provider = Arc::new(
            RecordingProvider::create(cwd.join(path), chosen.provider)
                .map_err(SessionError::Replay)?,
        );
    }
    Ok(chosen)
}

//! The session controller: turns a front-end's [`Command`]s into runs on threads and sends
//! back [`Update`]s. One run at a time; while it runs, `Cancel`, `Quit` and `ShowMcp` act
//! at once and other commands wait for the run to end.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

use super::assembly::{Assembly, AssemblySpec, ThreadPlace, prepare_outputs};
use crate::agent::runner::{Thread, run_live};
use crate::config::{EnvLookup, ModelConfig};
use crate::deferred::TOOL_SEARCH;
use crate::protocol::{Command, SessionInfo, ToolsView, Update};
use crate::protocol::{Event, RunStatus, ServerState};
use crate::provider::Provider;
use crate::provider::resolve::{ModelError, openai_provider};
use crate::setup::{Setup, SetupError};
use crate::store::{StoreError, StoreSink, ThreadStore, default_path, title_from};
use crate::tools::builtin::Clarifications;

/// Why a session cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The configuration cannot be used.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The model cannot be resolved or its client built.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The threads database cannot be used.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The outputs folder cannot be created.
    #[error("cannot create the outputs folder: {0}")]
    Outputs(std::io::Error),
}

/// How the session starts.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// The model (`--model`).
    pub model: Option<String>,
    /// The most model calls per run (`--max-turns`).
    pub max_turns: u32,
    /// A thread to open (`--resume`).
    pub resume: Option<String>,
    /// Open the newest thread of the working directory (`--continue`).
    pub continue_latest: bool,
}

/// The thread in use, with its creation time (the system prompt's date).
struct OpenThread {
    thread: Thread,
    created_at: i64,
    title: String,
}

/// The environment variables model resolution reads, captured at start so the session
/// owns everything it needs (and can run on any task).
const MODEL_ENV: &[&str] = &["OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTLER_MODEL"];

/// The state of one interactive session.
pub struct Session {
    /// The tools, the MCP servers and the agent, kept from run to run.
    assembly: Assembly,
    /// The configured models, for `/model`.
    models: Vec<ModelConfig>,
    env: Vec<(String, String)>,
    cwd: PathBuf,
    store: ThreadStore,
    outputs: PathBuf,
    provider: Arc<dyn Provider>,
    thread: Option<OpenThread>,
    updates: UnboundedSender<Update>,
    /// The questions of `ask_clarification` waiting for the front-end's answer.
    clarifications: Clarifications,
}

impl Session {
    /// Opens the store, resolves the model, starts the MCP servers and opens the thread to
    /// continue, if any.
    pub async fn start(
        setup: Setup,
        env: EnvLookup<'_>,
        cwd: &Path,
        options: SessionOptions,
        updates: UnboundedSender<Update>,
    ) -> Result<Self, SessionError> {
        let models = setup.app.value.models.clone();
        let provider = provider_for(&models, options.model.as_deref(), env)?;
        let db = default_path(env)?;
        let store = ThreadStore::open(&db)?;
        let outputs = prepare_outputs(&db).map_err(SessionError::Outputs)?;
        let (clarifications, mut questions) = Clarifications::new();
        // Ends with the session (when its broker is dropped).
        let forward = updates.clone();
        tokio::spawn(async move {
            while let Some(question) = questions.recv().await {
                let _ = forward.send(Update::Clarify(question));
            }
        });
        let spec = AssemblySpec {
            provider: provider.clone(),
            model: options.model,
            max_turns: options.max_turns,
            clarifications: Some(clarifications.clone()),
        };
        let assembly = Assembly::new(setup, cwd, spec, env).await?;
        let mut session = Self {
            assembly,
            models,
            env: MODEL_ENV
                .iter()
                .filter_map(|name| env(name).map(|value| (name.to_string(), value)))
                .collect(),
            cwd: cwd.to_path_buf(),
            store,
            outputs,
            provider,
            thread: None,
            updates,
            clarifications,
        };
        let id = if options.continue_latest {
            session.store.latest_in(cwd)?.map(|meta| meta.id)
        } else {
            options.resume
        };
        if let Some(id) = id {
            session.open(&id)?;
        }
        Ok(session)
    }

    /// The status line's facts now.
    pub async fn info(&self, running: bool) -> SessionInfo {
        let statuses = self.assembly.mcp().await.statuses().await;
        let up = statuses
            .iter()
            .filter(|s| s.status == ServerState::Connected)
            .count();
        SessionInfo {
            model: self.provider.model().to_string(),
            models: self.models.iter().map(|m| m.name.clone()).collect(),
            thread_id: self
                .thread
                .as_ref()
                .map(|t| t.thread.id.clone())
                .unwrap_or_default(),
            thread_title: self
                .thread
                .as_ref()
                .map(|t| t.title.clone())
                .unwrap_or_default(),
            usage: self
                .thread
                .as_ref()
                .map(|t| t.thread.usage)
                .unwrap_or_default(),
            promoted: self
                .thread
                .as_ref()
                .map_or(0, |t| t.thread.state.promoted.names.len()),
            mcp_up: up,
            mcp_down: statuses.len() - up,
            running,
        }
    }

    /// Serves commands until `Quit` or until the front-end goes away.
    pub async fn serve(mut self, mut commands: UnboundedReceiver<Command>) {
        let info = self.info(false).await;
        self.send(Update::Info(info));
        if let Some(open) = &self.thread {
            self.send(Update::History(open.thread.messages.clone()));
        }
        let mut queued: VecDeque<Command> = VecDeque::new();
        loop {
            let command = match queued.pop_front() {
                Some(command) => command,
                None => match commands.recv().await {
                    Some(command) => command,
                    None => break,
                },
            };
            match command {
                Command::Quit => break,
                Command::Submit(text) => {
                    if self.submit(text, &mut commands, &mut queued).await {
                        break;
                    }
                }
                other => self.handle(other).await,
            }
        }
        let mcp = self.assembly.mcp().await;
        mcp.shutdown(std::time::Duration::from_secs(1)).await;
    }

    fn send(&self, update: Update) {
        // A front-end that went away stops the session at its next command.
        let _ = self.updates.send(update);
    }

    fn error(&self, message: impl Into<String>) {
        self.send(Update::Error(message.into()));
    }

    /// Everything but `Submit` and `Quit`.
    async fn handle(&mut self, command: Command) {
        match command {
            Command::Cancel | Command::Submit(_) | Command::Quit => {}
            Command::Answer { call_id, answer } => {
                self.clarifications.answer(&call_id, answer);
            }
            Command::NewThread => {
                self.thread = None;
                self.send(Update::History(Vec::new()));
                let info = self.info(false).await;
                self.send(Update::Info(info));
            }
            Command::Resume(id) => match self.open(&id) {
                Ok(()) => {
                    if let Some(open) = &self.thread {
                        self.send(Update::History(open.thread.messages.clone()));
                    }
                    let info = self.info(false).await;
                    self.send(Update::Info(info));
                }
                Err(err) => self.error(err.to_string()),
            },
            Command::ListThreads => match self.store.list(Some(100)) {
                Ok(threads) => self.send(Update::Threads(threads)),
                Err(err) => self.error(err.to_string()),
            },
            Command::SwitchModel(name) => self.switch_model(&name).await,
            Command::ShowTools => match self.tools_view().await {
                Ok(view) => self.send(Update::Tools(view)),
                Err(err) => self.error(err.to_string()),
            },
            Command::ShowMcp => {
                let statuses = self.assembly.mcp().await.statuses().await;
                self.send(Update::Mcp(statuses));
            }
            Command::ReconnectMcp(name) => {
                let mcp = self.assembly.mcp().await;
                // All at once: the slowest server, not the sum, bounds the wait.
                let chosen = mcp
                    .servers()
                    .iter()
                    .filter(|s| name.as_deref().is_none_or(|n| n == s.config().name));
                futures::future::join_all(chosen.map(|s| s.reconnect())).await;
                let statuses = mcp.statuses().await;
                self.send(Update::Mcp(statuses));
                let info = self.info(false).await;
                self.send(Update::Info(info));
            }
        }
    }

    /// Opens a stored thread by id or prefix.
    fn open(&mut self, id: &str) -> Result<(), StoreError> {
        let stored = self.store.load(id)?;
        self.thread = Some(OpenThread {
            created_at: stored.meta.created_at,
            title: stored.meta.title.clone(),
            thread: Thread {
                id: stored.meta.id,
                messages: stored.messages,
                state: stored.state,
                usage: stored.meta.usage,
                resumed: true,
            },
        });
        Ok(())
    }

    async fn switch_model(&mut self, name: &str) {
        if !self.models.iter().any(|m| m.name == name) {
            self.error(format!("no model named `{name}` in config.yaml"));
            return;
        }
        let env = |name: &str| {
            self.env
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let provider = match provider_for(&self.models, Some(name), &env) {
            Ok(provider) => provider,
            Err(err) => return self.error(err.to_string()),
        };
        match self
            .assembly
            .set_model(provider.clone(), Some(name.to_string()))
            .await
        {
            Ok(()) => {
                self.provider = provider;
                let info = self.info(false).await;
                self.send(Update::Info(info));
            }
            Err(err) => self.error(err.to_string()),
        }
    }

    async fn tools_view(&self) -> Result<ToolsView, SetupError> {
        let deferred = self.assembly.deferred().await?;
        let state = self.thread.as_ref().map(|t| &t.thread.state);
        let hash = deferred.catalog.as_ref().map(|c| c.hash().to_string());
        let promoted = match (state, &hash) {
            (Some(state), Some(hash)) => state
                .promoted
                .names
                .iter()
                .filter(|n| state.is_promoted(hash, n))
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        Ok(ToolsView {
            bound: deferred
                .bound
                .iter()
                .map(|t| t.info().name.clone())
                .collect(),
            promoted,
            deferred: deferred
                .catalog
                .as_ref()
                .map(|c| c.infos().iter().map(|i| i.name.clone()).collect())
                .unwrap_or_default(),
            catalog_hash: hash
                .filter(|_| deferred.bound.iter().any(|t| t.info().name == TOOL_SEARCH)),
        })
    }

    /// The thread to run on: the open one, or a new one titled by `text`.
    fn thread_for(&mut self, text: &str) -> Result<&mut OpenThread, StoreError> {
        if self.thread.is_none() {
            let meta = self.store.create(&self.cwd, self.provider.model())?;
            let title = title_from(text);
            self.store.set_title(&meta.id, &title)?;
            self.thread = Some(OpenThread {
                thread: Thread {
                    id: meta.id,
                    ..Thread::default()
                },
                created_at: meta.created_at,
                title,
            });
        }
        match self.thread.as_mut() {
            Some(open) => Ok(open),
            None => Err(StoreError::NotFound(String::from("new thread"))),
        }
    }

    /// Runs `text` to completion. Commands arriving meanwhile: `Cancel` cancels, `Quit`
    /// cancels and ends the session (returns true), `ShowMcp` is answered, the rest wait.
    async fn submit(
        &mut self,
        text: String,
        commands: &mut UnboundedReceiver<Command>,
        queued: &mut VecDeque<Command>,
    ) -> bool {
        if let Err(err) = self.thread_for(&text) {
            self.error(err.to_string());
            return false;
        }
        let info = self.info(true).await;
        self.send(Update::Info(info));
        let Some(open) = self.thread.as_mut() else {
            return false;
        };
        let updates = self.updates.clone();
        let place = ThreadPlace {
            date: crate::clock::utc_date(open.created_at),
            outputs: self.outputs.join(&open.thread.id),
        };
        self.assembly.set_thread(place).await;
        let agent = match self.assembly.prepare().await {
            Ok(agent) => agent,
            Err(err) => {
                self.error(err.to_string());
                let info = self.info(false).await;
                self.send(Update::Info(info));
                return false;
            }
        };
        let Some(open) = self.thread.as_mut() else {
            return false;
        };
        let cancel = CancellationToken::new();
        let emit = |event: Event| {
            let _ = updates.send(Update::Event(event));
        };
        let sink = StoreSink::new(&self.store);
        let mcp = self.assembly.mcp().await;
        let mut quit = false;
        let failed;
        {
            let run = run_live(
                &self.assembly,
                agent,
                &mut open.thread,
                text,
                &sink,
                &emit,
                &cancel,
            );
            tokio::pin!(run);
            loop {
                tokio::select! {
                    result = &mut run => {
                        failed = result.status == RunStatus::Failed;
                        break;
                    }
                    command = commands.recv(), if !quit => match command {
                        Some(Command::Cancel) => cancel.cancel(),
                        Some(Command::Quit) | None => {
                            cancel.cancel();
                            quit = true;
                        }
                        Some(Command::Answer { call_id, answer }) => {
                            self.clarifications.answer(&call_id, answer);
                        }
                        Some(Command::ShowMcp) => {
                            // Not awaited here: a server restarting inside the run holds
                            // its lock until the run is polled again.
                            let (mcp, updates) = (mcp.clone(), updates.clone());
                            tokio::spawn(async move {
                                let _ = updates.send(Update::Mcp(mcp.statuses().await));
                            });
                        }
                        Some(other) => queued.push_back(other),
                    },
                }
            }
        }
        if failed {
            // A failed run may have failed to store something: go on from what is stored.
            let id = open.thread.id.clone();
            if let Err(err) = self.open(&id) {
                self.error(format!(
                    "cannot reload the thread after the failed run: {err}"
                ));
            }
        }
        let info = self.info(false).await;
        self.send(Update::Info(info));
        quit
    }
}

/// The provider for `model`: the OpenAI-compatible endpoint it resolves to.
fn provider_for(
    models: &[ModelConfig],
    model: Option<&str>,
    env: EnvLookup<'_>,
) -> Result<Arc<dyn Provider>, SessionError> {
    let provider = openai_provider(models, model, env)?;
    Ok(Arc::new(provider))
}

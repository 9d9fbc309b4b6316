//! The session handle: one thread at a time, run message by message over the session's
//! [`Assembly`]. `antler -p` runs one message on it; the chat's controller turns commands
//! into calls on it. Opening, creating, titling and continuing threads happen here only
//! (the start, [`super::start`], opens the thread to start on through [`open_stored`]).

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::assembly::{Assembly, ThreadPlace};
use super::options::SessionError;
use crate::agent::ledger::{first_call, next_call};
use crate::agent::prompt::{PromptParts, system_prompt};
use crate::agent::runner::{Agent, EventSink, Thread, run_live};
use crate::config::{EnvLookup, ModelConfig};
use crate::deferred::TOOL_SEARCH;
use crate::mcp::McpManager;
use crate::mcp::elicitation::Elicitations;
use crate::permissions::Approvals;
use crate::protocol::{
    ContextView, Event, Message, ModelChoice, RunResult, RunStatus, ServerState, SessionInfo,
    ThreadMeta, ToolsView,
};
use crate::provider::Provider;
use crate::provider::resolve::model_provider;
use crate::setup::SetupError;
use crate::store::{StoreError, StoreSink, ThreadStore, title_from};
use crate::tools::builtin::Clarifications;

/// A user's message with the skills it named (`--skill`, `/NAME`) loaded.
struct UserSkills {
    /// The message the run gets.
    text: String,
    /// Their `skill_loaded` events, sent after `run_started`.
    events: Vec<Event>,
    /// The thread-state change of the loads.
    update: crate::tools::StateUpdate,
}

/// The thread in use, with its creation time (the system prompt's date).
pub(super) struct OpenThread {
    pub(super) thread: Thread,
    pub(super) created_at: i64,
    pub(super) title: String,
}

/// One session: its assembly, its threads store and the thread in use.
pub struct Session {
    /// The tools, the MCP servers and the agent, kept from run to run.
    pub(super) assembly: Assembly,
    /// The configured models, for switching.
    pub(super) models: Vec<ModelConfig>,
    pub(super) env: Vec<(String, String)>,
    pub(super) cwd: PathBuf,
    pub(super) store: ThreadStore,
    pub(super) outputs: PathBuf,
    pub(super) provider: Arc<dyn Provider>,
    pub(super) thread: Option<OpenThread>,
    pub(super) clarifications: Option<Clarifications>,
    /// Where the MCP servers' requests for input are answered (with `clarify`).
    pub(super) elicitations: Option<Elicitations>,
    /// Where approval requests are answered (with `clarify`).
    pub(super) approvals: Option<Approvals>,
    /// What the user and the project add to the system prompt.
    pub(super) prompt: PromptParts,
    /// The user's hooks (the session fires `SessionStart` and `SessionEnd`).
    pub(super) hooks: Arc<crate::hooks::Hooks>,
    /// Whether `SessionStart` has fired.
    pub(super) started: bool,
    /// Why the model in use was chosen, said at the first run (the embedded default).
    pub(super) model_notice: Option<String>,
    /// The name of the model in use (`-m`, `/model`; `None`: the first configured).
    pub(super) model_name: Option<String>,
}

impl Session {
    /// The status line's facts now.
    pub async fn info(&self, running: bool) -> SessionInfo {
        let statuses = self.assembly.mcp().await.statuses().await;
        // An idle server is usable: it starts on its first call.
        let up = statuses
            .iter()
            .filter(|s| matches!(s.status, ServerState::Connected | ServerState::Idle))
            .count();
        SessionInfo {
            mcp_up: up,
            mcp_down: statuses.len() - up,
            ..thread_info(
                self.provider.as_ref(),
                &model_choices(&self.models, self.model_name.as_deref(), &lookup(&self.env)),
                self.thread.as_ref(),
                running,
            )
        }
    }

    /// The messages of the thread in use, if one is open.
    pub fn history(&self) -> Option<&[Message]> {
        self.thread.as_ref().map(|t| t.thread.messages.as_slice())
    }

    /// The next message starts a new thread.
    pub fn new_thread(&mut self) {
        self.thread = None;
    }

    /// Opens a stored thread by id or prefix.
    pub fn resume(&mut self, id: &str) -> Result<(), StoreError> {
        self.thread = Some(open_stored(&self.store, id)?);
        Ok(())
    }

    /// The newest stored threads.
    pub fn threads(&self) -> Result<Vec<ThreadMeta>, StoreError> {
        self.store.list(Some(100))
    }

    /// The MCP servers in use now.
    pub async fn mcp(&self) -> Arc<McpManager> {
        self.assembly.mcp().await
    }

    /// `text` with every secret value replaced: what an MCP server sent that becomes a
    /// user turn (a prompt, an attachment) is redacted as tool results are.
    pub async fn redact(&self, text: &str) -> String {
        self.assembly.redact(text).await
    }

    /// Where OAuth tokens are kept.
    pub async fn tokens(&self) -> Option<crate::mcp::oauth::TokenStore> {
        self.assembly.tokens().await
    }

    /// The workspace the file tools work in (for attachments).
    pub async fn workspace(&self) -> Result<crate::tools::sandbox::Workspace, SetupError> {
        self.assembly.workspace().await
    }

    /// Where `ask_clarification`'s questions are answered (none without `clarify`).
    pub fn clarifications(&self) -> Option<Clarifications> {
        self.clarifications.clone()
    }

    /// Where the MCP servers' requests for input are answered (none without `clarify`:
    /// they are declined).
    pub fn elicitations(&self) -> Option<Elicitations> {
        self.elicitations.clone()
    }

    /// Where approval requests are answered (none without `clarify`: calls that must ask
    /// are refused).
    pub fn approvals(&self) -> Option<Approvals> {
        self.approvals.clone()
    }

    /// Uses the configured model `name` from the next message on.
    pub async fn switch_model(&mut self, name: &str) -> Result<(), String> {
        // A name that is not configured is a model id for the environment's endpoint, as
        // with `-m`; resolving it says what is missing.
        let env = |key: &str| {
            self.env
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        let provider = model_provider(&self.models, Some(name), &env)
            .map_err(|e| e.to_string())?
            .provider;
        self.assembly
            .set_model(provider.clone(), Some(name.to_string()))
            .await
            .map_err(|e| e.to_string())?;
        self.provider = provider;
        self.model_name = Some(name.to_string());
        Ok(())
    }

    /// The tools as the model sees them on the thread in use.
    pub async fn tools_view(&self) -> Result<ToolsView, SetupError> {
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
        let bound = deferred.bound.iter().map(|t| t.info().name.clone());
        Ok(ToolsView {
            bound: bound.collect(),
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

    /// The `/context` view: the thread's ledger so far and what its next model call would
    /// be sent (for a session with no thread yet, the first call of a new one).
    pub async fn context(&self) -> Result<ContextView, SessionError> {
        let Some(open) = &self.thread else {
            let deferred = self.assembly.deferred().await?;
            let date = crate::base::clock::utc_date(crate::base::clock::now_unix());
            let system = system_prompt(&date, &self.cwd, &deferred, &self.prompt);
            return Ok(ContextView {
                thread: Default::default(),
                next: Some(first_call(&system, &deferred)?),
            });
        };
        self.assembly.set_thread(self.place_of(open)).await;
        let agent = self.assembly.prepare().await?;
        Ok(ContextView {
            thread: open.thread.state.ledger.clone(),
            next: Some(next_call(&agent, &open.thread)?),
        })
    }

    /// Makes sure a thread is open for the message `text`: a new one, titled by it, when
    /// none is (so a front-end can show the thread before the run starts).
    pub fn open_for(&mut self, text: &str) -> Result<(), SessionError> {
        self.thread_for(text)?;
        Ok(())
    }

    /// Runs `text` on the thread in use (a new one, titled by `text`, if none is open),
    /// emitting the run's events. `Err`: the run could not start (a new thread is not
    /// kept). A failed run goes on from what is stored.
    pub async fn run(
        &mut self,
        text: String,
        emit: EventSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<RunResult, SessionError> {
        self.run_with_skills(text, &[], emit, cancel).await
    }

    /// [`Session::run`] with the skills the user named (`/NAME`, `--skill`): their text
    /// joins the user's turn, they are active in the run, and `skill_loaded` says so after
    /// `run_started`.
    pub async fn run_with_skills(
        &mut self,
        text: String,
        skills: &[String],
        emit: EventSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<RunResult, SessionError> {
        // A new thread is titled by what the user typed, not by a skill's text.
        let typed = (!skills.is_empty()).then(|| text.clone());
        let loaded = self.with_skills(text, skills).await?;
        let mut text = loaded.text;
        let resumed = self.thread.as_ref().is_some_and(|t| t.thread.resumed);
        let place = self.thread_for(typed.as_deref().unwrap_or(&text))?;
        let mut hook_events = Vec::new();
        if let Some(context) = self.session_start(resumed, &mut hook_events).await {
            text = format!("{context}\n\n{text}");
        }
        let agent = self.agent_for(place).await?;
        let Some(open) = self.thread.as_mut() else {
            return Err(StoreError::NotFound(String::from("the thread in use")).into());
        };
        // As a load by the model: loaded, active, its named MCP tools promoted.
        open.thread.state.apply(Some(&loaded.update));
        let mut loaded = loaded.events;
        loaded.extend(hook_events);
        self.assembly
            .grant_skills(&open.thread.state.loaded_skills)
            .await;
        let announce = std::sync::Mutex::new(Some(loaded));
        let emit_all = |event: Event| {
            let started = matches!(event, Event::RunStarted { .. });
            emit(event);
            if started
                && let Some(loaded) = announce
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
            {
                loaded.into_iter().for_each(emit);
            }
        };
        let sink = StoreSink::new(&self.store);
        let result = run_live(
            &self.assembly,
            agent,
            &mut open.thread,
            text,
            &sink,
            &emit_all,
            cancel,
        )
        .await;
        if result.status == RunStatus::Failed {
            self.reload_thread();
        }
        Ok(result)
    }

    /// The agent for a run in `place`; a thread that fails before its first message is
    /// not kept.
    async fn agent_for(&mut self, place: ThreadPlace) -> Result<Arc<Agent>, SessionError> {
        // The thread's tools read their saved outputs there, and Landlock names it.
        if let Err(err) = crate::base::private_file::create_dir(&place.outputs) {
            self.forget_if_empty();
            return Err(SessionError::Outputs(err));
        }
        self.assembly.set_thread(place).await;
        self.assembly.prepare().await.map_err(|err| {
            self.forget_if_empty();
            err.into()
        })
    }

    /// A failed run may have failed to store something: go on from what is stored.
    fn reload_thread(&mut self) {
        let Some(open) = self.thread.as_ref() else {
            return;
        };
        let (id, resumed) = (open.thread.id.clone(), open.thread.resumed);
        match open_stored(&self.store, &id) {
            Ok(mut reloaded) => {
                // Still new if it was: an empty one is not kept.
                reloaded.thread.resumed = resumed;
                self.thread = Some(reloaded);
            }
            Err(err) => tracing::warn!("cannot reload the thread after the failed run: {err}"),
        }
    }

    /// The skills found at start, for a front-end.
    pub async fn skill_infos(&self) -> Vec<crate::protocol::SkillInfo> {
        let skills = self.assembly.skills().await;
        skills
            .skills
            .iter()
            .map(crate::skills::Skill::info)
            .collect()
    }

    /// `text` with the skills named loaded before it, their `skill_loaded` events and the
    /// thread-state change of the loads.
    async fn with_skills(
        &self,
        text: String,
        names: &[String],
    ) -> Result<UserSkills, SessionError> {
        let mut loaded = UserSkills {
            text,
            events: Vec::new(),
            update: crate::tools::StateUpdate::default(),
        };
        if names.is_empty() {
            return Ok(loaded);
        }
        let skills = self.assembly.skills().await;
        let catalog = self.assembly.deferred().await?.catalog.clone();
        let mut parts = Vec::new();
        for name in names {
            let Some(skill) = skills.get(name) else {
                return Err(SessionError::Skill(crate::skills::load::unknown(
                    &skills, name,
                )));
            };
            let read = crate::skills::load::load(skill).map_err(SessionError::Skill)?;
            parts.push(format!(
                "[The user loaded the skill `{}`.]\n{}",
                skill.name, read.text
            ));
            loaded.events.push(crate::skills::load::loaded_event(
                0,
                skill,
                read.tokens,
                crate::protocol::SkillLoadedBy::User,
            ));
            let update = crate::skills::load::state_update(skill, catalog.as_deref());
            loaded.update.skills_loaded.extend(update.skills_loaded);
            if let Some(promoted) = update.promoted {
                match &mut loaded.update.promoted {
                    Some(have) => have.names.extend(promoted.names),
                    None => loaded.update.promoted = Some(promoted),
                }
            }
        }
        if !loaded.text.trim().is_empty() {
            parts.push(std::mem::take(&mut loaded.text));
        }
        loaded.text = parts.join("\n\n");
        Ok(loaded)
    }

    /// `SessionStart`, once, before the session's first run: the context its hooks print
    /// goes before the first message. Its events are kept for after `run_started`.
    async fn session_start(&mut self, resumed: bool, events: &mut Vec<Event>) -> Option<String> {
        use crate::hooks::{HookEvent, Target, Verdict};
        if let Some(message) = self.model_notice.take() {
            events.push(Event::Notice { turn: 0, message });
        }
        if std::mem::replace(&mut self.started, true) || !self.hooks.has(HookEvent::SessionStart) {
            return None;
        }
        let source = if resumed { "resume" } else { "startup" };
        let mut fields = serde_json::Map::new();
        fields.insert("source".into(), serde_json::Value::String(source.into()));
        let id = self
            .thread
            .as_ref()
            .map(|t| t.thread.id.clone())
            .unwrap_or_default();
        let seen = std::sync::Mutex::new(Vec::new());
        let keep = |event: Event| {
            seen.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(event);
        };
        let ran = self
            .hooks
            .run(
                HookEvent::SessionStart,
                Target::Word(source),
                &id,
                fields,
                &keep,
            )
            .await;
        events.extend(
            seen.into_inner()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let verdict = Verdict::of(HookEvent::SessionStart, ran);
        for notice in &verdict.notices {
            tracing::warn!("{notice}");
            events.push(Event::Notice {
                turn: 0,
                message: notice.clone(),
            });
        }
        verdict.context_block(HookEvent::SessionStart)
    }

    /// Ends the session: its `SessionEnd` hooks run, its MCP servers are stopped, and a new
    /// thread that got no message is not kept.
    pub async fn close(mut self) {
        use crate::hooks::{HookEvent, Target};
        if self.hooks.has(HookEvent::SessionEnd) {
            let mut fields = serde_json::Map::new();
            fields.insert("reason".into(), serde_json::Value::String("other".into()));
            let id = self
                .thread
                .as_ref()
                .map(|t| t.thread.id.clone())
                .unwrap_or_default();
            let log = |event: Event| tracing::info!(?event, "SessionEnd hook");
            self.hooks
                .run(HookEvent::SessionEnd, Target::Any, &id, fields, &log)
                .await;
        }
        self.forget_if_empty();
        self.assembly
            .mcp()
            .await
            .shutdown(crate::mcp::McpManager::EXIT_GRACE)
            .await;
    }

    /// Where the thread to run on is (the open one, or a new one titled by `text`).
    fn thread_for(&mut self, text: &str) -> Result<ThreadPlace, StoreError> {
        if self.thread.is_none() {
            let meta = self.store.create(&self.cwd, self.provider.model())?;
            let title = title_from(text);
            self.thread = Some(OpenThread {
                thread: Thread {
                    id: meta.id.clone(),
                    ..Thread::default()
                },
                created_at: meta.created_at,
                title: title.clone(),
            });
            if let Err(err) = self.store.set_title(&meta.id, &title) {
                self.forget_if_empty();
                return Err(err);
            }
        }
        let open = self
            .thread
            .as_ref()
            .ok_or_else(|| StoreError::NotFound(String::from("new thread")))?;
        Ok(self.place_of(open))
    }

    /// Where the thread `open` works: its date and outputs folder.
    fn place_of(&self, open: &OpenThread) -> ThreadPlace {
        ThreadPlace {
            date: crate::base::clock::utc_date(open.created_at),
            outputs: self.outputs.join(&open.thread.id),
        }
    }

    /// Drops the thread in use if it is new and has no message (its run never started).
    fn forget_if_empty(&mut self) {
        let Some(open) = &self.thread else {
            return;
        };
        if open.thread.resumed || !open.thread.messages.is_empty() {
            return;
        }
        if let Err(err) = self.store.forget_empty(&open.thread.id) {
            tracing::warn!("cannot remove the empty thread {}: {err}", open.thread.id);
        }
        self.thread = None;
    }
}

/// The status line's facts of the model and the thread, without the MCP counts.
pub(super) fn thread_info(
    provider: &dyn Provider,
    models: &[ModelChoice],
    open: Option<&OpenThread>,
    running: bool,
) -> SessionInfo {
    SessionInfo {
        model: provider.model().to_string(),
        models: models.to_vec(),
        thread_id: open.map(|t| t.thread.id.clone()).unwrap_or_default(),
        thread_title: open.map(|t| t.title.clone()).unwrap_or_default(),
        usage: open.map(|t| t.thread.usage).unwrap_or_default(),
        promoted: open.map_or(0, |t| t.thread.state.promoted.names.len()),
        mcp_up: 0,
        mcp_down: 0,
        running,
    }
}

/// An environment lookup over a copy of the variables.
pub(super) fn lookup(vars: &[(String, String)]) -> impl Fn(&str) -> Option<String> + Sync + '_ {
    move |key: &str| vars.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
}

/// What `/model` offers: each configured model (its id and endpoint), and the embedded
/// model when it is installed; `current` names the one in use (`None`: the first
/// configured).
pub(super) fn model_choices(
    models: &[ModelConfig],
    current: Option<&str>,
    env: EnvLookup<'_>,
) -> Vec<ModelChoice> {
    use crate::provider::embedded::{EMBEDDED, catalog};
    let current = current.or(models.first().map(|m| m.name.as_str()));
    let mut choices: Vec<ModelChoice> = models
        .iter()
        .map(|m| ModelChoice {
            name: m.name.clone(),
            detail: format!(
                "{} · {}",
                m.model,
                crate::provider::openai::display_endpoint(
                    &m.base_url
                        .clone()
                        .or_else(|| env("OPENAI_BASE_URL"))
                        .unwrap_or_else(|| crate::provider::resolve::DEFAULT_BASE_URL.into())
                )
            ),
            current: Some(m.name.as_str()) == current,
        })
        .collect();
    let installed = crate::config::dirs::models_dir(env).and_then(|dir| catalog::installed(&dir));
    if let Some((model, _)) = installed
        && !models.iter().any(|m| m.name == EMBEDDED)
    {
        choices.push(ModelChoice {
            name: EMBEDDED.to_string(),
            detail: format!("{} · on this machine", model.title),
            current: current == Some(EMBEDDED),
        });
    }
    choices
}

pub(super) fn open_stored(store: &ThreadStore, id: &str) -> Result<OpenThread, StoreError> {
    let stored = store.load(id)?;
    Ok(OpenThread {
        created_at: stored.meta.created_at,
        title: stored.meta.title.clone(),
        thread: Thread {
            id: stored.meta.id,
            messages: stored.messages,
            state: stored.state,
            usage: stored.meta.usage,
            resumed: true,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(name: &str, model: &str, base_url: Option<&str>) -> ModelConfig {
        let mut value = serde_json::json!({"name": name, "model": model});
        if let Some(url) = base_url {
            value["base_url"] = url.into();
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn model_choices_mark_the_one_in_use_and_offer_the_installed_embedded_model() {
        let models = [
            config("default", "gpt-4o-mini", None),
            config("local", "qwen3:8b", Some("http://localhost:11434/v1")),
        ];
        let none = |_: &str| None;
        let choices = model_choices(&models, None, &none);
        let shown: Vec<(&str, &str, bool)> = choices
            .iter()
            .map(|c| (c.name.as_str(), c.detail.as_str(), c.current))
            .collect();
        assert_eq!(
            shown,
            [
                ("default", "gpt-4o-mini · https://api.openai.com/v1", true),
                ("local", "qwen3:8b · http://localhost:11434/v1", false),
            ]
        );
        let dir = tempfile::tempdir().unwrap();
        let file = crate::provider::embedded::catalog::CHAT.path(dir.path());
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, b"x").unwrap();
        let folder = dir.path().display().to_string();
        let env = move |key: &str| (key == "ANTLER_MODELS_DIR").then(|| folder.clone());
        let choices = model_choices(&models, Some("embedded"), &env);
        assert_eq!(choices.len(), 3);
        assert!(!choices[0].current && !choices[1].current);
        assert_eq!(choices[2].name, "embedded");
        assert!(choices[2].current && choices[2].detail.ends_with("on this machine"));
    }
}

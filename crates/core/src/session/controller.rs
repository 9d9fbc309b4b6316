//! The chat's controller: turns a front-end's [`Command`]s into calls on the [`Session`]
//! and sends back [`Update`]s. One run at a time; while it runs, `Cancel`, `Quit`,
//! `Answer` and `ShowMcp` act at once and other commands wait for the run to end.
//! [`start_and_serve`] does the same from the start of the session, while the front-end
//! is already up: it reports each MCP server as it is ready, and commands wait for the
//! session.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::handle::Session;
use super::options::SessionError;
use super::start::Starting;
use crate::config::EnvLookup;
use crate::mcp::McpManager;
use crate::protocol::{ClarificationRequest, Command, Event, ServerStatus, Update};

/// Serves `commands` on `session` until `Quit` or until the front-end goes away, then
/// closes the session. `questions` are `ask_clarification`'s, passed on as updates.
pub async fn serve(
    session: Session,
    commands: UnboundedReceiver<Command>,
    questions: Option<UnboundedReceiver<ClarificationRequest>>,
    updates: UnboundedSender<Update>,
) {
    forward_questions(questions, &updates);
    let mut controller = Controller::new(session, commands, updates);
    controller.greet().await;
    controller.send_prompts().await;
    controller.send_skills().await;
    controller.run().await;
    controller.close().await;
}

/// How [`start_and_serve`] ended.
#[derive(Debug)]
pub enum Served {
    /// The session started, was served until `Quit` and closed.
    Closed,
    /// The front-end quit (or went away) before the session was ready: the servers that
    /// were starting were stopped.
    QuitWhileStarting,
    /// The session could not start.
    Failed(SessionError),
}

/// Starts the session of `starting` and serves it, for a front-end that is already up.
/// A stored thread's history is sent at once; each MCP server's status from `progress`
/// as [`Update::ServerReady`] when it is ready (those of invalid entries when all are);
/// then [`Update::Ready`]. Commands that arrive meanwhile wait for the session, except
/// `Quit`, which ends the start. Once ready, idle servers on a manifest that is too old
/// are listed again in the background; a failure is an [`Update::Notice`].
pub async fn start_and_serve(
    starting: Starting,
    env: EnvLookup<'_>,
    progress: UnboundedReceiver<ServerStatus>,
    mut commands: UnboundedReceiver<Command>,
    updates: UnboundedSender<Update>,
) -> Served {
    if let Some(history) = starting.history() {
        let _ = updates.send(Update::History(history.to_vec()));
    }
    let mut reports = StartReports {
        statuses: progress,
        updates: updates.clone(),
        reported: Vec::new(),
    };
    let mut waiting = VecDeque::new();
    let start = starting.finish(env);
    tokio::pin!(start);
    let started = loop {
        tokio::select! {
            // Statuses first, so that every one sent before the end arrives before Ready.
            biased;
            Some(status) = reports.statuses.recv() => reports.report(status),
            started = &mut start => break started,
            command = commands.recv() => match command {
                Some(Command::Quit) | None => return Served::QuitWhileStarting,
                Some(command) => waiting.push_back(command),
            },
        }
    };
    let (session, questions) = match started {
        Ok(started) => started,
        Err(err) => return Served::Failed(err),
    };
    let mcp = session.mcp().await;
    reports.report_rest(&mcp).await;
    let _ = updates.send(Update::Ready(session.info(false).await));
    forward_questions(questions, &updates);
    let mut controller = Controller::new(session, commands, updates.clone());
    controller.send_prompts().await;
    controller.send_skills().await;
    controller.queued = waiting;
    // A server restarted later (an edited extensions file) is reported the same way.
    controller.background.push(tokio::spawn(reports.forward()));
    controller
        .background
        .push(tokio::spawn(refresh_stale(mcp, updates)));
    controller.run().await;
    controller.close().await;
    Served::Closed
}

/// Passes `ask_clarification`'s questions on as updates; ends with the session (when its
/// broker is dropped).
fn forward_questions(
    questions: Option<UnboundedReceiver<ClarificationRequest>>,
    updates: &UnboundedSender<Update>,
) {
    if let Some(mut questions) = questions {
        let forward = updates.clone();
        tokio::spawn(async move {
            while let Some(question) = questions.recv().await {
                let _ = forward.send(Update::Clarify(question));
            }
        });
    }
}

/// The MCP servers' start-up statuses on their way to the front-end.
struct StartReports {
    statuses: UnboundedReceiver<ServerStatus>,
    updates: UnboundedSender<Update>,
    /// The servers reported so far.
    reported: Vec<String>,
}

impl StartReports {
    fn report(&mut self, status: ServerStatus) {
        self.reported.push(status.name.clone());
        let _ = self.updates.send(Update::ServerReady(status));
    }

    /// Once the start is done: the statuses still on their way, then every server not
    /// reported yet (invalid entries are never started, so they send none).
    async fn report_rest(&mut self, mcp: &McpManager) {
        while let Ok(status) = self.statuses.try_recv() {
            self.report(status);
        }
        for status in mcp.statuses().await {
            if !self.reported.contains(&status.name) {
                self.report(status);
            }
        }
    }

    /// Reports what comes later, until the session (holding the sender) ends.
    async fn forward(mut self) {
        while let Some(status) = self.statuses.recv().await {
            self.report(status);
        }
    }
}

/// Lists the idle servers whose manifest is too old again; those that cannot be started
/// to do so are a notice (a success needs no word: the tools are the same or better).
async fn refresh_stale(mcp: Arc<McpManager>, updates: UnboundedSender<Update>) {
    for (name, error) in mcp.refresh_stale().await {
        if let Some(error) = error {
            let _ = updates.send(Update::Notice(format!(
                "MCP server `{name}` could not be started to refresh its cached tool list: {error}"
            )));
        }
    }
}

struct Controller {
    session: Session,
    updates: UnboundedSender<Update>,
    commands: UnboundedReceiver<Command>,
    /// Commands that arrived during a run (or the start), to handle after it.
    queued: VecDeque<Command>,
    /// Work for the session in the background, stopped when it closes.
    background: Vec<JoinHandle<()>>,
    /// The prompts last sent (a front-end starts with none), so that only a change is
    /// sent.
    prompts: Vec<crate::protocol::PromptInfo>,
}

impl Controller {
    fn new(
        session: Session,
        commands: UnboundedReceiver<Command>,
        updates: UnboundedSender<Update>,
    ) -> Self {
        Self {
            session,
            updates,
            commands,
            queued: VecDeque::new(),
            background: Vec::new(),
            prompts: Vec::new(),
        }
    }

    /// Signs in to a server in the background (the user may take minutes in the
    /// browser), then restarts it and reports the servers.
    async fn login(&mut self, name: String) {
        let mcp = self.session.mcp().await;
        let Some(server) = mcp
            .servers()
            .iter()
            .find(|s| s.config().name == name)
            .cloned()
        else {
            return self.error(format!("no MCP server `{name}`"));
        };
        let Some(tokens) = self.session.tokens().await else {
            return self.error(crate::mcp::oauth::OAuthError::NoDataFolder.to_string());
        };
        let updates = self.updates.clone();
        self.background.retain(|task| !task.is_finished());
        self.background.push(tokio::spawn(async move {
            let show = |url: &str| {
                let _ = updates.send(Update::Notice(format!(
                    "To sign in to MCP server `{name}`, open {} (antler tried to open it)",
                    crate::base::text::printable(url)
                )));
            };
            match crate::mcp::oauth::login(server.config(), &tokens, &show, true).await {
                Ok(()) => {
                    server.reconnect().await;
                    let _ =
                        updates.send(Update::Notice(format!("Signed in to MCP server `{name}`.")));
                }
                Err(err) => {
                    let _ = updates.send(Update::Error(format!("login to `{name}` failed: {err}")));
                }
            }
            let _ = updates.send(Update::Mcp(mcp.statuses().await));
        }));
    }

    /// Sends what can be attached, from the background (listing may start servers), so
    /// that commands are not held up.
    async fn list_attachments(&mut self) {
        match self.session.workspace().await {
            Ok(workspace) => {
                let mcp = self.session.mcp().await;
                let updates = self.updates.clone();
                self.background.retain(|task| !task.is_finished());
                self.background.push(tokio::spawn(async move {
                    let all = super::attach::attachable(&mcp, workspace).await;
                    let _ = updates.send(Update::Attachments(all));
                }));
            }
            Err(err) => self.error(err.to_string()),
        }
    }

    /// Sends the skills found at start.
    async fn send_skills(&self) {
        let skills = self.session.skill_infos().await;
        // A front-end starts with none.
        if !skills.is_empty() {
            self.send(Update::Skills(skills));
        }
    }

    /// Sends the servers' prompts if they changed since they were last sent.
    async fn send_prompts(&mut self) {
        let prompts = self.session.mcp().await.prompts().await;
        if self.prompts != prompts {
            self.send(Update::Prompts(prompts.clone()));
            self.prompts = prompts;
        }
    }

    /// Tells a front-end that did not see the start what the session is.
    async fn greet(&self) {
        self.info(false).await;
        if let Some(history) = self.session.history() {
            self.send(Update::History(history.to_vec()));
        }
    }

    /// Stops the background work, then the session.
    async fn close(self) {
        for task in &self.background {
            task.abort();
        }
        self.session.close().await;
    }

    async fn run(&mut self) {
        loop {
            let command = match self.queued.pop_front() {
                Some(command) => command,
                None => match self.commands.recv().await {
                    Some(command) => command,
                    None => return,
                },
            };
            match command {
                Command::Quit => return,
                Command::Submit(text) => {
                    if self.submit(text, &[]).await {
                        return;
                    }
                    self.send_prompts().await;
                }
                Command::RunSkill { name, text } => {
                    self.send(Update::UserTurn(
                        format!("/{name} {text}").trim_end().to_string(),
                    ));
                    if self.submit(text, &[name]).await {
                        return;
                    }
                }
                Command::SubmitWith { text, attachments } => {
                    let mcp = self.session.mcp().await;
                    let read = match self.session.workspace().await {
                        Ok(workspace) => {
                            let cancel = CancellationToken::new();
                            super::attach::attach(&text, &attachments, &mcp, &workspace, &cancel)
                                .await
                        }
                        Err(err) => Err(err.to_string()),
                    };
                    match read {
                        Ok(message) => {
                            let message = self.session.redact(&message).await;
                            self.send(Update::UserTurn(text));
                            if self.submit(message, &[]).await {
                                return;
                            }
                        }
                        Err(err) => self.error(format!("Not sent: cannot attach: {err}")),
                    }
                }
                Command::RunPrompt {
                    server,
                    name,
                    arguments,
                } => {
                    let mcp = self.session.mcp().await;
                    let cancel = CancellationToken::new();
                    match mcp
                        .prompt_message(&server, &name, &arguments, &cancel)
                        .await
                    {
                        Ok(text) => {
                            let text = self.session.redact(&text).await;
                            self.send(Update::UserTurn(text.clone()));
                            if self.submit(text, &[]).await {
                                return;
                            }
                        }
                        Err(err) => self.error(format!("/{server}:{name}: {err}")),
                    }
                    self.send_prompts().await;
                }
                other => self.handle(other).await,
            }
        }
    }

    fn send(&self, update: Update) {
        // A front-end that went away stops the session at its next command.
        let _ = self.updates.send(update);
    }

    fn error(&self, message: impl Into<String>) {
        self.send(Update::Error(message.into()));
    }

    async fn info(&self, running: bool) {
        let info = self.session.info(running).await;
        self.send(Update::Info(info));
    }

    /// Everything but `Submit` and `Quit`.
    async fn handle(&mut self, command: Command) {
        match command {
            Command::Cancel
            | Command::Submit(_)
            | Command::SubmitWith { .. }
            | Command::RunPrompt { .. }
            | Command::RunSkill { .. }
            | Command::Quit => {}
            Command::ListAttachments => self.list_attachments().await,
            Command::LoginMcp(name) => self.login(name).await,
            Command::Answer { call_id, answer } => {
                if let Some(clarifications) = self.session.clarifications() {
                    clarifications.answer(&call_id, answer);
                }
            }
            Command::Elicit { id, answer } => {
                if let Some(elicitations) = self.session.elicitations() {
                    elicitations.answer(id, answer);
                }
            }
            Command::Approve { id, answer } => {
                if let Some(approvals) = self.session.approvals() {
                    approvals.answer(id, answer);
                }
            }
            Command::NewThread => {
                self.session.new_thread();
                self.send(Update::History(Vec::new()));
                self.info(false).await;
            }
            Command::Resume(id) => match self.session.resume(&id) {
                Ok(()) => {
                    let history = self.session.history().unwrap_or_default().to_vec();
                    self.send(Update::History(history));
                    self.info(false).await;
                }
                Err(err) => self.error(err.to_string()),
            },
            Command::ListThreads => match self.session.threads() {
                Ok(threads) => self.send(Update::Threads(threads)),
                Err(err) => self.error(err.to_string()),
            },
            Command::SwitchModel(name) => match self.session.switch_model(&name).await {
                Ok(()) => self.info(false).await,
                Err(err) => self.error(err),
            },
            Command::ShowTools => match self.session.tools_view().await {
                Ok(view) => self.send(Update::Tools(view)),
                Err(err) => self.error(err.to_string()),
            },
            Command::ShowMcp => {
                let statuses = self.session.mcp().await.statuses().await;
                self.send(Update::Mcp(statuses));
            }
            Command::ShowContext => match self.session.context().await {
                Ok(view) => self.send(Update::Context(view)),
                Err(err) => self.error(err.to_string()),
            },
            Command::ReconnectMcp(name) => {
                let mcp = self.session.mcp().await;
                // All at once: the slowest server, not the sum, bounds the wait.
                let chosen = mcp
                    .servers()
                    .iter()
                    .filter(|s| name.as_deref().is_none_or(|n| n == s.config().name));
                futures::future::join_all(chosen.map(|s| s.reconnect())).await;
                self.send(Update::Mcp(mcp.statuses().await));
                self.info(false).await;
                self.send_prompts().await;
            }
        }
    }

    /// Runs `text` to completion. Commands arriving meanwhile: `Cancel` cancels, `Quit`
    /// cancels and ends the session (returns true), `Answer`, `Elicit`, `Approve` and
    /// `ShowMcp` are answered,
    /// the rest wait.
    async fn submit(&mut self, text: String, skills: &[String]) -> bool {
        if let Err(err) = self.session.open_for(&text) {
            self.error(err.to_string());
            return false;
        }
        self.info(true).await;
        let updates = self.updates.clone();
        let emit = |event: Event| {
            let _ = updates.send(Update::Event(event));
        };
        let cancel = CancellationToken::new();
        let clarifications = self.session.clarifications();
        let elicitations = self.session.elicitations();
        let approvals = self.session.approvals();
        let mcp = self.session.mcp().await;
        let workspace = self.session.workspace().await.ok();
        let mut quit = false;
        let started = {
            let run = self.session.run_with_skills(text, skills, &emit, &cancel);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    result = &mut run => break result,
                    command = self.commands.recv(), if !quit => match command {
                        Some(Command::Cancel) => cancel.cancel(),
                        Some(Command::Quit) | None => {
                            cancel.cancel();
                            quit = true;
                        }
                        Some(Command::Answer { call_id, answer }) => {
                            if let Some(clarifications) = &clarifications {
                                clarifications.answer(&call_id, answer);
                            }
                        }
                        Some(Command::Elicit { id, answer }) => {
                            if let Some(elicitations) = &elicitations {
                                elicitations.answer(id, answer);
                            }
                        }
                        Some(Command::Approve { id, answer }) => {
                            if let Some(approvals) = &approvals {
                                approvals.answer(id, answer);
                            }
                        }
                        Some(Command::ListAttachments) => {
                            // Not awaited here, as `ShowMcp`: listing may start servers.
                            if let Some(workspace) = workspace.clone() {
                                let (mcp, updates) = (mcp.clone(), updates.clone());
                                tokio::spawn(async move {
                                    let all = super::attach::attachable(&mcp, workspace).await;
                                    let _ = updates.send(Update::Attachments(all));
                                });
                            }
                        }
                        Some(Command::ShowMcp) => {
                            // Not awaited here: a server restarting inside the run holds
                            // its lock until the run is polled again.
                            let (mcp, updates) = (mcp.clone(), updates.clone());
                            tokio::spawn(async move {
                                let _ = updates.send(Update::Mcp(mcp.statuses().await));
                            });
                        }
                        Some(other) => self.queued.push_back(other),
                    },
                }
            }
        };
        if let Err(err) = started {
            self.error(err.to_string());
        }
        self.info(false).await;
        quit
    }
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;

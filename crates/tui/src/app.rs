//! The chat's whole state, pure: [`App::update`] takes the core's updates, `App::key`,
//! `App::paste` and `App::mouse` (in `keys`) take the user's input and return the
//! [`Command`]s to send, [`App::tick`] drives spinners, and `App::render` (in `view`)
//! draws it. No clock, no I/O: the terminal loop feeds it and tests script it.

use std::collections::VecDeque;

use ratatui::layout::Rect;

use super::approval::ApprovalDialog;
use super::dialogs::{ClarifyDialog, Dialog, PickItem};
use super::form::{FormDialog, Purpose};
use super::input::{History, Input};
use super::theme::Theme;
use super::transcript::{Entry, Transcript};
use antler_base::clock::utc_datetime;
use antler_protocol::{Attachment, ClarificationRequest};
use antler_protocol::{Command, ContextView, SessionInfo, ToolsView, Update};
use antler_protocol::{Event, RunStatus};
use antler_protocol::{ServerState, ServerStatus};

/// Ticks (of ~100 ms) a second Ctrl-C has to come within to quit.
pub(super) const CTRL_C_WINDOW: u64 = 20;

/// Ticks a flash message stays.
const FLASH_TICKS: u64 = 30;

/// The interactive chat's state.
pub(crate) struct App {
    /// The styles everything is drawn with.
    pub(super) theme: Theme,
    /// The status line's facts (the core's, kept current by events).
    pub(super) info: SessionInfo,
    /// What the screen shows of the conversation.
    pub(super) transcript: Transcript,
    /// The message being typed.
    pub(super) input: Input,
    /// Sent messages, for Up and Down.
    pub(super) history: History,
    /// The dialog over the transcript, if one is open.
    pub(super) dialog: Option<Dialog>,
    /// Questions waiting behind the open one.
    pub(super) questions: VecDeque<ClarificationRequest>,
    /// MCP servers' requests for input waiting behind the open dialog.
    pub(super) elicitations: VecDeque<antler_protocol::ElicitationRequest>,
    /// Approval requests waiting behind the open dialog.
    pub(super) approvals: VecDeque<antler_protocol::ApprovalRequest>,
    /// The MCP servers' prompts, offered as slash commands.
    pub(super) prompts: Vec<antler_protocol::PromptInfo>,
    /// The skills, offered as slash commands.
    pub(super) skills: Vec<antler_protocol::SkillInfo>,
    /// The model asked for with `/model`, until the session answers.
    pub(super) switching: Option<String>,
    /// What the `@` picker last offered.
    pub(super) attachable: Vec<Attachment>,
    /// What was chosen for the message being typed (sent if its mention is still there).
    pub(super) attached: Vec<Attachment>,
    /// The last `/tools` answer.
    pub(super) tools: Option<ToolsView>,
    /// The last `/context` answer.
    pub(super) context: Option<ContextView>,
    /// The last MCP statuses.
    pub(super) mcp: Vec<ServerStatus>,
    /// The slash popup's selected row.
    pub(super) popup_selected: usize,
    /// Esc hid the popup until the input changes.
    pub(super) popup_hidden: bool,
    /// The first transcript line shown when the user scrolled up (None follows output).
    pub(super) scroll: Option<usize>,
    /// The last drawn transcript: its area, total height and each entry's first line.
    pub(super) view: ViewState,
    /// Ticks so far: the only time the state knows.
    pub(super) tick: u64,
    /// Where the current run stands.
    pub(super) run: RunState,
    /// The tick of the last Ctrl-C.
    pub(super) ctrl_c: Option<u64>,
    /// A short message for the status line, and the tick it goes away.
    pub(super) flash: Option<(String, u64)>,
    /// Messages typed while a run went on, sent when it ends.
    pub(super) queued: VecDeque<String>,
    /// Ctrl-O: cards and reasoning shown in full.
    pub(super) expanded: bool,
    /// While the session starts: the MCP servers reported ready so far. Messages wait.
    pub(super) starting: Option<Vec<ServerStatus>>,
    /// A Ctrl-C quit before the session was ready.
    pub(super) interrupted: bool,
}

/// Where the current run stands, as far as the screen knows.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct RunState {
    /// Between `run_started` and `run_finished`.
    pub active: bool,
    /// A message was sent and its run has not started yet.
    pub awaiting: bool,
    /// The tick the run started (or was asked for).
    pub started: u64,
    /// The user cancelled it.
    pub cancelled: bool,
}

/// What the last frame drew of the transcript (for scrolling and clicks).
#[derive(Debug, Default, Clone)]
pub(super) struct ViewState {
    /// Where it was drawn.
    pub area: Rect,
    /// Its height in lines.
    pub total: usize,
    /// The first line shown.
    pub top: usize,
    /// Each entry's first line and height.
    pub spans: Vec<(usize, usize)>,
}

impl App {
    /// A chat with nothing in it yet, for the session described by `info`.
    pub(crate) fn new(info: SessionInfo, theme: Theme) -> Self {
        Self {
            theme,
            info,
            transcript: Transcript::default(),
            input: Input::default(),
            history: History::default(),
            dialog: None,
            questions: VecDeque::new(),
            elicitations: VecDeque::new(),
            approvals: VecDeque::new(),
            prompts: Vec::new(),
            skills: Vec::new(),
            attachable: Vec::new(),
            attached: Vec::new(),
            switching: None,
            tools: None,
            context: None,
            mcp: Vec::new(),
            popup_selected: 0,
            popup_hidden: false,
            scroll: None,
            view: ViewState::default(),
            tick: 0,
            run: RunState::default(),
            ctrl_c: None,
            flash: None,
            queued: VecDeque::new(),
            expanded: false,
            starting: None,
            interrupted: false,
        }
    }

    /// A chat drawn before its session is ready: `info` is what is known so far, messages
    /// typed wait for [`Update::Ready`], and the MCP servers' progress shows meanwhile.
    pub(crate) fn starting(info: SessionInfo, theme: Theme) -> Self {
        Self {
            starting: Some(Vec::new()),
            ..Self::new(info, theme)
        }
    }

    /// Whether a run is going on (or about to start).
    pub(crate) fn running(&self) -> bool {
        self.run.active || self.run.awaiting || self.info.running
    }

    /// Takes one update of the core; returns commands to send (a queued message when a
    /// run ends).
    pub(crate) fn update(&mut self, update: Update) -> Vec<Command> {
        match update {
            Update::Event(event) => return self.event(event),
            Update::Info(info) => {
                if let Some(model) = self.switching.take() {
                    self.transcript.push(Entry::Info(format!(
                        "Model: {model} (from the next message on)"
                    )));
                    self.scroll = None;
                }
                self.info = info;
            }
            Update::History(messages) => {
                self.transcript = Transcript::from_messages(&messages);
                self.scroll = None;
                self.expanded = false;
            }
            Update::Threads(threads) => self.threads_listed(&threads),
            Update::Tools(view) => {
                self.tools = Some(view);
                if let Some(Dialog::Tools { loading, .. }) = &mut self.dialog {
                    *loading = false;
                }
            }
            Update::Context(view) => {
                self.context = Some(view);
                if let Some(Dialog::Context { loading, .. }) = &mut self.dialog {
                    *loading = false;
                }
            }
            Update::Mcp(servers) => {
                self.mcp = servers;
                if let Some(Dialog::Mcp { loading, selected }) = &mut self.dialog {
                    *loading = false;
                    *selected = (*selected).min(self.mcp.len().saturating_sub(1));
                }
            }
            Update::Clarify(question) => {
                if self.answering() {
                    self.questions.push_back(question);
                } else {
                    self.dialog = Some(Dialog::Clarify(ClarifyDialog::new(question)));
                }
            }
            Update::Prompts(prompts) => self.prompts = prompts,
            Update::Skills(skills) => self.skills = skills,
            Update::Attachments(all) => self.attachments_listed(all),
            Update::UserTurn(text) => {
                self.transcript.push(Entry::User(text));
                self.scroll = None;
            }
            Update::ServerReady(status) => self.server_ready(status),
            Update::Ready(info) => {
                self.info = info;
                self.starting = None;
                if let Some(next) = self.queued.pop_front() {
                    return self.send(next);
                }
            }
            Update::Notice(message) => self.transcript.push(Entry::Notice(message)),
            Update::Error(message) => self.failed(message),
        }
        Vec::new()
    }

    /// The thread picker's list, once the session sent it.
    fn threads_listed(&mut self, threads: &[antler_protocol::ThreadMeta]) {
        if let Some(Dialog::Threads(picker)) = &mut self.dialog {
            picker.loading = false;
            picker.items = threads
                .iter()
                .map(|t| PickItem {
                    value: t.id.clone(),
                    label: format!(
                        "{}  {}",
                        t.id,
                        if t.title.trim().is_empty() {
                            "(untitled)"
                        } else {
                            t.title.trim()
                        }
                    ),
                    detail: format!(
                        "{} · {} message{}",
                        utc_datetime(t.updated_at),
                        t.message_count,
                        if t.message_count == 1 { "" } else { "s" }
                    ),
                    current: t.id == self.info.thread_id,
                })
                .collect();
            picker.selected = 0;
        }
    }

    /// The `@` picker's list, once the session sent it.
    fn attachments_listed(&mut self, all: Vec<Attachment>) {
        if let Some(Dialog::Attach(picker)) = &mut self.dialog {
            picker.loading = false;
            picker.items = all
                .iter()
                .enumerate()
                .map(|(index, attachment)| PickItem {
                    value: index.to_string(),
                    label: attachment.mention(),
                    detail: match attachment {
                        Attachment::File { .. } => String::from("file"),
                        Attachment::Resource { server, name, .. } => {
                            format!("{name} · MCP server `{server}`")
                        }
                    },
                    current: false,
                })
                .collect();
            picker.selected = 0;
        }
        self.attachable = all;
    }

    /// A command failed: nothing is awaited or loading any more, and the error is shown.
    fn failed(&mut self, message: String) {
        self.run.awaiting = false;
        self.switching = None;
        match &mut self.dialog {
            Some(Dialog::Threads(p)) | Some(Dialog::Models(p)) | Some(Dialog::Attach(p)) => {
                p.loading = false
            }
            Some(Dialog::Tools { loading, .. })
            | Some(Dialog::Mcp { loading, .. })
            | Some(Dialog::Context { loading, .. }) => *loading = false,
            _ => {}
        }
        self.transcript.push(Entry::Error(message));
    }

    fn event(&mut self, event: Event) -> Vec<Command> {
        let mut commands = Vec::new();
        match &event {
            Event::RunStarted {
                thread_id, model, ..
            } => {
                self.run = RunState {
                    active: true,
                    awaiting: false,
                    started: self.tick,
                    cancelled: self.run.cancelled,
                };
                if !model.is_empty() {
                    self.info.model = model.clone();
                }
                self.info.thread_id = thread_id.clone();
            }
            Event::Usage { usage, .. } => self.info.usage.add(usage),
            Event::ElicitationRequested { request, .. } => self.elicit(request.clone()),
            Event::ApprovalRequested { request, .. } => self.ask_approval(request.clone()),
            Event::Subagent { event, .. } => {
                // A subagent's calls ask the same user.
                let mut inner = event.as_ref();
                while let Event::Subagent { event, .. } = inner {
                    inner = event.as_ref();
                }
                match inner {
                    Event::ElicitationRequested { request, .. } => self.elicit(request.clone()),
                    Event::ApprovalRequested { request, .. } => {
                        self.ask_approval(request.clone());
                    }
                    _ => {}
                }
            }
            Event::ToolsPromoted { promoted, .. } => self.info.promoted = promoted.len(),
            Event::RunFinished(result) => {
                self.info.usage = result.thread_usage;
                self.info.promoted = result.promoted_tools.len();
                let cancelled = self.run.cancelled || result.status == RunStatus::Interrupted;
                self.run = RunState::default();
                // The run is over: "Cancelling" no longer says what is happening.
                if self
                    .flash
                    .as_ref()
                    .is_some_and(|(text, _)| text.starts_with("Cancelling"))
                {
                    self.flash = None;
                }
                self.info.running = false;
                self.drop_questions();
                self.drop_elicitations();
                self.drop_approvals();
                if cancelled {
                    self.unqueue();
                } else if let Some(next) = self.queued.pop_front() {
                    commands = self.send(next);
                }
            }
            _ => {}
        }
        self.transcript.apply(event);
        commands
    }

    /// What was queued goes back into the box, unsent, before what is being typed.
    pub(super) fn unqueue(&mut self) {
        let mut text: Vec<String> = self.queued.drain(..).collect();
        if !text.is_empty() {
            if !self.input.is_empty() {
                text.push(self.input.take());
            }
            self.input.set(text.join("\n\n"));
        }
    }

    /// An MCP server is ready (at start-up, or restarted with an edited extensions file):
    /// kept for `/mcp` and the progress, and a failure is said in the transcript, since
    /// the server's tools are missing.
    fn server_ready(&mut self, status: ServerStatus) {
        if status.status == ServerState::Failed {
            let error = status.error.as_deref().unwrap_or("no reason given");
            let next = if status.needs_login {
                "/mcp, then l, to sign in here"
            } else {
                "/mcp to reconnect"
            };
            self.transcript.push(Entry::Notice(format!(
                "MCP server `{}` failed to start: {error} · {next}",
                status.name
            )));
            self.scroll = None;
        }
        if let Some(servers) = &mut self.starting {
            upsert(servers, status.clone());
        }
        upsert(&mut self.mcp, status);
    }

    /// Sends a message: shown at once, the run indicator on until its run ends.
    pub(super) fn send(&mut self, text: String) -> Vec<Command> {
        self.transcript.push(Entry::User(text.clone()));
        self.scroll = None;
        self.run.awaiting = true;
        self.run.cancelled = false;
        self.run.started = self.tick;
        vec![Command::Submit(text)]
    }

    /// Answers the open question (or declines it: `None`), then opens the next waiting
    /// one.
    pub(super) fn answer(&mut self, answer: Option<String>) -> Vec<Command> {
        let mut commands = Vec::new();
        if let Some(Dialog::Clarify(d)) = self.dialog.take() {
            let question = d.request.question.clone();
            commands.push(Command::Answer {
                call_id: d.request.call_id,
                answer: answer.clone(),
            });
            self.transcript.push(Entry::Asked { question, answer });
            self.scroll = None;
        }
        self.dialog = None;
        self.next_request();
        commands
    }

    /// Whether the open dialog waits for an answer someone else waits for (a question, a
    /// form): another request then waits behind it.
    fn answering(&self) -> bool {
        matches!(
            &self.dialog,
            Some(Dialog::Clarify(_)) | Some(Dialog::Form(_)) | Some(Dialog::Approval(_))
        )
    }

    /// Opens `request` as an approval dialog, or queues it behind another request.
    fn ask_approval(&mut self, request: antler_protocol::ApprovalRequest) {
        if self.answering() {
            self.approvals.push_back(request);
        } else {
            self.dialog = Some(Dialog::Approval(ApprovalDialog::opening(request)));
        }
    }

    /// Closes the approval requests of a run that ended: their calls are over.
    fn drop_approvals(&mut self) {
        self.approvals.clear();
        if matches!(self.dialog, Some(Dialog::Approval(_))) {
            self.dialog = None;
        }
    }

    /// Opens `request` as a form, or queues it behind another request for an answer.
    fn elicit(&mut self, request: antler_protocol::ElicitationRequest) {
        if self.answering() {
            self.elicitations.push_back(request);
        } else {
            self.dialog = Some(Dialog::Form(FormDialog::elicitation(request)));
        }
    }

    /// After a dialog closed: the next waiting question or form, if any.
    pub(super) fn next_request(&mut self) {
        if self.dialog.is_some() {
            return;
        }
        if let Some(next) = self.questions.pop_front() {
            self.dialog = Some(Dialog::Clarify(ClarifyDialog::new(next)));
        } else if let Some(next) = self.approvals.pop_front() {
            self.dialog = Some(Dialog::Approval(ApprovalDialog::opening(next)));
        } else if let Some(next) = self.elicitations.pop_front() {
            self.dialog = Some(Dialog::Form(FormDialog::elicitation(next)));
        }
    }

    /// Closes the requests of a run that ended: the calls that asked are over.
    fn drop_elicitations(&mut self) {
        self.elicitations.clear();
        if matches!(
            &self.dialog,
            Some(Dialog::Form(FormDialog {
                purpose: Purpose::Elicitation(_),
                ..
            }))
        ) {
            self.dialog = None;
        }
    }

    /// Closes the questions of a run that ended: nobody waits for their answers.
    fn drop_questions(&mut self) {
        self.questions.clear();
        if matches!(self.dialog, Some(Dialog::Clarify(_))) {
            self.dialog = None;
        }
    }

    /// Shows `message` in the status line for a few seconds.
    pub(super) fn flash(&mut self, message: &str) {
        self.flash = Some((message.to_string(), self.tick + FLASH_TICKS));
    }

    /// Advances spinners and timers (call every ~100 ms); true when the screen changed.
    pub(crate) fn tick(&mut self) -> bool {
        self.tick += 1;
        let mut changed = self.running() || self.starting.is_some();
        match &mut self.dialog {
            Some(Dialog::Approval(approval)) => changed |= approval.arming.tick(),
            Some(Dialog::Form(form)) => changed |= form.arming.tick(),
            _ => {}
        }
        if self
            .flash
            .as_ref()
            .is_some_and(|(_, until)| self.tick >= *until)
        {
            self.flash = None;
            changed = true;
        }
        changed
    }
}

/// Replaces the status of the server of the same name, or adds it.
fn upsert(servers: &mut Vec<ServerStatus>, status: ServerStatus) {
    match servers.iter_mut().find(|s| s.name == status.name) {
        Some(known) => *known = status,
        None => servers.push(status),
    }
}

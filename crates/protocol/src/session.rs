//! What an interactive front-end and the session say to each other: the front-end sends
//! [`Command`]s and renders [`Update`]s, all plain data.

use serde::Serialize;

use std::collections::BTreeMap;

use super::{
    ApprovalAnswer, ElicitationAnswer, Event, Ledger, Message, PromptInfo, ServerStatus,
    ThreadMeta, Usage,
};

/// What the front-end asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Run this user message on the current thread (queued while a run is going on).
    Submit(String),
    /// Run this user message with these attachments, read now (the chat's `@`); what the
    /// user sees of it comes back as [`Update::UserTurn`] before the run.
    SubmitWith {
        /// What the user typed.
        text: String,
        /// Read and appended to `text` before the run; if one cannot be read, nothing is sent.
        attachments: Vec<Attachment>,
    },
    /// Ask for what can be attached (answered with [`Update::Attachments`]).
    ListAttachments,
    /// Cancel the running turn; the thread is saved.
    Cancel,
    /// Start a new, empty thread.
    NewThread,
    /// Switch to the stored thread with this id (or unique prefix).
    Resume(String),
    /// Ask for the stored threads (answered with [`Update::Threads`]).
    ListThreads,
    /// Use the configured model with this name from the next run on.
    SwitchModel(String),
    /// Ask for the tool view (answered with [`Update::Tools`]).
    ShowTools,
    /// Ask for the MCP servers' status (answered with [`Update::Mcp`]).
    ShowMcp,
    /// Ask for the context ledger (answered with [`Update::Context`]).
    ShowContext,
    /// Restart one MCP server (or all with `None`), then report [`Update::Mcp`].
    ReconnectMcp(Option<String>),
    /// Sign in to the OAuth server of this MCP server (the browser is opened, the address
    /// is also sent as a notice), then restart it and report [`Update::Mcp`].
    LoginMcp(String),
    /// The user's answer to the question of the `ask_clarification` call `call_id`
    /// (`None`: the user declined to answer).
    Answer {
        /// The call that asked.
        call_id: String,
        /// What the user typed or chose.
        answer: Option<String>,
    },
    /// The user's answer to the MCP server's elicitation `id` (from
    /// [`Event::ElicitationRequested`]).
    Elicit {
        /// The [`ElicitationRequest::id`](crate::ElicitationRequest::id) it answers.
        id: u64,
        /// Accept with the form's values, decline or cancel.
        answer: ElicitationAnswer,
    },
    /// The user's answer to the approval request `id` (from
    /// [`Event::ApprovalRequested`]).
    Approve {
        /// The [`ApprovalRequest::id`](crate::ApprovalRequest::id) it answers.
        id: u64,
        /// Once, always (for the project) or refused.
        answer: ApprovalAnswer,
    },
    /// Run an MCP server's prompt as the next user message (the chat's
    /// `/<server>:<name>`); its text comes back as [`Update::UserTurn`] before the run.
    RunPrompt {
        /// As configured (the `/server:` of the command).
        server: String,
        /// Its name as the server lists it.
        name: String,
        /// Its arguments by name.
        arguments: BTreeMap<String, String>,
    },
    /// Run the user's message with this skill loaded into it (the chat's `/NAME rest`);
    /// what the user sees of it comes back as [`Update::UserTurn`] before the run.
    RunSkill {
        /// What `/NAME` calls it by.
        name: String,
        /// The rest of the line.
        text: String,
    },
    /// End the session.
    Quit,
}

/// A skill as a front-end offers it (`/NAME`, `/skills`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillInfo {
    /// What `/NAME` and `load_skill` call it by.
    pub name: String,
    /// Its description (one clean line).
    pub description: String,
    /// `project`, `user` or `path`.
    pub source: String,
    /// Whether it can be used (listed, loadable).
    pub usable: bool,
    /// Why not, when it cannot.
    pub reason: String,
}

/// What the front-end is told: plain data.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// An event of the running turn, as the core emitted it.
    Event(Event),
    /// The status line's facts changed.
    Info(SessionInfo),
    /// The current thread's history, after a resume or a new thread (empty).
    History(Vec<Message>),
    /// The stored threads, newest first.
    Threads(Vec<ThreadMeta>),
    /// What the model can call.
    Tools(ToolsView),
    /// Every server's status, in config order, invalid entries last.
    Mcp(Vec<ServerStatus>),
    /// Where the thread's tokens went, and what the next call would send.
    Context(ContextView),
    /// The model asks the user (`ask_clarification`); answer with [`Command::Answer`].
    Clarify(ClarificationRequest),
    /// Something the user should see that is not part of a run (a bad command, ...).
    Error(String),
    /// Something the user should know that went wrong in the background (a cached tool
    /// list that could not be refreshed): shown, with no effect on what waits for an answer.
    Notice(String),
    /// An MCP server finished starting (idle, connected or failed), sent as each one does
    /// while the session starts, so the front-end can show progress before
    /// [`Update::Ready`].
    ServerReady(ServerStatus),
    /// What can be attached: workspace files and MCP resources.
    Attachments(Vec<Attachment>),
    /// The MCP servers' prompts, for slash commands: sent once the session is ready and
    /// again when they change.
    Prompts(Vec<PromptInfo>),
    /// The skills found at start, for `/NAME` and `/skills`: sent once the session is
    /// ready.
    Skills(Vec<SkillInfo>),
    /// The text of a user turn the front-end did not type (a server prompt), sent just
    /// before its run starts.
    UserTurn(String),
    /// The session has started (its MCP servers are up): its facts. The front-end sends
    /// what it held back until now, such as messages typed during start-up.
    Ready(SessionInfo),
}

/// Something a person attaches to a message (the chat's `@`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Attachment {
    /// A workspace file, by its path relative to the workspace.
    File {
        /// Relative to the workspace, as the `@` mention shows it.
        path: String,
    },
    /// An MCP server's resource.
    Resource {
        /// The server's key in `mcpServers`.
        server: String,
        /// As the server lists it; attaching asks the server to read it.
        uri: String,
        /// Its name (escaped, one line).
        name: String,
    },
}

impl Attachment {
    /// How it is written in a message: `@path`, `@server:uri`.
    pub fn mention(&self) -> String {
        match self {
            Self::File { path } => format!("@{path}"),
            Self::Resource { server, uri, .. } => format!("@{server}:{uri}"),
        }
    }
}

/// The `/context` view.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ContextView {
    /// The thread's ledger so far.
    pub thread: Ledger,
    /// The next model call's ledger (one call, with the listing), when there is an agent
    /// to ask.
    pub next: Option<Ledger>,
}

/// A question the model asks the user, waiting for [`Command::Answer`] with its call id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClarificationRequest {
    /// The `ask_clarification` call that waits for the answer.
    pub call_id: String,
    /// What the model asks.
    pub question: String,
    /// Choices the model offers (the user may still answer freely).
    pub options: Vec<String>,
}

/// A model `/model` can switch to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ModelChoice {
    /// The name `/model` takes (a config.yaml name, or `embedded`).
    pub name: String,
    /// What it is and where its calls go (`gpt-4o-mini · https://api.openai.com/v1`).
    pub detail: String,
    /// It is the model in use.
    pub current: bool,
}

/// The facts of the status line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    /// The provider's id for it (for an endpoint, the `model` sent), not the config's `name`.
    pub model: String,
    /// The models `/model` offers: the configured ones, and the embedded one when it is
    /// installed.
    pub models: Vec<ModelChoice>,
    /// The current thread's id ("" before the first message of a new thread).
    pub thread_id: String,
    /// The current thread's title.
    pub thread_title: String,
    /// Tokens used by the current thread.
    pub usage: Usage,
    /// How many deferred tools are promoted.
    pub promoted: usize,
    /// MCP servers that can be used: connected, or idle on their cached tool list.
    pub mcp_up: usize,
    /// MCP servers failed or disabled.
    pub mcp_down: usize,
    /// Whether a run is going on.
    pub running: bool,
}

/// The `/tools` view: exactly what the model can see and call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolsView {
    /// Tools bound on every call (built-in, configured, `tool_search`, non-deferred MCP).
    pub bound: Vec<String>,
    /// The promoted deferred tools, in promotion order.
    pub promoted: Vec<String>,
    /// Every deferred tool's name.
    pub deferred: Vec<String>,
    /// The catalog the promotions belong to.
    pub catalog_hash: Option<String>,
}

/// How the chat's screen ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatEnding {
    /// The user quit, or the session ended.
    Quit,
    /// Ctrl-C before the session was ready: its start was interrupted (exit 130, as a
    /// Ctrl-C before the screen was up).
    Interrupted,
}

//! The core's events: everything a front-end shows comes from these, in this order.
//!
//! A run emits `run_started`, then per model call `turn_started`, any number of
//! `text_delta` / `reasoning_delta` / `retrying`, `usage`, `notice`s, `turn_completed` (or
//! `turn_failed`), then for its tool calls `tool_call_started` (all, in call order) and
//! `tool_call_finished` (in call order) and `tools_promoted` when the working set changed;
//! finally exactly one `run_finished`. Serialised as JSON objects tagged by `type`: this is
//! the documented `stream-json` schema, versioned by [`STREAM_JSON_VERSION`].

use serde::Serialize;
use serde_json::Value;

use super::{
    ApprovalRequest, Denial, ElicitationAction, ElicitationRequest, FinishReason, Ledger, Usage,
};

/// The version of the `stream-json` schema, sent in `run_started`. It changes when an
/// event or field is removed or changes meaning (new events and fields do not change it).
pub const STREAM_JSON_VERSION: u32 = 1;

/// The built-in tool that loads a skill.
pub const LOAD_SKILL_TOOL: &str = "load_skill";

/// What kind of failure ended a turn or a run, for scripts and front-ends that react to it
/// (retry later on a rate limit, fix the key on `auth`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The endpoint kept answering 429.
    RateLimit,
    /// The endpoint refused the key (401, 403).
    Auth,
    /// The prompt is longer than the model's context.
    ContextLength,
    /// Another error status from the endpoint.
    Endpoint,
    /// The endpoint could not be reached, or the connection broke.
    Transport,
    /// The endpoint (or a replay file) sent something that is not a valid reply.
    Protocol,
    /// The thread could not be stored.
    Storage,
    /// `--max-turns` model calls without a final answer.
    TurnLimit,
    /// Loop detection stopped the same call repeated.
    Loop,
    /// The run could not start: a usage or configuration error (exit 2).
    Config,
    /// The run could not start for another reason (exit 1).
    Startup,
    /// A hook ended the run (`continue: false`) or refused the user's prompt.
    Hook,
}

/// The tool search's name: a stored call by it is a search ([`ToolRole::of_stored_call`]).
pub const SEARCH_TOOL: &str = "tool_search";
/// The subagent tool's name: a stored call by it started a subagent.
pub const SUBAGENT_TOOL: &str = "task";

/// What a tool is, for front-ends that show tool calls differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolRole {
    /// `tool_search`.
    Search,
    /// `task`: a subagent.
    Subagent,
    /// A tool of an MCP server.
    Mcp,
    /// A configured tool (`use: antler.sandbox:*`).
    Configured,
    /// Another built-in tool.
    BuiltIn,
    /// A name no tool has, or a stored call whose tool is not known any more.
    Unknown,
}

impl ToolRole {
    /// The role of a stored call, known only by its name: the two reserved names, else
    /// unknown.
    pub fn of_stored_call(name: &str) -> Self {
        match name {
            SEARCH_TOOL => Self::Search,
            SUBAGENT_TOOL => Self::Subagent,
            _ => Self::Unknown,
        }
    }
}

/// One thing that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A run began on a thread.
    RunStarted {
        /// The `stream-json` schema version ([`STREAM_JSON_VERSION`]).
        version: u32,
        /// The thread's id, which `--resume` takes.
        thread_id: String,
        /// The provider's id for it (for an endpoint, the `model` sent), not the config's `name`.
        model: String,
        /// Whether the thread existed before this run.
        resumed: bool,
    },
    /// Older messages were replaced by a summary before a model call.
    Summarized {
        /// The model call it preceded.
        turn: u32,
        /// How many messages the summary replaced.
        replaced_messages: usize,
        /// The estimated history size before, in tokens.
        tokens_before: u64,
    },
    /// A model call began (turns count model calls, from 1).
    TurnStarted {
        /// Its number in the run, from 1; every event of the call carries it.
        turn: u32,
    },
    /// A piece of the answer.
    TextDelta {
        /// The model call it belongs to.
        turn: u32,
        /// New text only: appended to the deltas before it.
        text: String,
    },
    /// A piece of the model's reasoning.
    ReasoningDelta {
        /// The model call it belongs to.
        turn: u32,
        /// New text only: appended to the deltas before it.
        text: String,
    },
    /// The model call failed and is tried again; text streamed so far in this turn is void.
    Retrying {
        /// The model call being retried.
        turn: u32,
        /// The attempt about to start.
        attempt: u32,
        /// The wait before it.
        delay_ms: u64,
        /// Why the previous attempt failed.
        reason: String,
    },
    /// Token usage of one model call, when the server reported it.
    Usage {
        /// The model call it counts.
        turn: u32,
        /// The call's tokens, flattened into the event's own fields.
        #[serde(flatten)]
        usage: Usage,
    },
    /// Something the user should know (not sent to the model).
    Notice {
        /// The model call it came up in (0: before the first).
        turn: u32,
        /// One line for a person, already escaped.
        message: String,
    },
    /// The model call finished.
    TurnCompleted {
        /// The model call that finished.
        turn: u32,
        /// Why the model stopped.
        finish_reason: FinishReason,
    },
    /// The model call failed for good.
    TurnFailed {
        /// The model call that failed.
        turn: u32,
        /// What kind of failure.
        kind: ErrorKind,
        /// In words; `run_finished` repeats it in `errors`.
        error: String,
    },
    /// A tool call is about to run.
    ToolCallStarted {
        /// The turn whose reply asked for it.
        turn: u32,
        /// Its [`ToolCall`](crate::ToolCall)'s id, which the call's later events carry.
        call_id: String,
        /// The name the model called, which may be no tool's (`role` is then `unknown`).
        name: String,
        /// What the tool is.
        role: ToolRole,
        /// The arguments (parsed when they are JSON, else the raw text).
        arguments: Value,
        /// The model wrote the call as text and antler took it as a call
        /// (`tool_call_format`); absent otherwise.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        from_text: bool,
    },
    /// A running tool call reported progress (an MCP server's `notifications/progress`).
    ToolProgress {
        /// The turn whose reply asked for the call.
        turn: u32,
        /// Pairs it with its `tool_call_started`.
        call_id: String,
        /// How far it got.
        progress: f64,
        /// Out of how much, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// What it is doing, when the server says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// An MCP server asks the user for input during a call; a front-end that can answer
    /// shows it and answers with `Command::Elicit`.
    ElicitationRequested {
        /// The turn whose reply asked for the call.
        turn: u32,
        /// The call during which the server asks.
        call_id: String,
        /// What it asks for.
        request: ElicitationRequest,
    },
    /// An elicitation was answered: by the user, or by antler where nobody can answer
    /// (`-p` declines every one).
    ElicitationAnswered {
        /// The turn whose reply asked for the call.
        turn: u32,
        /// The call during which the server asked.
        call_id: String,
        /// The request's id.
        id: u64,
        /// The server that asked.
        server: String,
        /// What it was asked (escaped, bounded).
        message: String,
        /// `accept`, `decline` or `cancel`.
        action: ElicitationAction,
        /// Whether antler answered without asking anyone.
        automatic: bool,
    },
    /// A tool call waits for the user's approval; a front-end that can answer shows it and
    /// answers with `Command::Approve`.
    ApprovalRequested {
        /// The turn whose reply asked for the call.
        turn: u32,
        /// Pairs it with its `tool_call_started`.
        call_id: String,
        /// What is asked.
        request: ApprovalRequest,
    },
    /// A tool call was refused by the permission policy or the user; the model gets a tool
    /// error saying so.
    PermissionDenied {
        /// The turn whose reply asked for the call.
        turn: u32,
        /// Pairs it with its `tool_call_started`.
        call_id: String,
        /// The name the model called it by.
        name: String,
        /// By a rule, for want of someone to ask (`-p`), or by the user.
        cause: Denial,
        /// Why, in words (the rule, or how to allow it).
        reason: String,
    },
    /// A tool call returned.
    ToolCallFinished {
        /// The turn whose reply asked for it.
        turn: u32,
        /// Pairs it with its `tool_call_started`.
        call_id: String,
        /// As in its `tool_call_started`.
        name: String,
        /// What the tool is.
        role: ToolRole,
        /// Whether it failed; the model reads `content` either way.
        is_error: bool,
        /// What the model reads.
        content: String,
        /// How long it ran.
        duration_ms: u64,
    },
    /// The promoted working set changed (tool_search or a routing hint).
    ToolsPromoted {
        /// The model call whose tool results changed it.
        turn: u32,
        /// Names that became callable.
        added: Vec<String>,
        /// Names that lapsed.
        removed: Vec<String>,
        /// The whole working set now.
        promoted: Vec<String>,
        /// The catalog they belong to.
        catalog_hash: Option<String>,
    },
    /// A skill's instructions were loaded into the thread: by the model (`load_skill`,
    /// `tool_search`'s `select:skill:NAME`) or by the user (`/NAME`, `--skill`).
    SkillLoaded {
        /// The turn (0: with the user's message, before the first model call).
        turn: u32,
        /// What `/NAME` and `load_skill` call it by.
        name: String,
        /// Where it was found: `project`, `user` or `path`.
        source: String,
        /// The estimated tokens of what was loaded.
        tokens: usize,
        /// The model (`load_skill`, `select:skill:NAME`) or the user (`/NAME`, `--skill`).
        by: SkillLoadedBy,
    },
    /// A hook began (one of the user's programs, for `event`).
    HookStarted {
        /// The hook event: `PreToolUse`, `Stop`, ...
        event: String,
        /// The matcher that chose it, as written.
        matcher: Option<String>,
        /// As configured, made printable; run by the shell with `-c`.
        command: String,
    },
    /// A hook ended: one for each `hook_started`, whether the command ran or not.
    HookFinished {
        /// As in its `hook_started`.
        event: String,
        /// The matcher that chose it, as written.
        matcher: Option<String>,
        /// As in its `hook_started` (hooks of one event run at the same time).
        command: String,
        /// Its exit status (none: it timed out, was killed or never started).
        exit_code: Option<i32>,
        /// How long it ran.
        duration_ms: u64,
        /// What it decided, if anything.
        decision: Option<HookDecision>,
        /// What went wrong with it (the run goes on).
        error: Option<String>,
    },
    /// Files the model presented as the run's output (`present_files`).
    FilesPresented {
        /// The model call whose tool call presented them.
        turn: u32,
        /// Workspace-relative paths.
        files: Vec<String>,
    },
    /// An event of a subagent started by the `task` tool, wrapped.
    Subagent {
        /// The `task` call that started it.
        parent_call_id: String,
        /// Numbers the subagents of this process, from 1.
        subagent: u64,
        /// The task's short label.
        description: String,
        /// The subagent's own event.
        event: Box<Event>,
    },
    /// The run ended; the last event of every run.
    RunFinished(RunResult),
}

/// What a hook decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    /// Let the call run (counts as the user's approval; never beats a deny rule).
    Allow,
    /// Refuse the call.
    Deny,
    /// Ask the user.
    Ask,
    /// Block: the call, the prompt, or (Stop) the end of the run.
    Block,
}

/// Who loaded a skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillLoadedBy {
    /// With `load_skill`, or `tool_search`'s `select:skill:NAME`.
    Model,
    /// With the chat's `/NAME`, or `--skill`.
    User,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model answered without tool calls.
    Success,
    /// A provider error, the turn limit, a stopped loop or a storage error ended it.
    Failed,
    /// The user cancelled it.
    Interrupted,
}

/// The outcome of a run: the `json` output format prints this object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    /// `failed` also when the run could not start (`error_kind` says why).
    pub status: RunStatus,
    /// Whether it ended otherwise than `success`.
    pub is_error: bool,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
    /// The final answer (the last assistant text, possibly partial when it failed).
    pub result: String,
    /// The thread's id, which `--resume` takes (empty when the run could not start).
    pub thread_id: String,
    /// The provider's id for it, not the config's `name` (empty when the run could not start).
    pub model: String,
    /// Model calls made in this run.
    pub turns: u32,
    /// Tokens used in this run.
    pub usage: Usage,
    /// `usage` by model id.
    pub model_usage: std::collections::BTreeMap<String, Usage>,
    /// Tokens used by the thread so far.
    pub thread_usage: Usage,
    /// The promoted working set at the end.
    pub promoted_tools: Vec<String>,
    /// Files presented as output during this run.
    pub files: Vec<String>,
    /// Notices shown during the run.
    pub notices: Vec<String>,
    /// What went wrong, when it failed.
    pub errors: Vec<String>,
    /// What kind of failure ended it, when it failed.
    pub error_kind: Option<ErrorKind>,
    /// Where its prompt tokens went, when taken (see [`Ledger`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<Box<Ledger>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented `stream-json` schema: every event type and its fields.
    const DOCUMENTED: &[(&str, &[&str])] = &[
        ("run_started", &["version", "thread_id", "model", "resumed"]),
        (
            "summarized",
            &["turn", "replaced_messages", "tokens_before"],
        ),
        ("turn_started", &["turn"]),
        ("text_delta", &["turn", "text"]),
        ("reasoning_delta", &["turn", "text"]),
        ("retrying", &["turn", "attempt", "delay_ms", "reason"]),
        (
            "usage",
            &[
                "turn",
                "input_tokens",
                "cached_input_tokens",
                "output_tokens",
            ],
        ),
        ("notice", &["turn", "message"]),
        ("turn_completed", &["turn", "finish_reason"]),
        ("turn_failed", &["turn", "kind", "error"]),
        (
            "tool_call_started",
            &["turn", "call_id", "name", "role", "arguments", "from_text"],
        ),
        (
            "tool_progress",
            &["turn", "call_id", "progress", "total", "message"],
        ),
        ("elicitation_requested", &["turn", "call_id", "request"]),
        (
            "elicitation_answered",
            &[
                "turn",
                "call_id",
                "id",
                "server",
                "message",
                "action",
                "automatic",
            ],
        ),
        ("approval_requested", &["turn", "call_id", "request"]),
        (
            "permission_denied",
            &["turn", "call_id", "name", "cause", "reason"],
        ),
        (
            "tool_call_finished",
            &[
                "turn",
                "call_id",
                "name",
                "role",
                "is_error",
                "content",
                "duration_ms",
            ],
        ),
        (
            "tools_promoted",
            &["turn", "added", "removed", "promoted", "catalog_hash"],
        ),
        ("files_presented", &["turn", "files"]),
        (
            "subagent",
            &["parent_call_id", "subagent", "description", "event"],
        ),
        (
            "run_finished",
            &[
                "status",
                "is_error",
                "duration_ms",
                "result",
                "thread_id",
                "model",
                "turns",
                "usage",
                "model_usage",
                "thread_usage",
                "promoted_tools",
                "files",
                "notices",
                "errors",
                "error_kind",
            ],
        ),
    ];

    fn one_of_each() -> Vec<Event> {
        let turn = 1;
        let text = String::from("t");
        vec![
            Event::RunStarted {
                version: STREAM_JSON_VERSION,
                thread_id: text.clone(),
                model: text.clone(),
                resumed: false,
            },
            Event::Summarized {
                turn,
                replaced_messages: 2,
                tokens_before: 3,
            },
            Event::TurnStarted { turn },
            Event::TextDelta {
                turn,
                text: text.clone(),
            },
            Event::ReasoningDelta {
                turn,
                text: text.clone(),
            },
            Event::Retrying {
                turn,
                attempt: 2,
                delay_ms: 5,
                reason: text.clone(),
            },
            Event::Usage {
                turn,
                usage: Usage::default(),
            },
            Event::Notice {
                turn,
                message: text.clone(),
            },
            Event::TurnCompleted {
                turn,
                finish_reason: FinishReason::Stop,
            },
            Event::TurnFailed {
                turn,
                kind: ErrorKind::RateLimit,
                error: text.clone(),
            },
            Event::ToolCallStarted {
                turn,
                call_id: text.clone(),
                name: text.clone(),
                role: ToolRole::Mcp,
                arguments: Value::Null,
                from_text: true,
            },
            Event::ToolProgress {
                turn,
                call_id: text.clone(),
                progress: 1.0,
                total: Some(2.0),
                message: Some(text.clone()),
            },
            Event::ElicitationRequested {
                turn,
                call_id: text.clone(),
                request: ElicitationRequest {
                    id: 1,
                    server: text.clone(),
                    message: text.clone(),
                    form: crate::ElicitationForm::Url { url: text.clone() },
                },
            },
            Event::ElicitationAnswered {
                turn,
                call_id: text.clone(),
                id: 1,
                server: text.clone(),
                message: text.clone(),
                action: ElicitationAction::Decline,
                automatic: true,
            },
            Event::ApprovalRequested {
                turn,
                call_id: text.clone(),
                request: crate::ApprovalRequest {
                    id: 1,
                    tool: text.clone(),
                    server: None,
                    reason: text.clone(),
                    preview: crate::Preview::Command {
                        command: text.clone(),
                    },
                    always: None,
                },
            },
            Event::PermissionDenied {
                turn,
                call_id: text.clone(),
                name: text.clone(),
                cause: Denial::NoApprover,
                reason: text.clone(),
            },
            Event::ToolCallFinished {
                turn,
                call_id: text.clone(),
                name: text.clone(),
                role: ToolRole::Search,
                is_error: false,
                content: text.clone(),
                duration_ms: 1,
            },
            Event::ToolsPromoted {
                turn,
                added: Vec::new(),
                removed: Vec::new(),
                promoted: Vec::new(),
                catalog_hash: None,
            },
            Event::FilesPresented {
                turn,
                files: Vec::new(),
            },
            Event::Subagent {
                parent_call_id: text.clone(),
                subagent: 1,
                description: text.clone(),
                event: Box::new(Event::TurnStarted { turn }),
            },
            Event::RunFinished(RunResult {
                status: RunStatus::Failed,
                is_error: true,
                duration_ms: 5,
                model_usage: Default::default(),
                result: text.clone(),
                thread_id: text.clone(),
                model: text,
                turns: 1,
                usage: Usage::default(),
                thread_usage: Usage::default(),
                promoted_tools: Vec::new(),
                files: Vec::new(),
                notices: Vec::new(),
                errors: Vec::new(),
                error_kind: Some(ErrorKind::TurnLimit),
                ledger: None,
            }),
        ]
    }

    #[test]
    fn every_event_serialises_as_documented() {
        let events = one_of_each();
        assert_eq!(events.len(), DOCUMENTED.len());
        for (event, (kind, fields)) in events.iter().zip(DOCUMENTED) {
            let value = serde_json::to_value(event).unwrap();
            let object = value.as_object().unwrap();
            assert_eq!(object["type"], *kind);
            let mut keys: Vec<&str> = object
                .keys()
                .map(String::as_str)
                .filter(|k| *k != "type")
                .collect();
            let mut documented = fields.to_vec();
            keys.sort_unstable();
            documented.sort_unstable();
            assert_eq!(keys, documented, "{kind}");
        }
    }

    #[test]
    fn the_readme_documents_every_event_and_field() {
        let readme = include_str!("../../../README.md");
        for (kind, fields) in DOCUMENTED {
            let row = readme
                .lines()
                .find(|l| {
                    l.starts_with("| `")
                        && l.split('|')
                            .nth(1)
                            .is_some_and(|c| c.contains(&format!("`{kind}`")))
                })
                .unwrap_or_else(|| panic!("no README row for `{kind}`"));
            for field in *fields {
                assert!(
                    row.contains(&format!("`{field}`")),
                    "`{kind}`: `{field}` in {row}"
                );
            }
        }
        assert!(readme.contains(&format!("the schema version, now {STREAM_JSON_VERSION}")));
    }
}

//! The core's events: everything a front-end shows comes from these, in this order.
//!
//! A run emits `run_started`, then per model call `turn_started`, any number of
//! `text_delta` / `reasoning_delta` / `retrying`, `usage`, `notice`s, `turn_completed` (or
//! `turn_failed`), then for its tool calls `tool_call_started` (all, in call order) and
//! `tool_call_finished` (in call order) and `tools_promoted` when the working set changed;
//! finally exactly one `run_finished`. Serialised as JSON objects tagged by `type`.

use serde::Serialize;
use serde_json::Value;

use crate::provider::{FinishReason, Usage};

/// One thing that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A run began on a thread.
    RunStarted {
        /// The thread.
        thread_id: String,
        /// The model's identifier.
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
        /// The turn.
        turn: u32,
    },
    /// A piece of the answer.
    TextDelta {
        /// The turn.
        turn: u32,
        /// The text.
        text: String,
    },
    /// A piece of the model's reasoning.
    ReasoningDelta {
        /// The turn.
        turn: u32,
        /// The text.
        text: String,
    },
    /// The model call failed and is tried again; text streamed so far in this turn is void.
    Retrying {
        /// The turn.
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
        /// The turn.
        turn: u32,
        /// The counts.
        #[serde(flatten)]
        usage: Usage,
    },
    /// Something the user should know (not sent to the model).
    Notice {
        /// The turn.
        turn: u32,
        /// The message.
        message: String,
    },
    /// The model call finished.
    TurnCompleted {
        /// The turn.
        turn: u32,
        /// Why the model stopped.
        finish_reason: FinishReason,
    },
    /// The model call failed for good.
    TurnFailed {
        /// The turn.
        turn: u32,
        /// Why.
        error: String,
    },
    /// A tool call is about to run.
    ToolCallStarted {
        /// The turn whose reply asked for it.
        turn: u32,
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// The arguments (parsed when they are JSON, else the raw text).
        arguments: Value,
    },
    /// A tool call returned.
    ToolCallFinished {
        /// The turn whose reply asked for it.
        turn: u32,
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// Whether it failed.
        is_error: bool,
        /// What the model reads.
        content: String,
        /// How long it ran.
        duration_ms: u64,
    },
    /// The promoted working set changed (tool_search or a routing hint).
    ToolsPromoted {
        /// The turn.
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
    /// Files the model presented as the run's output (`present_files`).
    FilesPresented {
        /// The turn.
        turn: u32,
        /// Workspace-relative paths.
        files: Vec<String>,
    },
    /// An event of a subagent started by the `task` tool, wrapped.
    Subagent {
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
    /// How it ended.
    pub status: RunStatus,
    /// The final answer (the last assistant text, possibly partial when it failed).
    pub result: String,
    /// The thread.
    pub thread_id: String,
    /// The model's identifier.
    pub model: String,
    /// Model calls made in this run.
    pub turns: u32,
    /// Tokens used in this run.
    pub usage: Usage,
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
}

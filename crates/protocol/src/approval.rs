//! A tool call that waits for the user's approval, and the answer: what the chat's
//! approval dialog shows and sends back.

use serde::Serialize;

/// One call waiting for approval (announced by `approval_requested`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalRequest {
    /// The request's id, unique in the process (model-chosen call ids are not).
    pub id: u64,
    /// The name the model called it by.
    pub tool: String,
    /// The MCP server it belongs to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Why it asks (the rule or default that wants approval).
    pub reason: String,
    /// What the call would do.
    pub preview: Preview,
    /// What "allow always" would allow, in words (`bash` commands starting `git status`);
    /// `None` when it is not offered (a compound shell command, an `ask` rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub always: Option<String>,
}

/// What the user sees of the call. Every text is escaped and bounded by the core.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Preview {
    /// A shell command.
    Command {
        /// What would run, as the model wrote it (it may span lines).
        command: String,
    },
    /// A file change as a unified diff.
    Diff {
        /// The file, relative to the workspace.
        path: String,
        /// The diff (lines starting `+`, `-`, ` ` or `@@`).
        diff: String,
    },
    /// The arguments, as pretty JSON.
    Arguments {
        /// Pretty-printed JSON, for a tool whose arguments say what it does.
        text: String,
    },
}

/// The user's answer to an [`ApprovalRequest`], sent with [`crate::Command::Approve`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum ApprovalAnswer {
    /// Run this call.
    Once,
    /// Run it, and calls like it in this project from now on (while the tool's schema stays
    /// the same).
    Always,
    /// Refuse it; the message, if any, is for the model.
    Deny {
        /// What the model is told besides the refusal.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
}

/// Why a call was refused (`permission_denied`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Denial {
    /// A `deny` rule (config.yaml or `--disallowed-tools`) or `default: deny`.
    Rule,
    /// It needs approval and nobody can give it (`-p`).
    NoApprover,
    /// The user said no.
    User,
    /// A `PreToolUse` hook refused it.
    Hook,
}

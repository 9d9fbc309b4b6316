//! The vocabulary the core and its front-ends share: messages, model usage and finish
//! reasons, the events of a run and its result, MCP server states, stored threads, and the
//! commands and updates of an interactive session; and the context ledger as text
//! (`ledger_text`), which `threads show --ledger` prints and the chat's `/context` shows.
//! It depends on serde and `antler-base` only, so that the provider, the agent, the tools
//! and every front-end can use it without depending on each other.

mod approval;
mod elicitation;
mod event;
mod ledger;
pub mod ledger_text;
mod mcp;
mod message;
mod model;
mod session;
mod thread;

pub use approval::{ApprovalAnswer, ApprovalRequest, Denial, Preview};
pub use elicitation::{
    ElicitationAction, ElicitationAnswer, ElicitationForm, ElicitationRequest, FieldKind,
    FormField, form_values,
};
pub use event::{
    ErrorKind, Event, HookDecision, LOAD_SKILL_TOOL, RunResult, RunStatus, SEARCH_TOOL,
    STREAM_JSON_VERSION, SUBAGENT_TOOL, SkillLoadedBy, ToolRole,
};
pub use ledger::{CallTokens, CallTotals, Counting, Ledger, ServerTokens, ToolTokens};
pub use mcp::{PromptArgumentInfo, PromptInfo, ServerState, ServerStatus};
pub use message::{ImagePart, Message, ToolCall};
pub use model::{FinishReason, Usage};
pub use session::{
    Attachment, ChatEnding, ClarificationRequest, Command, ContextView, ModelChoice, SessionInfo,
    SkillInfo, ToolsView, Update,
};
pub use thread::ThreadMeta;

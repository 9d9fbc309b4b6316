//! What a session is started with, and why it cannot start or run a message.

use std::path::PathBuf;

use crate::config::Rule;
use crate::deferred::TokenizerError;
use crate::provider::ProviderError;
use crate::provider::resolve::ModelSetupError;
use crate::session::instructions::{InstructionsError, PromptOptions};
use crate::setup::SetupError;
use crate::store::StoreError;

/// Why a session cannot start, or a message cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The configuration cannot be used.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The model cannot be resolved or its client built.
    #[error(transparent)]
    Model(#[from] ModelSetupError),
    /// The replay or record file cannot be used.
    #[error(transparent)]
    Replay(ProviderError),
    /// The threads database cannot be used.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The thread asked for cannot be opened.
    #[error(transparent)]
    Resume(StoreError),
    /// `--continue` with no thread in the working directory.
    #[error("no thread to continue in {}; start one without --continue", .0.display())]
    NothingToContinue(PathBuf),
    /// The outputs folder cannot be created.
    #[error("cannot create the outputs folder: {0}")]
    Outputs(std::io::Error),
    /// The context ledger cannot be counted.
    #[error(transparent)]
    Tokens(#[from] TokenizerError),
    /// `--system-prompt-file` cannot be read.
    #[error(transparent)]
    Instructions(#[from] InstructionsError),
    /// A skill the user named cannot be used.
    #[error("{0}")]
    Skill(String),
}

/// Which thread the session starts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StartThread {
    /// A new one, created with the first message.
    #[default]
    New,
    /// A stored one, by id or prefix (`--resume`).
    Resume(String),
    /// The newest of the working directory (`--continue`); there must be one.
    Latest,
}

/// How the session starts.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// The model (`--model`).
    pub model: Option<String>,
    /// The most model calls per run (`--max-turns`).
    pub max_turns: u32,
    /// The thread to start on.
    pub thread: StartThread,
    /// Answer from this recorded file instead of a model (`--replay`).
    pub replay: Option<PathBuf>,
    /// Record the model's replies to this file (`--record`).
    pub record: Option<PathBuf>,
    /// A person can answer `ask_clarification` (the chat): the tool exists only then.
    pub clarify: bool,
    /// Without one, what the MCP servers' requests for input get (`--elicitation`).
    pub elicitation: crate::mcp::elicitation::Unattended,
    /// The command line's permission rules.
    pub permissions: PermissionOptions,
    /// What the command line adds to the system prompt.
    pub prompt: PromptOptions,
}

/// `--allowed-tools`, `--disallowed-tools` and `--permission-mode allow-all`.
#[derive(Debug, Clone, Default)]
pub struct PermissionOptions {
    /// Calls that run without asking.
    pub allowed: Vec<Rule>,
    /// Calls that are refused.
    pub denied: Vec<Rule>,
    /// Every call runs unless a deny rule names it.
    pub allow_all: bool,
}

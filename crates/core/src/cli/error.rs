//! The one error the command line stops with: what to print and the exit status.

use super::Exit;
use crate::protocol::{ErrorKind, Event, RunResult, RunStatus, Usage};
use crate::session::SessionError;
use crate::setup::SetupError;
use crate::store::StoreError;
use crate::ui::run_output::{OutputFormat, json_line};

/// Why a command stopped: a message for stderr and its exit status.
#[derive(Debug)]
pub struct CliError {
    /// What the process ends with once [`CliError::report`] has printed the message.
    pub exit: Exit,
    /// What went wrong, for stderr.
    pub message: String,
}

impl CliError {
    /// A usage or configuration error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            exit: Exit::Config,
            message: message.into(),
        }
    }

    /// Something failed at run time (exit 1).
    pub fn failure(message: impl Into<String>) -> Self {
        Self {
            exit: Exit::Failure,
            message: message.into(),
        }
    }

    /// Prints the error (escaped: it may quote what a server sent) and gives its exit
    /// status.
    pub fn report(self) -> Exit {
        eprintln!(
            "error: {}",
            crate::base::text::printable_lines(&self.message)
        );
        self.exit
    }

    /// [`CliError::report`] for a prompt run printing `format`: a script reading JSON gets
    /// one failed result object (`json`) or `run_finished` line (`stream-json`) on stdout
    /// too, so that it never parses an empty stdout.
    pub fn report_as(self, format: OutputFormat) -> Exit {
        let kind = match self.exit {
            Exit::Config => ErrorKind::Config,
            _ => ErrorKind::Startup,
        };
        let result = RunResult {
            status: RunStatus::Failed,
            is_error: true,
            duration_ms: 0,
            result: String::new(),
            thread_id: String::new(),
            model: String::new(),
            turns: 0,
            usage: Usage::default(),
            model_usage: Default::default(),
            thread_usage: Usage::default(),
            promoted_tools: Vec::new(),
            files: Vec::new(),
            notices: Vec::new(),
            errors: vec![self.message.clone()],
            error_kind: Some(kind),
            ledger: None,
        };
        match format {
            OutputFormat::Text => {}
            OutputFormat::Json => println!("{}", json_line(&result).trim_end()),
            OutputFormat::StreamJson => {
                println!("{}", json_line(&Event::RunFinished(result)).trim_end());
            }
        }
        self.report()
    }
}

impl From<SetupError> for CliError {
    fn from(err: SetupError) -> Self {
        Self::usage(err.to_string())
    }
}

/// What the user can fix (configuration, the model, the thread asked for, the replay file)
/// is a usage error; the rest (the threads database, the disk) a failure.
impl From<SessionError> for CliError {
    fn from(err: SessionError) -> Self {
        match err {
            SessionError::Setup(_)
            | SessionError::Model(_)
            | SessionError::Replay(_)
            | SessionError::Resume(_)
            | SessionError::NothingToContinue(_)
            | SessionError::Instructions(_)
            | SessionError::Skill(_) => Self::usage(err.to_string()),
            SessionError::Store(_) | SessionError::Outputs(_) | SessionError::Tokens(_) => {
                Self::failure(err.to_string())
            }
        }
    }
}

/// A thread id that names no thread (or several) is the user's to fix; the rest is the
/// database's failure.
impl From<StoreError> for CliError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound(_)
            | StoreError::PrefixTooShort(_)
            | StoreError::Ambiguous { .. } => Self::usage(err.to_string()),
            _ => Self::failure(err.to_string()),
        }
    }
}

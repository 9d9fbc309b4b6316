//! The one error the command line stops with: what to print and the exit status.

use super::Exit;
use crate::session::SessionError;
use crate::setup::SetupError;
use crate::store::StoreError;

/// Why a command stopped: a message for stderr and its exit status.
#[derive(Debug)]
pub struct CliError {
    pub exit: Exit,
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
        eprintln!("error: {}", crate::text::printable_lines(&self.message));
        self.exit
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
            | SessionError::NothingToContinue(_) => Self::usage(err.to_string()),
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

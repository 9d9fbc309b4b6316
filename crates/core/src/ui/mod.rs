//! Output for people and scripts. The core never prints; front-ends do, here.

use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) mod doctor;
pub(crate) mod listing;
pub(crate) mod run_output;
pub(crate) mod search;
pub(crate) mod skills;
pub(crate) mod threads;

/// Whether log lines must stay off stderr (a full-screen front-end owns the terminal).
static STDERR_QUIET: AtomicBool = AtomicBool::new(false);

/// Keeps log lines off stderr while `quiet` (they still go to the log file).
pub fn set_stderr_quiet(quiet: bool) {
    STDERR_QUIET.store(quiet, Ordering::SeqCst);
}

/// Whether log lines must stay off stderr now.
pub fn stderr_quiet() -> bool {
    STDERR_QUIET.load(Ordering::SeqCst)
}

//! Stdio servers run in their own process group, so that wrappers such as `npx`, `uvx` or
//! `sh -c` cannot leave a grandchild running after antler stops the server.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Kills a server's whole process group when dropped, unless disarmed after a clean
/// shutdown. rmcp's own shutdown signals the group too, but only while a runtime is left
/// to run it; this guard works in any `Drop`, even at process exit.
#[derive(Debug)]
pub struct ProcessGroupGuard {
    pgid: Option<i32>,
}

impl ProcessGroupGuard {
    /// Guards the group led by `pid` (the server process, spawned as group leader).
    pub fn new(pid: Option<u32>) -> Self {
        Self {
            pgid: pid.and_then(|p| i32::try_from(p).ok()),
        }
    }

    /// The group has been shut down; nothing to kill any more.
    pub fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for ProcessGroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // ESRCH (the group is already gone) is the normal case after a clean exit.
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

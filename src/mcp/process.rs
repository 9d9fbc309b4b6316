//! Stdio servers run in their own process group, so that wrappers such as `npx`, `uvx` or
//! `sh -c` cannot leave a grandchild running after antler stops the server.

use std::sync::Mutex;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The process groups guarded right now, for [`kill_all_groups`].
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn groups() -> std::sync::MutexGuard<'static, Vec<i32>> {
    GROUPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kills every guarded process group now: for an exit that runs no destructors (a second
/// Ctrl-C), so that no MCP server or shell command outlives antler.
pub fn kill_all_groups() {
    kill(&mut groups());
}

fn kill(pgids: &mut Vec<i32>) {
    for pgid in pgids.drain(..) {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

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
        let pgid = pid.and_then(|p| i32::try_from(p).ok());
        if let Some(pgid) = pgid {
            groups().push(pgid);
        }
        Self { pgid }
    }

    /// The group has been shut down; nothing to kill any more.
    pub fn disarm(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            groups().retain(|g| *g != pgid);
        }
    }
}

impl Drop for ProcessGroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            groups().retain(|g| *g != pgid);
            // ESRCH (the group is already gone) is the normal case after a clean exit.
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::{CommandExt, ExitStatusExt};

    use super::*;

    #[test]
    fn kill_all_groups_kills_every_guarded_group_once() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let mut guard = ProcessGroupGuard::new(Some(child.id()));
        kill_all_groups();
        assert_eq!(child.wait().unwrap().signal(), Some(9), "killed by SIGKILL");
        assert!(
            !groups().contains(&(child.id() as i32)),
            "forgotten once killed"
        );
        guard.disarm();
    }
}

//! Child processes in their own process group (MCP stdio servers, `bash` commands), so that
//! wrappers such as `npx`, `uvx` or `sh -c` cannot leave a grandchild running after antler
//! is done with them.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// What every program antler starts may inherit of its environment (besides `LC_*`): what
/// it needs to run, never API keys or anything else antler was started with.
pub(crate) const BASE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ",
];

/// The proxy settings, in both spellings programs read.
pub(crate) const PROXY_ENV: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
];

/// `bash` from `PATH` (or `/bin/bash`), else `sh`.
pub(crate) fn find_shell(env: &[(OsString, OsString)]) -> PathBuf {
    let path = env
        .iter()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| value.clone())
        .unwrap_or_default();
    for name in ["bash", "sh"] {
        // A relative entry would find a `bash` the workspace planted.
        let found = std::env::split_paths(&path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join(name))
            .chain([Path::new("/bin").join(name)])
            .find(|candidate| candidate.is_file());
        if let Some(shell) = found {
            return shell;
        }
    }
    PathBuf::from("/bin/sh")
}

/// The process groups guarded right now, for [`kill_all_groups`].
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn groups() -> std::sync::MutexGuard<'static, Vec<i32>> {
    GROUPS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kills every guarded process group now: for an exit that runs no destructors (a second
/// Ctrl-C), so that no MCP server or shell command outlives antler.
pub(crate) fn kill_all_groups() {
    kill(&mut groups());
}

fn kill(pgids: &mut Vec<i32>) {
    for pgid in pgids.drain(..) {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// Ends a server's whole process group: [`ProcessGroupGuard::end`] when antler is done with
/// the server, and `Drop` (SIGKILL) in any other case, even at process exit. The group is
/// ended always, also after the server exited cleanly or by itself: a wrapper such as
/// `sh -c "helper & exec server"` leaves the helper in the group.
#[derive(Debug)]
pub(crate) struct ProcessGroupGuard {
    pgid: Option<i32>,
}

impl ProcessGroupGuard {
    /// Guards the group led by `pid` (the server process, spawned as group leader).
    pub(crate) fn new(pid: Option<u32>) -> Self {
        let pgid = pid.and_then(|p| i32::try_from(p).ok());
        if let Some(pgid) = pgid {
            groups().push(pgid);
        }
        Self { pgid }
    }

    /// Lets the group live on (a shell command's deliberate background jobs).
    pub(crate) fn disarm(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            groups().retain(|g| *g != pgid);
        }
    }

    /// Ends the group: SIGTERM to every member, a short wait for them to go, then SIGKILL
    /// to whatever is left (when the guard drops).
    pub(crate) async fn end(self) {
        let Some(pgid) = self.pgid else {
            return;
        };
        let group = Pid::from_raw(pgid);
        // ESRCH: every member is gone already.
        if killpg(group, Signal::SIGTERM).is_ok() {
            for _ in 0..END_POLLS {
                if killpg(group, None).is_err() {
                    break;
                }
                tokio::time::sleep(END_POLL_INTERVAL).await;
            }
        }
    }
}

/// How often, and how long apart, [`ProcessGroupGuard::end`] looks whether the group is
/// gone before it kills what is left.
const END_POLLS: usize = 10;
const END_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_millis(30);

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
pub(crate) mod tests {
    use std::os::unix::process::{CommandExt, ExitStatusExt};

    use super::*;

    #[test]
    fn a_guarded_group_is_registered_and_killed_once() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let guard = ProcessGroupGuard::new(Some(child.id()));
        let pgid = child.id() as i32;
        // `kill_all_groups` is `kill` over the registry; called on the whole registry here
        // it would also kill the groups of the tests running beside this one.
        let mut mine = {
            let mut registry = groups();
            assert!(registry.contains(&pgid), "guarded groups are registered");
            registry.retain(|g| *g != pgid);
            vec![pgid]
        };
        kill(&mut mine);
        assert!(mine.is_empty(), "forgotten once killed");
        assert_eq!(child.wait().unwrap().signal(), Some(9), "killed by SIGKILL");
        drop(guard);
    }

    #[tokio::test]
    async fn ending_a_group_ends_every_member_after_the_leader_exited() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("helper.pid");
        let script = format!("sleep 300 & echo $! > {}; exit 0", pid_file.display());
        let mut leader = std::process::Command::new("sh")
            .args(["-c", &script])
            .process_group(0)
            .spawn()
            .unwrap();
        let guard = ProcessGroupGuard::new(Some(leader.id()));
        assert!(leader.wait().unwrap().success(), "the leader exits cleanly");
        let helper: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(nix::sys::signal::kill(Pid::from_raw(helper), None).is_ok());
        guard.end().await;
        assert!(!running(helper), "the helper was ended with the group");
    }

    /// Whether `pid` is a live process (an unreaped zombie is not).
    pub(crate) fn running(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().next().map(String::from))
            })
            .is_some_and(|state| state != "Z" && state != "X")
    }
}

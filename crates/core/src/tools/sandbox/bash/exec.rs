//! Running one shell command: a cleaned environment, its own process group, both output
//! streams drained concurrently and capped, and a timeout that kills the whole group.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;

use crate::base::process::{BASE_ENV, ProcessGroupGuard};
use crate::tools::sandbox::SandboxRuntime;

/// How long the output pipes may stay open after the shell has exited (a background
/// process that still holds them).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Whether a variable of antler's environment is passed on to commands: only
/// [`BASE_ENV`] and `LC_*`.
pub(super) fn is_allowed(name: &str) -> bool {
    BASE_ENV.contains(&name) || name.starts_with("LC_")
}

/// The allowed subset of `vars`.
pub(super) fn allowed_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    vars.into_iter()
        .filter(|(name, _)| name.to_str().is_some_and(is_allowed))
        .collect()
}

/// One command to run.
pub(super) struct Request {
    /// `bash` or `sh`, run with `-c`.
    pub shell: PathBuf,
    /// As the model wrote it, run with `shell -c`.
    pub command: String,
    /// The whole environment of the command.
    pub env: Vec<(OsString, OsString)>,
    /// When the command and its process group are killed.
    pub timeout: Duration,
    /// Characters kept of each stream.
    pub max_chars: usize,
}

/// How the command ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Ending {
    /// The shell exited with this code.
    Exited(i32),
    /// The shell was killed by this signal.
    Signaled(i32),
    /// The timeout struck; the process group was killed.
    TimedOut,
}

/// What one output stream produced.
#[derive(Debug, Default)]
pub(super) struct Captured {
    head: Vec<u8>,
    total: u64,
    /// Still open when we stopped reading (a background process holds it).
    pub left_open: bool,
}

impl Captured {
    fn push(&mut self, bytes: &[u8], keep: usize) {
        self.total += bytes.len() as u64;
        let room = keep.saturating_sub(self.head.len());
        self.head.extend_from_slice(&bytes[..room.min(bytes.len())]);
    }

    /// The text, cut after `max_chars` characters with a marker saying how much there was.
    pub(super) fn text(&self, max_chars: usize) -> String {
        let text = String::from_utf8_lossy(&self.head);
        match text.char_indices().nth(max_chars) {
            None if self.total == self.head.len() as u64 => text.into_owned(),
            cut => {
                let at = cut.map_or(text.len(), |(at, _)| at);
                format!(
                    "{}\n... [output cut: {} bytes in all, the first {max_chars} characters \
                     shown]",
                    &text[..at],
                    self.total
                )
            }
        }
    }
}

/// The result of a command that started.
pub(super) struct Outcome {
    pub ending: Ending,
    /// Its standard output.
    pub stdout: Captured,
    /// Its standard error.
    pub stderr: Captured,
}

/// Runs `request` in the workspace root. The spawn is a sandbox job, so that under
/// Landlock the shell inherits the worker's restriction; waiting happens on the runtime.
pub(super) async fn run(runtime: &SandboxRuntime, request: Request) -> Result<Outcome, String> {
    let keep = request.max_chars.saturating_mul(4);
    let timeout = request.timeout;
    let mut child = spawn(runtime, request).await?;
    let pid = child.id();
    let mut guard = ProcessGroupGuard::new(pid);
    let (ending, stdout, stderr) = supervise(&mut child, keep, timeout).await?;
    if ending == Ending::TimedOut {
        // Reap the shell; the group was killed.
        let _ = child.wait().await;
    } else {
        // Processes left in the background were started on purpose; they keep running.
        guard.disarm();
    }
    Ok(Outcome {
        ending,
        stdout,
        stderr,
    })
}

/// The command in its own process group, started by the sandbox runtime (inside its
/// confinement) with only the allowed environment.
async fn spawn(runtime: &SandboxRuntime, request: Request) -> Result<Child, String> {
    let handle = tokio::runtime::Handle::try_current()
        .map_err(|e| format!("Error: no async runtime to run the command on: {e}"))?;
    let cwd = runtime.workspace().root().to_path_buf();
    let Request {
        shell,
        command,
        env,
        ..
    } = request;
    let shell_name = shell.display().to_string();
    let spawned = runtime
        .run(move || {
            let _entered = handle.enter();
            tokio::process::Command::new(&shell)
                .arg("-c")
                .arg(&command)
                .current_dir(&cwd)
                .env_clear()
                .envs(env)
                // git must fail rather than prompt on the terminal the chat owns.
                .env("GIT_TERMINAL_PROMPT", "0")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                // If the run is cancelled before the child is handed over, it dies too.
                .kill_on_drop(true)
                .spawn()
        })
        .await
        .map_err(|e| e.to_string())?;
    spawned.map_err(|e| format!("Error: cannot start `{shell_name}`: {e}"))
}

/// Drains both pipes (keeping `keep` bytes of each) until the exit or the timeout, which
/// kills the whole group.
async fn supervise(
    child: &mut Child,
    keep: usize,
    timeout: Duration,
) -> Result<(Ending, Captured, Captured), String> {
    let pid = child.id();
    let mut stdout = Captured::default();
    let mut stderr = Captured::default();
    let (out_pipe, err_pipe) = (child.stdout.take(), child.stderr.take());
    let ending;
    {
        let readers = async {
            tokio::join!(
                drain(out_pipe, keep, &mut stdout),
                drain(err_pipe, keep, &mut stderr)
            )
        };
        tokio::pin!(readers);
        let mut drained = false;
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let wait = child.wait();
        tokio::pin!(wait);
        let status = loop {
            tokio::select! {
                _ = &mut readers, if !drained => drained = true,
                status = &mut wait => break Some(status),
                () = &mut deadline => break None,
            }
        };
        ending = match status {
            Some(Ok(status)) => match (status.code(), status.signal()) {
                (Some(code), _) => Ending::Exited(code),
                (None, Some(signal)) => Ending::Signaled(signal),
                (None, None) => Ending::Exited(-1),
            },
            Some(Err(e)) => return Err(format!("Error: lost track of the command: {e}")),
            None => {
                kill_group(pid);
                Ending::TimedOut
            }
        };
        if !drained {
            let _ = tokio::time::timeout(DRAIN_GRACE, &mut readers).await;
        }
    }
    Ok((ending, stdout, stderr))
}

/// Reads `pipe` to its end, keeping the first `keep` bytes in `into`. Cancelling keeps
/// what was read and marks the stream as left open.
async fn drain(pipe: Option<impl AsyncRead + Unpin>, keep: usize, into: &mut Captured) {
    let Some(mut pipe) = pipe else { return };
    into.left_open = true;
    let mut chunk = vec![0; 8192];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => into.push(&chunk[..n], keep),
        }
    }
    into.left_open = false;
}

fn kill_group(pid: Option<u32>) {
    if let Some(pgid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // ESRCH: everything already ended between the timeout and the signal.
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

//! Running one hook command: `bash -c` (or `sh -c`) in the project folder, in its own
//! process group, the event's JSON on stdin, both output streams drained concurrently and
//! capped, a timeout that ends the whole group, and the group ended when the hook is done.
//! Nothing a hook does can hang the run or fill its memory.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Child;

use crate::base::process::ProcessGroupGuard;

/// How long the output pipes may stay open after the hook exited.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Bytes kept of each output stream; the rest is read and dropped.
pub(super) const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// How one hook process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ending {
    /// It exited with this status.
    Exited(i32),
    /// A signal killed it.
    Signaled,
    /// It ran past its timeout; its group was ended.
    TimedOut,
    /// It could not be started.
    NotStarted(String),
}

/// What one hook process produced.
#[derive(Debug, Clone)]
pub(crate) struct Finished {
    /// Whether it exited (and how), was killed, timed out or never started.
    pub ending: Ending,
    /// Its standard output, at most [`MAX_OUTPUT_BYTES`], lossy UTF-8.
    pub stdout: String,
    /// Its standard error, likewise.
    pub stderr: String,
    /// Whether stdout was cut (its JSON is then not read).
    pub cut: bool,
    /// How long it ran.
    pub duration: Duration,
}

/// Runs `command` with `input` on its stdin, in `cwd`, with `env` added to antler's
/// environment (a hook is the user's own program, run as the user runs it).
pub(super) async fn run(
    command: &str,
    input: &[u8],
    cwd: &Path,
    env: &[(&str, &str)],
    timeout: Duration,
) -> Finished {
    let started = Instant::now();
    let mut child = match spawn(command, cwd, env) {
        Ok(child) => child,
        Err(why) => {
            return Finished {
                ending: Ending::NotStarted(why),
                stdout: String::new(),
                stderr: String::new(),
                cut: false,
                duration: started.elapsed(),
            };
        }
    };
    // Ended in every case once the hook is done (`Drop` kills the group): a hook leaves
    // nothing running behind it.
    let guard = ProcessGroupGuard::new(child.id());
    let (ending, output) = supervise(&mut child, input, timeout).await;
    guard.end().await;
    Finished {
        ending,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        cut: output.stdout_cut,
        duration: started.elapsed(),
    }
}

/// The hook in its own process group, so that it and whatever it starts can be ended
/// together.
fn spawn(command: &str, cwd: &Path, env: &[(&str, &str)]) -> Result<Child, String> {
    let vars: Vec<_> = std::env::vars_os().collect();
    let shell = crate::base::process::find_shell(&vars);
    tokio::process::Command::new(&shell)
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| format!("cannot start `{}`: {err}", shell.display()))
}

/// What was read from a hook's two output pipes, each capped.
#[derive(Default)]
struct Output {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    stdout_cut: bool,
    stderr_cut: bool,
}

/// Feeds `input`, drains both pipes concurrently and waits for the exit or the timeout.
async fn supervise(child: &mut Child, input: &[u8], timeout: Duration) -> (Ending, Output) {
    let mut stdin = child.stdin.take();
    let (out_pipe, err_pipe) = (child.stdout.take(), child.stderr.take());
    let mut output = Output::default();
    let ending = {
        let feed = async {
            if let Some(pipe) = stdin.as_mut() {
                // A hook that never reads its input, or exits first, is its own affair.
                let _ = pipe.write_all(input).await;
                let _ = pipe.shutdown().await;
            }
            drop(stdin.take());
        };
        let readers = async {
            tokio::join!(
                feed,
                drain(out_pipe, &mut output.stdout, &mut output.stdout_cut),
                drain(err_pipe, &mut output.stderr, &mut output.stderr_cut)
            )
        };
        tokio::pin!(readers);
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut drained = false;
        let status = loop {
            tokio::select! {
                _ = &mut readers, if !drained => drained = true,
                status = child.wait() => break Some(status),
                () = &mut deadline => break None,
            }
        };
        // A background process may hold the pipes after the hook exited: what it still
        // writes in a moment is read, then the group is ended.
        if status.is_some() && !drained {
            let _ = tokio::time::timeout(DRAIN_GRACE, &mut readers).await;
        }
        match status {
            Some(Ok(status)) => match status.code() {
                Some(code) => Ending::Exited(code),
                None => Ending::Signaled,
            },
            Some(Err(err)) => Ending::NotStarted(format!("lost track of the hook: {err}")),
            None => Ending::TimedOut,
        }
    };
    (ending, output)
}

/// Reads `pipe` to its end, keeping the first [`MAX_OUTPUT_BYTES`].
async fn drain(pipe: Option<impl AsyncRead + Unpin>, into: &mut Vec<u8>, cut: &mut bool) {
    let Some(mut pipe) = pipe else { return };
    let mut chunk = vec![0; 16 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT_BYTES.saturating_sub(into.len());
                into.extend_from_slice(&chunk[..n.min(room)]);
                *cut |= n > room;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn hook(command: &str, timeout_ms: u64) -> Finished {
        let dir = std::env::temp_dir();
        run(
            command,
            br#"{"x":1}"#,
            &dir,
            &[("ANTLER_PROJECT_DIR", "/p")],
            Duration::from_millis(timeout_ms),
        )
        .await
    }

    #[tokio::test]
    async fn input_on_stdin_output_and_status_back() {
        let done = hook(
            "cat; echo \" $ANTLER_PROJECT_DIR\"; echo oops >&2; exit 3",
            5_000,
        )
        .await;
        assert_eq!(done.ending, Ending::Exited(3));
        assert_eq!(done.stdout, "{\"x\":1} /p\n");
        assert_eq!(done.stderr, "oops\n");
    }

    #[tokio::test]
    async fn a_flood_is_cut_and_a_hang_is_ended_with_its_group() {
        let done = hook("head -c 5000000 /dev/zero | tr '\\0' a", 20_000).await;
        assert_eq!(done.ending, Ending::Exited(0));
        assert!(done.cut && done.stdout.len() == MAX_OUTPUT_BYTES);
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let command = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
        let done = hook(&command, 300).await;
        assert_eq!(done.ending, Ending::TimedOut);
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            !crate::base::process::tests::running(pid),
            "the hook's background child was ended with its group"
        );
    }

    #[tokio::test]
    async fn a_hook_that_ignores_a_large_input_does_not_hang() {
        let dir = std::env::temp_dir();
        let input = vec![b'x'; 4 * 1024 * 1024];
        let done = run("exit 0", &input, &dir, &[], Duration::from_secs(10)).await;
        assert_eq!(done.ending, Ending::Exited(0));
    }
}

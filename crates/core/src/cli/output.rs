//! Printing a command's result: JSON for `--json`, and stdout that tolerates a reader
//! that went away.

use super::error::CliError;

/// `value` as pretty JSON with a final newline.
pub(super) fn to_json<T: serde::Serialize>(value: &T) -> String {
    // Serialising plain structs of strings and numbers cannot fail; "null" is never printed
    // in practice but keeps this panic-free.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| String::from("null"));
    text.push('\n');
    text
}

/// Writes the command's output. A reader that went away (`antler ... | head`) is not an
/// error worth a message; anything else is.
pub(super) fn write_stdout(text: &str) -> Result<(), CliError> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::failure(format!("cannot write the output: {err}")))
        }
        _ => Ok(()),
    }
}

/// Ends stdout for its reader once a run has printed everything: flushes it and puts
/// `/dev/null` in place of fd 1, so a pipe reader sees end of file now instead of when the
/// process exits, after the MCP servers have stopped (which can take a while). Writes to
/// stdout after this are discarded; stderr is left alone. The descriptor is replaced rather
/// than closed so that no file opened later can take number 1 and receive stray output.
pub(super) fn close_stdout() {
    use std::io::Write;
    // Held across the swap, so no other thread is half-way through a write.
    let mut stdout = std::io::stdout().lock();
    if let Err(err) = stdout.flush() {
        tracing::debug!("flushing stdout: {err}");
    }
    let replaced = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .and_then(|null| nix::unistd::dup2_stdout(&null).map_err(std::io::Error::from));
    if let Err(err) = replaced {
        // The reader then sees end of file at exit, as it always did.
        tracing::debug!("cannot close stdout early: {err}");
    }
}

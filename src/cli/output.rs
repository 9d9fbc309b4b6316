//! Printing a command's result: JSON for `--json`, and stdout that tolerates a reader
//! that went away.

use super::error::CliError;

/// `value` as pretty JSON with a final newline.
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    // Serialising plain structs of strings and numbers cannot fail; "null" is never printed
    // in practice but keeps this panic-free.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| String::from("null"));
    text.push('\n');
    text
}

/// Writes the command's output. A reader that went away (`antler ... | head`) is not an
/// error worth a message; anything else is.
pub fn write_stdout(text: &str) -> Result<(), CliError> {
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

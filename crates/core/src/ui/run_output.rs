//! What a one-shot run prints: the final answer (`text`), one result object (`json`), or
//! every event as a JSON line (`stream-json`). Progress goes to stderr, and only when stderr
//! is a terminal; notices and errors go to stderr always.

use std::io::Write;
use std::sync::Mutex;

use serde::Serialize;

use crate::protocol::{Event, RunResult, RunStatus};

/// The `--output-format` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// The final answer on stdout.
    Text,
    /// One JSON object at the end: result, thread id, turns, usage, promoted tools, errors.
    Json,
    /// Every event as one JSON line, flushed as it happens.
    StreamJson,
}

/// Renders a run's events for one output format.
pub(crate) struct RunPrinter {
    format: OutputFormat,
    /// Show tool activity on stderr (stderr is a terminal).
    progress: bool,
    /// Stream the answer's text to stdout as it arrives (text format, stdout a terminal).
    live_text: bool,
    state: Mutex<PrinterState>,
}

#[derive(Default)]
struct PrinterState {
    /// Whether the last thing written to stdout was streamed text without a newline.
    open_line: bool,
    /// Whether stdout's reader went away; nothing more is written to it.
    stdout_gone: bool,
}

impl RunPrinter {
    /// A printer for `format`; `stdout_tty`/`stderr_tty` say where a person is watching.
    pub(crate) fn new(format: OutputFormat, stdout_tty: bool, stderr_tty: bool) -> Self {
        Self {
            format,
            progress: stderr_tty && format == OutputFormat::Text,
            live_text: stdout_tty && format == OutputFormat::Text,
            state: Mutex::new(PrinterState::default()),
        }
    }

    /// Renders one event as it happens. Notices reach stderr in every format (the JSON
    /// formats carry them too), so a person or a CI log always sees a refusal.
    pub(crate) fn event(&self, event: &Event) {
        if let Event::Notice { message, .. } = event {
            eprintln!("note: {}", crate::base::text::printable(message));
        }
        match self.format {
            OutputFormat::StreamJson => self.stdout(&json_line(event)),
            OutputFormat::Json => {}
            OutputFormat::Text => self.text_event(event),
        }
    }

    /// Prints the end of the run.
    pub(crate) fn finish(&self, result: &RunResult) {
        match self.format {
            OutputFormat::StreamJson => {}
            OutputFormat::Json => self.stdout(&json_line(result)),
            OutputFormat::Text => {
                if self.live_text {
                    if self.take_open_line() {
                        self.stdout("\n");
                    }
                } else if !result.result.is_empty() {
                    let mut answer = result.result.clone();
                    if !answer.ends_with('\n') {
                        answer.push('\n');
                    }
                    self.stdout(&answer);
                }
            }
        }
        if self.format == OutputFormat::Text && !result.files.is_empty() {
            eprintln!("Files:");
            for file in &result.files {
                eprintln!("  {file}");
            }
        }
        // Errors reach stderr in every format (stream-json has them in run_finished too).
        for error in &result.errors {
            if result.status == RunStatus::Interrupted {
                eprintln!("antler: interrupted; thread {} saved", result.thread_id);
            } else {
                eprintln!("error: {}", crate::base::text::printable(error));
            }
        }
    }

    fn text_event(&self, event: &Event) {
        match event {
            Event::Subagent {
                subagent,
                description,
                event,
                ..
            } if self.progress => match event.as_ref() {
                Event::RunStarted { .. } => eprintln!("⏺ subagent {subagent}: {description}"),
                Event::ToolCallStarted {
                    name, arguments, ..
                } => eprintln!(
                    "  ↳ {subagent} ⏺ {name} {}",
                    clip_line(&arguments.to_string(), 80)
                ),
                Event::RunFinished(result) => {
                    eprintln!("  ↳ {subagent} finished: {:?}", result.status)
                }
                _ => {}
            },
            Event::TextDelta { text, .. } if self.live_text => {
                self.stdout(text);
                self.lock().open_line = !text.ends_with('\n');
            }
            Event::TurnCompleted { .. } if self.live_text && self.take_open_line() => {
                self.stdout("\n");
            }
            Event::Retrying { .. } if self.live_text && self.take_open_line() => {
                // The streamed text of this attempt is void; start the next one on a new line.
                self.stdout("\n");
            }
            Event::Retrying {
                attempt,
                delay_ms,
                reason,
                ..
            } if self.progress => {
                eprintln!("↻ retrying (attempt {attempt}) in {delay_ms} ms: {reason}");
            }
            Event::ToolCallStarted {
                name, arguments, ..
            } if self.progress => {
                eprintln!("⏺ {name} {}", clip_line(&arguments.to_string(), 100));
            }
            Event::ToolCallFinished {
                is_error,
                content,
                duration_ms,
                ..
            } if self.progress => {
                let mark = if *is_error { "✗" } else { "✓" };
                eprintln!(
                    "  {mark} {duration_ms} ms · {}",
                    clip_line(content.lines().next().unwrap_or(""), 100)
                );
            }
            Event::ToolsPromoted { added, .. } if self.progress && !added.is_empty() => {
                eprintln!("  + promoted: {}", added.join(", "));
            }
            Event::Summarized {
                replaced_messages, ..
            } if self.progress => {
                eprintln!("… summarised {replaced_messages} older messages");
            }
            _ => {}
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PrinterState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take_open_line(&self) -> bool {
        std::mem::take(&mut self.lock().open_line)
    }

    /// Writes and flushes; a reader that went away stops further output, silently.
    fn stdout(&self, text: &str) {
        let mut state = self.lock();
        if state.stdout_gone {
            return;
        }
        let mut out = std::io::stdout().lock();
        if out
            .write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            state.stdout_gone = true;
        }
    }
}

/// `value` as one line of JSON with a newline.
pub(crate) fn json_line<T: Serialize>(value: &T) -> String {
    let mut line = serde_json::to_string(value).unwrap_or_else(|err| {
        serde_json::json!({"type": "error", "error": err.to_string()}).to_string()
    });
    line.push('\n');
    line
}

/// The first `max` characters of `text` on one line.
fn clip_line(text: &str, max: usize) -> String {
    let line = text.replace(['\n', '\r'], " ");
    match line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Usage;

    #[test]
    fn events_serialise_with_their_type_tag() {
        let line = json_line(&Event::Usage {
            turn: 2,
            usage: Usage {
                input_tokens: 5,
                cached_input_tokens: 1,
                output_tokens: 3,
            },
        });
        assert_eq!(
            line,
            "{\"type\":\"usage\",\"turn\":2,\"input_tokens\":5,\"cached_input_tokens\":1,\"output_tokens\":3}\n"
        );
        let result = RunResult {
            status: RunStatus::Success,
            is_error: false,
            duration_ms: 3,
            model_usage: Default::default(),
            result: "hi".into(),
            thread_id: "t".into(),
            model: "m".into(),
            turns: 1,
            usage: Usage::default(),
            thread_usage: Usage::default(),
            promoted_tools: vec![],
            files: vec![],
            notices: vec![],
            errors: vec![],
            error_kind: None,
            ledger: None,
        };
        let value: serde_json::Value =
            serde_json::from_str(&json_line(&Event::RunFinished(result))).unwrap();
        assert_eq!(value["type"], "run_finished");
        assert_eq!(value["status"], "success");
        assert_eq!(value["result"], "hi");
    }

    #[test]
    fn clip_line_is_char_safe() {
        assert_eq!(clip_line("héllo\nworld", 3), "hél…");
        assert_eq!(clip_line("ab", 3), "ab");
    }
}

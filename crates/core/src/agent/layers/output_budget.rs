//! The output budget: one huge tool result must not crowd the model's context. A result
//! longer than the budget keeps its head and tail; the full text goes to a file the model
//! is told about (readable with `read_file`).

use crate::tools::naming::sanitize;
use std::path::PathBuf;

use crate::agent::middleware::Layer;
use crate::agent::state::ThreadState;
use crate::protocol::ToolCall;
use crate::tools::{PreparedCall, ToolOutput};

/// Cuts results longer than `max_chars` characters to their head and tail, saving the full
/// text under `dir` (the thread's output folder).
pub struct OutputBudget {
    max_chars: usize,
    dir: PathBuf,
}

impl OutputBudget {
    /// A budget of `max_chars` characters, saving full outputs in `dir`.
    pub fn new(max_chars: usize, dir: PathBuf) -> Self {
        Self { max_chars, dir }
    }

    /// Saves `text` for `call` and returns where: a new file in the thread's folder whose
    /// name is built only from safe characters of the tool name and the call id (both
    /// chosen by the model), never overwriting or following an existing file.
    fn save(&self, call: &ToolCall, text: &str) -> std::io::Result<PathBuf> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        crate::base::private_file::create_dir(&self.dir)?;
        let stem = format!(
            "{}-{}",
            file_name_part(&call.name, "tool"),
            file_name_part(&call.id, "call")
        );
        for attempt in 0..MAX_NAME_ATTEMPTS {
            let name = match attempt {
                0 => format!("{stem}.txt"),
                n => format!("{stem}-{n}.txt"),
            };
            let path = self.dir.join(name);
            // `create_new` fails on any existing entry, a planted symlink included.
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(mut file) => {
                    file.write_all(text.as_bytes())?;
                    return Ok(path);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other(
            "every file name for this call is taken",
        ))
    }
}

/// How many numbered names a save tries before giving up.
const MAX_NAME_ATTEMPTS: usize = 100;
/// The longest part of a saved output's name taken from the model's text.
const MAX_NAME_PART: usize = 48;

/// `text` as part of a file name: ASCII letters, digits, `-` and `_` kept, everything else
/// (`/`, `.`, NUL, ...) an `_`, at most [`MAX_NAME_PART`] characters; `fallback` when
/// nothing is left.
fn file_name_part(text: &str, fallback: &str) -> String {
    let part = sanitize(&text.chars().take(MAX_NAME_PART).collect::<String>());
    if part.chars().all(|c| c == '_') {
        fallback.to_string()
    } else {
        part
    }
}

/// The byte offset after the first `n` characters of `text`.
fn char_offset(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

impl Layer for OutputBudget {
    fn name(&self) -> &'static str {
        "output_budget"
    }

    fn after_tool(&self, _state: &mut ThreadState, call: &PreparedCall, output: &mut ToolOutput) {
        let total = output.content.chars().count();
        if total <= self.max_chars {
            return;
        }
        let head_chars = self.max_chars * 3 / 4;
        let tail_chars = self.max_chars - head_chars;
        let text = &output.content;
        let head = &text[..char_offset(text, head_chars)];
        let tail = &text[char_offset(text, total - tail_chars)..];
        let omitted = total - head_chars - tail_chars;
        let marker = match self.save(call, text) {
            Ok(path) => format!(
                "\n\n[… {omitted} characters omitted; the full output ({total} characters) is \
                 saved at {} — read it with read_file and a line range …]\n\n",
                path.display()
            ),
            Err(err) => {
                tracing::warn!(tool = %call.name, "cannot save a long tool output: {err}");
                format!(
                    "\n\n[… {omitted} characters omitted; the full output ({total} characters) \
                     could not be saved …]\n\n"
                )
            }
        };
        output.content = format!("{head}{marker}{tail}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::middleware::Chain;

    fn run(max: usize, dir: PathBuf, content: &str) -> String {
        let chain = Chain::new().with(OutputBudget::new(max, dir));
        let call = ToolCall {
            id: "call/1".into(),
            name: "grep".into(),
            arguments: "{}".into(),
        };
        chain
            .end_tool_call(
                &mut ThreadState::default(),
                &(&call).into(),
                1,
                ToolOutput::ok(content),
            )
            .content
    }

    #[test]
    fn short_results_pass_untouched() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(run(10, dir.path().into(), "0123456789"), "0123456789");
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }

    #[test]
    fn hostile_tool_names_never_leave_the_thread_folder() {
        let dir = tempfile::tempdir().unwrap();
        let outputs = dir.path().join("outputs/thread");
        let victim = dir.path().join("victim");
        for name in [
            format!("/./././{}/PWNED", dir.path().display()),
            String::from("../../victim"),
            String::from(".."),
            String::from("a\0b"),
            "x".repeat(5000),
        ] {
            let chain = Chain::new().with(OutputBudget::new(10, outputs.clone()));
            let call = ToolCall {
                id: String::from("../../id"),
                name,
                arguments: "{}".into(),
            };
            let out = chain
                .end_tool_call(
                    &mut ThreadState::default(),
                    &(&call).into(),
                    1,
                    ToolOutput::ok("y".repeat(50)),
                )
                .content;
            assert!(out.contains("saved at"), "{out}");
        }
        assert!(!victim.exists() && !dir.path().join("PWNED").exists());
        let saved: Vec<String> = std::fs::read_dir(&outputs)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(saved.len(), 5, "{saved:?}");
        assert!(
            saved.iter().all(|n| n.len() <= 2 * MAX_NAME_PART + 8),
            "{saved:?}"
        );
        assert!(
            saved.contains(&String::from("tool-______id.txt")),
            "{saved:?}"
        );
        assert!(
            saved.contains(&String::from("______victim-______id.txt")),
            "{saved:?}"
        );
    }

    #[test]
    fn a_planted_symlink_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outputs = dir.path().join("outputs");
        std::fs::create_dir_all(&outputs).unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, outputs.join("grep-call_1.txt")).unwrap();
        let out = run(10, outputs.clone(), &"z".repeat(40));
        assert!(out.contains("grep-call_1-1.txt"), "{out}");
        assert_eq!(std::fs::read_to_string(victim).unwrap(), "keep");
    }

    #[test]
    fn long_results_keep_head_and_tail_and_the_full_text_is_saved() {
        let dir = tempfile::tempdir().unwrap();
        let content: String = "é".repeat(30) + &"x".repeat(70);
        let out = run(40, dir.path().join("outputs"), &content);
        let saved = dir.path().join("outputs/grep-call_1.txt");
        assert!(out.starts_with(&"é".repeat(30)), "{out}");
        assert!(out.ends_with(&"x".repeat(10)), "{out}");
        assert!(out.contains("60 characters omitted"), "{out}");
        assert!(out.contains(&saved.display().to_string()), "{out}");
        assert_eq!(std::fs::read_to_string(saved).unwrap(), content);
    }
}

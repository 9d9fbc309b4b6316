//! The output budget: one huge tool result must not crowd the model's context. A result
//! longer than the budget keeps its head and tail; the full text goes to a file the model
//! is told about (readable with `read_file`).

use std::path::PathBuf;

use crate::agent::message::ToolCall;
use crate::agent::middleware::Layer;
use crate::agent::state::ThreadState;
use crate::tools::ToolOutput;

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

    /// Saves `text` for `call` and returns where.
    fn save(&self, call: &ToolCall, text: &str) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self.dir)?;
        let safe_id: String = call
            .id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = self.dir.join(format!("{}-{safe_id}.txt", call.name));
        std::fs::write(&path, text)?;
        Ok(path)
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

    fn after_tool(&self, _state: &mut ThreadState, call: &ToolCall, output: &mut ToolOutput) {
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
                &call,
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

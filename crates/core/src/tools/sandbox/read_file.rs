//! `read_file(path, start_line?, end_line?)`: a text file with line numbers, at most
//! `max_bytes` of it per call.

use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::Workspace;
use super::common::{JobTool, io_error, positive_setting};
use super::files::open_read;
use crate::tools::Tool;
use crate::tools::registry::{ToolBuildContext, ToolFactory};

/// The registry entry for `antler.sandbox:read_file`.
pub const READ_FILE: ToolFactory = ToolFactory {
    id: "antler.sandbox:read_file",
    tool_name: "read_file",
    settings: &["max_bytes"],
    build,
};

/// Reads at most this many bytes of a file per call unless `max_bytes` says otherwise.
const DEFAULT_MAX_BYTES: usize = 256 * 1024;
/// A NUL byte in this many leading bytes marks a file as binary.
const BINARY_PROBE_BYTES: u64 = 8 * 1024;

#[derive(Deserialize)]
struct Args {
    path: String,
    #[serde(default)]
    start_line: Option<u64>,
    #[serde(default)]
    end_line: Option<u64>,
}

fn build(ctx: &ToolBuildContext<'_>) -> Result<Arc<dyn Tool>, String> {
    let max_bytes = positive_setting(ctx, "max_bytes", DEFAULT_MAX_BYTES)?;
    JobTool::reading(
        ctx,
        &READ_FILE,
        format!(
            "Read a text file in the workspace. Lines come numbered (`number<TAB>text`). \
             At most {max_bytes} bytes are returned per call: read large files in parts \
             with start_line and end_line."
        ),
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file, relative to the workspace root."
                },
                "start_line": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "First line to read (1-based, inclusive; default 1)."
                },
                "end_line": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Last line to read (1-based, inclusive; default: the end)."
                }
            },
            "required": ["path"]
        }),
        max_bytes,
        read,
    )
}

fn read(workspace: &Workspace, args: &Args, max_bytes: usize) -> Result<String, String> {
    let path = args.path.as_str();
    let start = args.start_line.unwrap_or(1);
    if start == 0 || args.end_line == Some(0) {
        return Err(String::from(
            "Error: line numbers start at 1; use start_line: 1 for the first line",
        ));
    }
    if let Some(end) = args.end_line.filter(|end| *end < start) {
        return Err(format!(
            "Error: end_line ({end}) is before start_line ({start})"
        ));
    }
    let resolved = workspace
        .resolve_existing(path)
        .map_err(|e| e.to_string())?;
    let io = |e: std::io::Error| io_error("read", path, &e);
    let mut file = open_read(&resolved, path).map_err(|e| e.message("read", path))?;
    let size = file.metadata().map_err(io)?.len();
    let mut probe = Vec::new();
    (&mut file)
        .take(BINARY_PROBE_BYTES)
        .read_to_end(&mut probe)
        .map_err(io)?;
    if probe.contains(&0) {
        return Err(format!(
            "Error: `{path}` looks like a binary file (it contains NUL bytes); read_file \
             reads text only"
        ));
    }
    let reader = BufReader::new(std::io::Cursor::new(probe).chain(file));
    let page = page(reader, start, args.end_line, max_bytes).map_err(io)?;
    if page.shown == 0 && !page.cut {
        return if page.lines == 0 && start == 1 {
            Ok(String::from("(empty file)"))
        } else {
            Err(format!(
                "Error: start_line {start} is past the end of `{path}`, which has {} lines",
                page.lines
            ))
        };
    }
    let mut out = page.text;
    if page.cut {
        let last = start + page.shown.saturating_sub(1);
        out.push_str(&format!(
            "\n... [output cut at {max_bytes} bytes (the file has {size} bytes): lines \
             {start}-{last} shown; read on with start_line: {}, or search with grep]",
            last + 1
        ));
    }
    Ok(out)
}

/// Lines `start..=end` of a file, numbered.
struct Page {
    text: String,
    /// How many lines were shown.
    shown: u64,
    /// How many lines were read in all (the line count when the end was reached).
    lines: u64,
    /// Whether `max_bytes` stopped the reading.
    cut: bool,
}

fn page(
    mut reader: impl BufRead,
    start: u64,
    end: Option<u64>,
    max_bytes: usize,
) -> std::io::Result<Page> {
    let mut lines = 0;
    while lines + 1 < start {
        if reader.skip_until(b'\n')? == 0 {
            break;
        }
        lines += 1;
    }
    let mut page = Page {
        text: String::new(),
        shown: 0,
        lines,
        cut: false,
    };
    let mut used = 0;
    let mut line = Vec::new();
    while end.is_none_or(|end| page.lines < end) {
        line.clear();
        let budget = max_bytes.saturating_sub(used);
        // One byte more than the budget shows whether the line goes on.
        let read = (&mut reader)
            .take(budget as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if read == 0 {
            break;
        }
        let complete = line.ends_with(b"\n");
        while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            line.pop();
        }
        if !complete && read > budget {
            // The budget runs out inside this line: show its start only when nothing else
            // fits, so that a file of one huge line still shows something.
            if page.shown == 0 {
                line.truncate(budget);
                push_line(&mut page, &line);
            }
            page.cut = true;
            break;
        }
        // A line whose text fills the budget exactly is read with its newline (one byte
        // over): it is shown, and the next line finds the budget spent.
        used = (used + read).min(max_bytes);
        push_line(&mut page, &line);
    }
    if page.text.ends_with('\n') {
        page.text.pop();
    }
    Ok(page)
}

fn push_line(page: &mut Page, line: &[u8]) {
    page.lines += 1;
    page.shown += 1;
    page.text.push_str(&format!(
        "{:>6}\t{}\n",
        page.lines,
        String::from_utf8_lossy(line)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::CallStandalone;
    use crate::tools::ToolOutput;
    use crate::tools::sandbox::testing::tool;

    #[test]
    fn a_line_that_fills_the_budget_exactly_is_shown_and_the_rest_is_marked_cut() {
        let text = "aaaaaaaaaa\nbbbbbbbbb\nc\nd\n";
        let page = page(std::io::Cursor::new(text), 1, None, 20).unwrap();
        assert_eq!(page.text, "     1\taaaaaaaaaa\n     2\tbbbbbbbbb");
        assert!(page.cut, "the file goes on: the model must be told");
    }

    fn numbered(lines: &[(u64, &str)]) -> String {
        lines
            .iter()
            .map(|(n, l)| format!("{n:>6}\t{l}"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[tokio::test]
    async fn reads_numbered_lines_and_ranges() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\r\ntwo\nthree\nfour").unwrap();
        std::fs::write(dir.path().join("empty"), "").unwrap();
        let read = tool(dir.path(), "read_file", "", &[]);
        let out = read.call_standalone(json!({"path": "a.txt"})).await;
        let all = [(1, "one"), (2, "two"), (3, "three"), (4, "four")];
        assert_eq!(out, ToolOutput::ok(numbered(&all)));
        let out = read
            .call_standalone(json!({"path": "a.txt", "start_line": 2, "end_line": 3}))
            .await;
        assert_eq!(out, ToolOutput::ok(numbered(&all[1..3])));
        let out = read
            .call_standalone(json!({"path": "a.txt", "start_line": 4, "end_line": 99}))
            .await;
        assert_eq!(out, ToolOutput::ok(numbered(&all[3..])));
        let out = read.call_standalone(json!({"path": "empty"})).await;
        assert_eq!(out, ToolOutput::ok("(empty file)"));
    }

    #[tokio::test]
    async fn bad_ranges_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let read = tool(dir.path(), "read_file", "", &[]);
        let out = read
            .call_standalone(json!({"path": "a.txt", "start_line": 5}))
            .await;
        assert_eq!(
            out,
            ToolOutput::error("Error: start_line 5 is past the end of `a.txt`, which has 2 lines")
        );
        let out = read
            .call_standalone(json!({"path": "a.txt", "start_line": 2, "end_line": 1}))
            .await;
        assert!(out.is_error && out.content.contains("before start_line"));
        let out = read
            .call_standalone(json!({"path": "a.txt", "start_line": 0}))
            .await;
        assert!(out.is_error && out.content.contains("start at 1"));
    }

    #[tokio::test]
    async fn large_files_are_cut_with_a_hint_to_read_on() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=100).map(|n| format!("line {n:03}\n")).collect();
        std::fs::write(dir.path().join("big.txt"), &text).unwrap();
        std::fs::write(dir.path().join("wide.txt"), "x".repeat(100)).unwrap();
        let read = tool(dir.path(), "read_file", ", max_bytes: 20", &[]);
        let out = read.call_standalone(json!({"path": "big.txt"})).await;
        assert!(!out.is_error);
        assert!(
            out.content
                .starts_with(&numbered(&[(1, "line 001"), (2, "line 002")])),
            "{}",
            out.content
        );
        assert!(
            out.content
                .contains("output cut at 20 bytes (the file has 900 bytes)")
        );
        assert!(
            out.content.contains("read on with start_line: 3"),
            "{}",
            out.content
        );
        let out = read
            .call_standalone(json!({"path": "big.txt", "start_line": 50, "end_line": 51}))
            .await;
        assert_eq!(out.content, numbered(&[(50, "line 050"), (51, "line 051")]));
        let out = read.call_standalone(json!({"path": "wide.txt"})).await;
        assert!(
            out.content
                .starts_with(&format!("     1\t{}\n", "x".repeat(20)))
        );
    }

    #[tokio::test]
    async fn binary_and_invalid_utf8_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bin"), b"ELF\x00\x01").unwrap();
        std::fs::write(dir.path().join("latin1"), b"caf\xe9\n").unwrap();
        let read = tool(dir.path(), "read_file", "", &[]);
        let out = read.call_standalone(json!({"path": "bin"})).await;
        assert!(out.is_error && out.content.contains("binary"), "{out:?}");
        let out = read.call_standalone(json!({"path": "latin1"})).await;
        assert_eq!(out, ToolOutput::ok("     1\tcaf\u{fffd}"));
    }

    #[tokio::test]
    async fn paths_outside_the_workspace_are_refused() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(outer.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret"), ws.join("link")).unwrap();
        std::os::unix::fs::symlink(outer.path(), ws.join("dirlink")).unwrap();
        let read = tool(&ws, "read_file", "", &[]);
        let abs = outer.path().join("secret").display().to_string();
        for path in ["../secret", abs.as_str(), "link", "dirlink/secret"] {
            let out = read.call_standalone(json!({ "path": path })).await;
            assert!(
                out.is_error && out.content.contains("outside the workspace"),
                "{path}: {out:?}"
            );
        }
        let out = read.call_standalone(json!({"path": "."})).await;
        assert!(
            out.is_error && out.content.contains("is a directory"),
            "{out:?}"
        );
    }

    #[tokio::test]
    async fn read_only_paths_can_be_read() {
        let outer = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outer.path().join("ws")).unwrap();
        std::fs::create_dir_all(outer.path().join("skills")).unwrap();
        std::fs::write(outer.path().join("skills/s.md"), "skill").unwrap();
        let read = tool(
            &outer.path().join("ws"),
            "read_file",
            "",
            &["read_only_paths: [../skills]"],
        );
        let out = read
            .call_standalone(json!({"path": "../skills/s.md"}))
            .await;
        assert_eq!(out, ToolOutput::ok("     1\tskill"));
    }
}

//! `str_replace(path, old_str, new_str, replace_all?)`: an exact-text edit of one file.

use std::io::{Read, Write};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use std::path::PathBuf;

use super::Workspace;
use super::common::{JobTool, io_error};
use super::files::{open_read, open_write};
use super::preview;
use crate::protocol::Preview;
use crate::tools::Tool;
use crate::tools::registry::{ToolBuildContext, ToolFactory};

/// The registry entry for `antler.sandbox:str_replace`.
pub const STR_REPLACE: ToolFactory = ToolFactory {
    id: "antler.sandbox:str_replace",
    tool_name: "str_replace",
    settings: &[],
    build,
};

/// Files larger than this are not edited in memory.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// At most this many line numbers are listed for an ambiguous `old_str`.
const MAX_LISTED_LINES: usize = 20;

#[derive(Deserialize)]
struct Args {
    path: String,
    old_str: String,
    new_str: String,
    #[serde(default)]
    replace_all: bool,
}

fn build(ctx: &ToolBuildContext<'_>) -> Result<Arc<dyn Tool>, String> {
    JobTool::writing(
        ctx,
        &STR_REPLACE,
        "Replace exact text in a file of the workspace. `old_str` must match \
         the file exactly (whitespace and indentation included) and, unless \
         replace_all is true, exactly once: include enough surrounding lines to \
         make it unique."
            .to_string(),
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file, relative to the workspace root."
                },
                "old_str": {"type": "string", "description": "The exact text to replace."},
                "new_str": {"type": "string", "description": "The text to put in its place."},
                "replace_all": {
                    "type": "boolean",
                    "description": "Replace every occurrence (default false: exactly one)."
                }
            },
            "required": ["path", "old_str", "new_str"]
        }),
        |workspace, args, _| replace(workspace, args),
        preview,
        |workspace, args| super::preview::written(workspace, &args.path),
    )
}

fn replace(workspace: &Workspace, args: &Args) -> Result<String, String> {
    let path = args.path.as_str();
    let edit = edit(workspace, args)?;
    open_write(&edit.target, path)
        .map_err(|e| e.message("write", path))?
        .write_all(edit.updated.as_bytes())
        .map_err(|e| io_error("write", path, &e))?;
    let noun = if edit.count == 1 {
        "occurrence"
    } else {
        "occurrences"
    };
    Ok(format!(
        "Replaced {} {noun} in `{}`",
        edit.count,
        workspace.display(&edit.target)
    ))
}

fn preview(workspace: &Workspace, args: &Args) -> Result<Preview, String> {
    let edit = edit(workspace, args)?;
    Ok(preview::diff(
        workspace,
        &edit.target,
        &edit.original,
        &edit.updated,
    ))
}

/// A checked edit, not written yet.
struct Edit {
    target: PathBuf,
    original: String,
    updated: String,
    count: usize,
}

/// Reads the file and makes the edit in memory, or says why it cannot be made.
fn edit(workspace: &Workspace, args: &Args) -> Result<Edit, String> {
    let path = args.path.as_str();
    if args.old_str.is_empty() {
        return Err(String::from(
            "Error: old_str is empty; give the exact text to replace (use write_file to \
             write a whole file)",
        ));
    }
    let target = workspace
        .resolve_for_write(path)
        .map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    open_read(&target, path)
        .map_err(|e| e.message("read", path))?
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error("read", path, &e))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!(
            "Error: `{path}` is larger than {MAX_FILE_BYTES} bytes; str_replace edits smaller \
             files only"
        ));
    }
    let text = String::from_utf8(bytes).map_err(|_| {
        format!(
            "Error: `{path}` is not valid UTF-8 text; str_replace edits text files only \
             (rewriting it would corrupt it)"
        )
    })?;
    let offsets: Vec<usize> = text.match_indices(&args.old_str).map(|(i, _)| i).collect();
    let count = offsets.len();
    if count == 0 {
        return Err(format!(
            "Error: old_str was not found in `{path}` (0 matches); it must match the file \
             exactly, whitespace and indentation included: read the file and copy the text"
        ));
    }
    if count > 1 && !args.replace_all {
        let lines = line_numbers(&text, &offsets);
        return Err(format!(
            "Error: old_str occurs {count} times in `{path}` (at lines {lines}); include more \
             surrounding text to make it unique, or set replace_all: true to replace all of \
             them"
        ));
    }
    // Bounded before it is made: many short matches times a long replacement could ask
    // for gigabytes (and the preview makes the edit before anyone approves it).
    let grown = count.saturating_mul(args.new_str.len());
    if text.len().saturating_add(grown) > 2 * MAX_FILE_BYTES as usize {
        return Err(format!(
            "Error: the edit would make `{path}` larger than {} bytes; edit it in smaller steps",
            2 * MAX_FILE_BYTES
        ));
    }
    let updated = text.replace(&args.old_str, &args.new_str);
    Ok(Edit {
        target,
        original: text,
        updated,
        count,
    })
}

/// The 1-based line numbers of the byte `offsets` (ascending) in `text`, listed.
fn line_numbers(text: &str, offsets: &[usize]) -> String {
    let mut line = 1;
    let mut from = 0;
    let mut listed = Vec::new();
    for &offset in offsets.iter().take(MAX_LISTED_LINES) {
        line += text.as_bytes()[from..offset]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        from = offset;
        listed.push(line.to_string());
    }
    let mut out = listed.join(", ");
    if offsets.len() > MAX_LISTED_LINES {
        out.push_str(", ...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::CallStandalone;
    use crate::tools::ToolOutput;
    use crate::tools::sandbox::testing::tool;

    fn setup(text: &str) -> (tempfile::TempDir, Arc<dyn Tool>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.rs"), text).unwrap();
        let tool = tool(dir.path(), "str_replace", "", &[]);
        (dir, tool)
    }

    fn content(dir: &tempfile::TempDir) -> String {
        std::fs::read_to_string(dir.path().join("f.rs")).unwrap()
    }

    #[tokio::test]
    async fn replaces_a_unique_match() {
        let (dir, edit) = setup("fn a() {}\nfn b() {}\n");
        let out = edit
            .call_standalone(json!({"path": "f.rs", "old_str": "fn b", "new_str": "fn c"}))
            .await;
        assert_eq!(out, ToolOutput::ok("Replaced 1 occurrence in `f.rs`"));
        assert_eq!(content(&dir), "fn a() {}\nfn c() {}\n");
    }

    #[tokio::test]
    async fn an_edit_that_would_grow_the_file_past_the_bound_is_refused_before_it_is_made() {
        let (dir, edit) = setup(&"e".repeat(1000));
        let args = json!({"path": "f.rs", "old_str": "e", "new_str": "x".repeat(40_000),
                          "replace_all": true});
        assert_eq!(edit.preview(&args).await, None);
        let out = edit.call_standalone(args).await;
        assert!(
            out.is_error && out.content.contains("larger than"),
            "{out:?}"
        );
        assert_eq!(content(&dir), "e".repeat(1000));
    }

    #[tokio::test]
    async fn several_matches_need_replace_all() {
        let (dir, edit) = setup("x = 1\ny = 2\nx = 3\n\nx = 4\n");
        let call = json!({"path": "f.rs", "old_str": "x =", "new_str": "z ="});
        let out = edit.call_standalone(call.clone()).await;
        assert_eq!(
            out,
            ToolOutput::error(
                "Error: old_str occurs 3 times in `f.rs` (at lines 1, 3, 5); include more \
                 surrounding text to make it unique, or set replace_all: true to replace all \
                 of them"
            )
        );
        assert_eq!(content(&dir), "x = 1\ny = 2\nx = 3\n\nx = 4\n", "unchanged");
        let mut all = call;
        all["replace_all"] = json!(true);
        let out = edit.call_standalone(all).await;
        assert_eq!(out, ToolOutput::ok("Replaced 3 occurrences in `f.rs`"));
        assert_eq!(content(&dir), "z = 1\ny = 2\nz = 3\n\nz = 4\n");
    }

    #[tokio::test]
    async fn no_match_and_bad_input_are_errors() {
        let (dir, edit) = setup("hello\n");
        let out = edit
            .call_standalone(json!({"path": "f.rs", "old_str": "Hello", "new_str": "x"}))
            .await;
        assert!(out.is_error && out.content.contains("0 matches"), "{out:?}");
        let out = edit
            .call_standalone(json!({"path": "f.rs", "old_str": "", "new_str": "x"}))
            .await;
        assert!(out.is_error && out.content.contains("old_str is empty"));
        let out = edit
            .call_standalone(json!({"path": "nope.rs", "old_str": "a", "new_str": "b"}))
            .await;
        assert!(
            out.is_error && out.content.contains("no such file"),
            "{out:?}"
        );
        std::fs::write(dir.path().join("bin"), b"\xff\xfe a").unwrap();
        let out = edit
            .call_standalone(json!({"path": "bin", "old_str": "a", "new_str": "b"}))
            .await;
        assert!(out.is_error && out.content.contains("not valid UTF-8"));
    }

    #[tokio::test]
    async fn escapes_and_read_only_files_are_refused() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::create_dir(outer.path().join("ro")).unwrap();
        std::fs::write(outer.path().join("victim"), "a").unwrap();
        std::fs::write(outer.path().join("ro/f"), "a").unwrap();
        std::os::unix::fs::symlink(outer.path().join("victim"), ws.join("link")).unwrap();
        let edit = tool(&ws, "str_replace", "", &["read_only_paths: [../ro]"]);
        for path in ["../victim", "link"] {
            let out = edit
                .call_standalone(json!({"path": path, "old_str": "a", "new_str": "b"}))
                .await;
            assert!(out.content.contains("outside the workspace"), "{out:?}");
        }
        let out = edit
            .call_standalone(json!({"path": "../ro/f", "old_str": "a", "new_str": "b"}))
            .await;
        assert!(out.is_error && out.content.contains("read-only"), "{out:?}");
        assert_eq!(
            std::fs::read_to_string(outer.path().join("victim")).unwrap(),
            "a"
        );
        assert_eq!(
            std::fs::read_to_string(outer.path().join("ro/f")).unwrap(),
            "a"
        );
    }
}

//! What a file tool's call would change, as a unified diff for the approval dialog. Read
//! through the workspace like the tool itself, so a preview shows nothing the tool could
//! not read.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use super::Workspace;
use super::common::io_error;
use super::files::open_read;
use crate::protocol::Preview;

/// A file larger than this is not read for a preview.
const MAX_PREVIEW_BYTES: u64 = 1024 * 1024;
/// The diff is cut after this many lines.
const MAX_DIFF_LINES: usize = 400;
/// Diffing gives up on finding the smallest diff after this long (hostile inputs).
const DIFF_DEADLINE: Duration = Duration::from_millis(200);

/// The workspace file a write to `path` lands on, as the workspace shows it (links and
/// `..` resolved); `None` outside the workspace.
pub(super) fn written(workspace: &Workspace, path: &str) -> Option<String> {
    let target = workspace.resolve_for_write(path).ok()?;
    Some(workspace.display(&target))
}

/// The text of `target` now (`path` as the model wrote it, for messages): empty when it
/// does not exist; an error when it is too large or not text.
pub(super) fn current_text(target: &Path, path: &str) -> Result<String, String> {
    if !target.exists() {
        return Ok(String::new());
    }
    let mut bytes = Vec::new();
    open_read(target, path)
        .map_err(|e| e.message("read", path))?
        .take(MAX_PREVIEW_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error("read", path, &e))?;
    if bytes.len() as u64 > MAX_PREVIEW_BYTES {
        return Err(format!("`{path}` is too large to preview"));
    }
    String::from_utf8(bytes).map_err(|_| format!("`{path}` is not text"))
}

/// The change from `old` to `new` of the workspace file `target`, as a bounded diff.
pub(super) fn diff(workspace: &Workspace, target: &Path, old: &str, new: &str) -> Preview {
    unified_diff(&workspace.display(target), old, new)
}

/// The change from `old` to `new` of the file shown as `shown`, as a bounded diff.
pub fn unified_diff(shown: &str, old: &str, new: &str) -> Preview {
    let text = similar::TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string();
    let total = text.lines().count();
    let mut diff: String = text
        .lines()
        .take(MAX_DIFF_LINES)
        .flat_map(|line| [line, "\n"])
        .collect();
    if total > MAX_DIFF_LINES {
        diff.push_str(&format!("… {} more lines\n", total - MAX_DIFF_LINES));
    }
    if diff.is_empty() {
        diff = String::from("(no change)\n");
    }
    Preview::Diff {
        path: shown.to_string(),
        diff,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::protocol::Preview;
    use crate::tools::sandbox::testing::tool;

    fn diff_of(preview: Option<Preview>) -> String {
        match preview {
            Some(Preview::Diff { diff, .. }) => diff,
            other => panic!("not a diff: {other:?}"),
        }
    }

    #[tokio::test]
    async fn write_and_edit_previews_are_diffs_of_the_workspace_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let write = tool(dir.path(), "write_file", "", &[]);
        let diff = diff_of(
            write
                .preview(&json!({"path": "a.txt", "content": "one\nthree\n"}))
                .await,
        );
        assert!(
            diff.contains("--- a/a.txt") && diff.contains("-two") && diff.contains("+three"),
            "{diff}"
        );
        let created = diff_of(
            write
                .preview(&json!({"path": "new.txt", "content": "x\n"}))
                .await,
        );
        assert!(created.contains("+x"), "{created}");
        let edit = tool(dir.path(), "str_replace", "", &[]);
        let diff = diff_of(
            edit.preview(&json!({"path": "a.txt", "old_str": "two", "new_str": "2"}))
                .await,
        );
        assert!(diff.contains("-two") && diff.contains("+2"), "{diff}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one\ntwo\n",
            "a preview changes nothing"
        );
    }

    #[test]
    fn the_subject_of_a_write_is_the_file_it_lands_on() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join("vendor")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("vendor"), dir.path().join("src/ext")).unwrap();
        let write = tool(dir.path(), "write_file", "", &[]);
        let subject = |path: &str| write.subject(&json!({"path": path, "content": ""}));
        assert_eq!(subject("src/main.rs").as_deref(), Some("src/main.rs"));
        assert_eq!(subject("./src/../AGENTS.md").as_deref(), Some("AGENTS.md"));
        assert_eq!(
            subject("src/ext/lib.rs").as_deref(),
            Some("vendor/lib.rs"),
            "a link out of src is not src"
        );
        assert_eq!(subject("../outside"), None);
    }

    #[tokio::test]
    async fn a_preview_reads_nothing_the_tool_may_not() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        std::fs::create_dir(&workspace).unwrap();
        std::fs::write(dir.path().join("outside.txt"), "private\n").unwrap();
        std::fs::write(workspace.join(".env"), "KEY=secret\n").unwrap();
        let write = tool(&workspace, "write_file", "", &[]);
        for path in ["../outside.txt", ".env", "/etc/passwd"] {
            let preview = write.preview(&json!({"path": path, "content": "x"})).await;
            assert_eq!(preview, None, "{path}");
        }
        let edit = tool(&workspace, "str_replace", "", &[]);
        let preview = edit
            .preview(&json!({"path": ".env", "old_str": "KEY", "new_str": "K"}))
            .await;
        assert_eq!(preview, None);
    }
}

//! `ls(path)`: the entries of one workspace directory.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::Workspace;
use super::common::{JobTool, io_error, positive_setting};
use crate::tools::Tool;
use crate::tools::registry::{ToolBuildContext, ToolFactory};

/// The registry entry for `antler.sandbox:ls`.
pub const LS: ToolFactory = ToolFactory {
    id: "antler.sandbox:ls",
    tool_name: "ls",
    settings: &["max_results"],
    build,
};

/// Lists at most this many entries unless `max_results` says otherwise.
const DEFAULT_MAX_RESULTS: usize = 500;

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    path: Option<String>,
}

fn build(ctx: &ToolBuildContext<'_>) -> Result<Arc<dyn Tool>, String> {
    let max_results = positive_setting(ctx, "max_results", DEFAULT_MAX_RESULTS)?;
    JobTool::reading(
        ctx,
        &LS,
        "List the entries of a directory in the workspace, one per line; directories end \
         with `/`."
            .to_string(),
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Directory relative to the workspace root (default: the root)."
                }
            }
        }),
        max_results,
        entries,
    )
}

/// At most `max` entries of the directory the call names, one per line.
fn entries(workspace: &Workspace, args: &Args, max: usize) -> Result<String, String> {
    let mut names = list(workspace, args.path.as_deref().unwrap_or("."))?;
    let total = names.len();
    if total == 0 {
        return Ok(String::from("(empty directory)"));
    }
    names.truncate(max);
    let mut out = names.join("\n");
    if total > max {
        out.push_str(&format!("\n... ({} more entries not shown)", total - max));
    }
    Ok(out)
}

/// The sorted entry names of the directory `path`.
fn list(workspace: &Workspace, path: &str) -> Result<Vec<String>, String> {
    let dir = workspace
        .resolve_existing(path)
        .map_err(|e| e.to_string())?;
    let read = std::fs::read_dir(&dir).map_err(|e| io_error("list", path, &e))?;
    let mut names = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| io_error("list", path, &e))?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            name.push('/');
        }
        if let Some(hidden) = workspace.hidden(&entry.path()) {
            name.push_str(&format!("  ({})", hidden.label()));
        }
        names.push(name);
    }
    names.sort();
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::CallStandalone;
    use crate::tools::ToolOutput;
    use crate::tools::sandbox::testing::tool;

    #[tokio::test]
    async fn lists_sorted_entries_and_caps_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("b_dir")).unwrap();
        std::fs::write(dir.path().join("a.txt"), "").unwrap();
        std::fs::write(dir.path().join("c.txt"), "").unwrap();
        let out = tool(dir.path(), "ls", "", &[])
            .call_standalone(json!({}))
            .await;
        assert_eq!(out, ToolOutput::ok("a.txt\nb_dir/\nc.txt"));
        let out = tool(dir.path(), "ls", ", max_results: 1", &[])
            .call_standalone(json!({"path": "."}))
            .await;
        assert_eq!(out.content, "a.txt\n... (2 more entries not shown)");
        std::fs::create_dir(dir.path().join("empty")).unwrap();
        let out = tool(dir.path(), "ls", "", &[])
            .call_standalone(json!({"path": "empty"}))
            .await;
        assert_eq!(out, ToolOutput::ok("(empty directory)"));
    }

    #[tokio::test]
    async fn secret_files_are_marked_and_cannot_be_listed_into() {
        let dir = crate::tools::sandbox::testing::tree(&[
            (".env", b"KEY=sk-1"),
            ("keys/id_rsa", b"k"),
            ("a.txt", b""),
        ]);
        let out = tool(dir.path(), "ls", "", &[])
            .call_standalone(json!({}))
            .await;
        assert_eq!(out, ToolOutput::ok(".env  (hidden: secret)\na.txt\nkeys/"));
        let out = tool(dir.path(), "ls", "", &[])
            .call_standalone(json!({"path": "keys"}))
            .await;
        assert_eq!(out, ToolOutput::ok("id_rsa  (hidden: secret)"));
    }

    #[tokio::test]
    async fn refusals_are_tool_errors() {
        let dir = tempfile::tempdir().unwrap();
        let ls = tool(dir.path(), "ls", "", &[]);
        let out = ls.call_standalone(json!({"path": ".."})).await;
        assert!(
            out.is_error && out.content.contains("outside the workspace"),
            "{out:?}"
        );
        let out = ls.call_standalone(json!({"path": 3})).await;
        assert!(
            out.is_error && out.content.contains("invalid arguments"),
            "{out:?}"
        );
        let out = ls.call_standalone(json!({"path": "nope"})).await;
        assert!(
            out.is_error && out.content.contains("no such file"),
            "{out:?}"
        );
    }
}

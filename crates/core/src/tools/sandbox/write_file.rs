//! `write_file(path, content)`: creates or overwrites a file inside the workspace, creating
//! its parent directories.

use std::io::Write;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::Workspace;
use super::common::{JobTool, io_error};
use super::files::open_write;
use super::preview;
use crate::protocol::Preview;
use crate::tools::Tool;
use crate::tools::registry::{ToolBuildContext, ToolFactory};

/// The registry entry for `antler.sandbox:write_file`.
pub const WRITE_FILE: ToolFactory = ToolFactory {
    id: "antler.sandbox:write_file",
    tool_name: "write_file",
    settings: &[],
    build,
};

#[derive(Deserialize)]
struct Args {
    path: String,
    content: String,
}

fn build(ctx: &ToolBuildContext<'_>) -> Result<Arc<dyn Tool>, String> {
    JobTool::writing(
        ctx,
        &WRITE_FILE,
        "Write text to a file in the workspace, replacing what it held; missing \
         parent directories are created. To change part of a file, prefer \
         str_replace."
            .to_string(),
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "The file, relative to the workspace root."
                },
                "content": {
                    "type": "string",
                    "description": "The whole new content of the file."
                }
            },
            "required": ["path", "content"]
        }),
        |workspace, args, _| write(workspace, args),
        preview,
        |workspace, args| preview::written(workspace, &args.path),
    )
}

fn preview(workspace: &Workspace, args: &Args) -> Result<Preview, String> {
    let target = workspace
        .resolve_for_write(&args.path)
        .map_err(|e| e.to_string())?;
    let old = preview::current_text(&target, &args.path)?;
    Ok(preview::diff(workspace, &target, &old, &args.content))
}

fn write(workspace: &Workspace, args: &Args) -> Result<String, String> {
    let path = args.path.as_str();
    let target = workspace
        .resolve_for_write(path)
        .map_err(|e| e.to_string())?;
    let existed = target.exists();
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| io_error("create the directory of", path, &e))?;
    }
    open_write(&target, path)
        .map_err(|e| e.message("write", path))?
        .write_all(args.content.as_bytes())
        .map_err(|e| io_error("write", path, &e))?;
    let what = if existed { "overwrote" } else { "created" };
    Ok(format!(
        "Wrote {} bytes to `{}` ({what} the file)",
        args.content.len(),
        workspace.display(&target)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::CallStandalone;
    use crate::tools::ToolOutput;
    use crate::tools::sandbox::testing::tool;

    #[tokio::test]
    async fn writes_files_and_creates_parents() {
        let dir = tempfile::tempdir().unwrap();
        let write = tool(dir.path(), "write_file", "", &[]);
        let out = write
            .call_standalone(json!({"path": "a/b/c.txt", "content": "héllo"}))
            .await;
        assert_eq!(
            out,
            ToolOutput::ok("Wrote 6 bytes to `a/b/c.txt` (created the file)")
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
            "héllo"
        );
        let out = write
            .call_standalone(json!({"path": "a/b/c.txt", "content": ""}))
            .await;
        assert_eq!(
            out,
            ToolOutput::ok("Wrote 0 bytes to `a/b/c.txt` (overwrote the file)")
        );
        let out = write
            .call_standalone(json!({"path": "a", "content": "x"}))
            .await;
        assert!(
            out.is_error && out.content.contains("is a directory"),
            "{out:?}"
        );
    }

    #[tokio::test]
    async fn escapes_and_read_only_roots_are_refused() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(outer.path().join("skills")).unwrap();
        std::fs::write(outer.path().join("victim"), "v").unwrap();
        std::os::unix::fs::symlink(outer.path().join("victim"), ws.join("link")).unwrap();
        std::os::unix::fs::symlink(outer.path(), ws.join("dirlink")).unwrap();
        std::os::unix::fs::symlink(outer.path().join("nowhere"), ws.join("dangling")).unwrap();
        let write = tool(&ws, "write_file", "", &["read_only_paths: [../skills]"]);
        let abs = outer.path().join("new").display().to_string();
        for path in [
            "../victim",
            "../new",
            "sub/../../new",
            "missing/../../new",
            abs.as_str(),
            "link",
            "dirlink/victim",
            "dirlink/new/deeper",
        ] {
            let out = write
                .call_standalone(json!({"path": path, "content": "x"}))
                .await;
            assert!(
                out.is_error && out.content.contains("outside the workspace"),
                "{path}: {out:?}"
            );
        }
        let out = write
            .call_standalone(json!({"path": "../skills/new.md", "content": "x"}))
            .await;
        assert!(out.is_error && out.content.contains("read-only"), "{out:?}");
        let out = write
            .call_standalone(json!({"path": "dangling", "content": "x"}))
            .await;
        assert!(
            out.is_error && out.content.contains("missing target"),
            "{out:?}"
        );
        assert_eq!(
            std::fs::read_to_string(outer.path().join("victim")).unwrap(),
            "v"
        );
        assert!(!outer.path().join("new").exists());
        assert!(!outer.path().join("skills/new.md").exists());
        assert!(!outer.path().join("nowhere").exists());
    }

    #[tokio::test]
    async fn symlinks_inside_the_workspace_are_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("real.txt"), "old").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real.txt"), dir.path().join("alias")).unwrap();
        let write = tool(dir.path(), "write_file", "", &[]);
        let out = write
            .call_standalone(json!({"path": "alias", "content": "new"}))
            .await;
        assert_eq!(
            out,
            ToolOutput::ok("Wrote 3 bytes to `real.txt` (overwrote the file)")
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("real.txt")).unwrap(),
            "new"
        );
    }
}

//! `ls(path)`: the entries of one workspace directory.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::Workspace;
use crate::tools::registry::{ToolBuildContext, ToolFactory};
use crate::tools::{Tool, ToolFuture, ToolInfo, ToolOutput};

/// The registry entry for `antler.sandbox:ls`.
pub const LS: ToolFactory = ToolFactory {
    id: "antler.sandbox:ls",
    tool_name: "ls",
    build,
};

/// Lists at most this many entries unless `max_results` says otherwise.
const DEFAULT_MAX_RESULTS: usize = 500;

struct Ls {
    info: ToolInfo,
    workspace: Workspace,
    max_results: usize,
}

#[derive(Deserialize)]
struct Args {
    #[serde(default)]
    path: Option<String>,
}

fn build(ctx: &ToolBuildContext<'_>) -> Result<Arc<dyn Tool>, String> {
    let max_results = match ctx.entry.extra.get("max_results") {
        None => DEFAULT_MAX_RESULTS,
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("`max_results` must be a positive integer, got {v}"))?,
    };
    let workspace = Workspace::from_config(&ctx.app.sandbox, ctx.cwd)
        .map_err(|e| format!("cannot open the workspace: {e}"))?;
    let info = ToolInfo {
        name: LS.tool_name.to_string(),
        description: "List the entries of a directory in the workspace, one per line; \
                      directories end with `/`."
            .to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Directory relative to the workspace root (default: the root)."
                }
            }
        }),
        source: ctx.source.clone(),
        metadata: Map::new(),
    };
    Ok(Arc::new(Ls {
        info,
        workspace,
        max_results,
    }))
}

impl Tool for Ls {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn call(&self, arguments: Value) -> ToolFuture<'_> {
        Box::pin(async move {
            let args: Args = match serde_json::from_value(arguments) {
                Ok(a) => a,
                Err(e) => return ToolOutput::error(format!("Error: invalid arguments: {e}")),
            };
            let path = args.path.unwrap_or_else(|| ".".to_string());
            let dir = match self.workspace.resolve_existing(&path) {
                Ok(d) => d,
                Err(e) => return ToolOutput::error(e.to_string()),
            };
            let mut read = match tokio::fs::read_dir(&dir).await {
                Ok(r) => r,
                Err(e) => return ToolOutput::error(format!("Error: cannot list `{path}`: {e}")),
            };
            let mut names = Vec::new();
            loop {
                let entry = match read.next_entry().await {
                    Ok(Some(entry)) => entry,
                    Ok(None) => break,
                    Err(e) => {
                        return ToolOutput::error(format!("Error: cannot list `{path}`: {e}"));
                    }
                };
                let mut name = entry.file_name().to_string_lossy().into_owned();
                if entry.file_type().await.is_ok_and(|t| t.is_dir()) {
                    name.push('/');
                }
                names.push(name);
            }
            names.sort();
            let total = names.len();
            names.truncate(self.max_results);
            let mut out = names.join("\n");
            if total > self.max_results {
                out.push_str(&format!(
                    "\n... ({} more entries not shown)",
                    total - self.max_results
                ));
            }
            if total == 0 {
                out = String::from("(empty directory)");
            }
            ToolOutput::ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::parse_app_config;
    use crate::tools::build_configured_tools;

    fn ls_in(dir: &Path, extra: &str) -> Arc<dyn Tool> {
        let yaml = format!("tools:\n  - {{name: ls, use: antler.sandbox:ls{extra}}}\n");
        let cfg = parse_app_config(&yaml, Path::new("c.yaml"), &|_| None)
            .unwrap()
            .value;
        build_configured_tools(&cfg, dir, None)
            .unwrap()
            .tools
            .remove(0)
    }

    #[tokio::test]
    async fn lists_sorted_entries_and_caps_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("b_dir")).unwrap();
        std::fs::write(dir.path().join("a.txt"), "").unwrap();
        std::fs::write(dir.path().join("c.txt"), "").unwrap();
        let out = ls_in(dir.path(), "").call(json!({})).await;
        assert_eq!(out, ToolOutput::ok("a.txt\nb_dir/\nc.txt"));
        let out = ls_in(dir.path(), ", max_results: 1")
            .call(json!({"path": "."}))
            .await;
        assert_eq!(out.content, "a.txt\n... (2 more entries not shown)");
    }

    #[tokio::test]
    async fn refusals_are_tool_errors() {
        let dir = tempfile::tempdir().unwrap();
        let ls = ls_in(dir.path(), "");
        let out = ls.call(json!({"path": ".."})).await;
        assert!(
            out.is_error && out.content.contains("outside the workspace"),
            "{out:?}"
        );
        let out = ls.call(json!({"path": 3})).await;
        assert!(
            out.is_error && out.content.contains("invalid arguments"),
            "{out:?}"
        );
        let out = ls.call(json!({"path": "nope"})).await;
        assert!(
            out.is_error && out.content.contains("no such file"),
            "{out:?}"
        );
    }
}

//! `glob(pattern, path?)`: files whose path matches a glob, found with ripgrep's walker
//! (`.gitignore` respected).

use std::path::Path;
use std::sync::Arc;

use globset::GlobBuilder;
use serde::Deserialize;
use serde_json::json;

use super::Workspace;
use super::common::{JobTool, positive_setting};
use super::walk::{Pruned, walk};
use super::workspace::HiddenCount;
use crate::tools::Tool;
use crate::tools::registry::{ToolBuildContext, ToolFactory};

/// The registry entry for `antler.sandbox:glob`.
pub const GLOB: ToolFactory = ToolFactory {
    id: "antler.sandbox:glob",
    tool_name: "glob",
    settings: &["max_results"],
    build,
};

/// Returns at most this many paths unless `max_results` says otherwise (DeerFlow's 200).
const DEFAULT_MAX_RESULTS: usize = 200;

#[derive(Deserialize)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

fn build(ctx: &ToolBuildContext<'_>) -> Result<Arc<dyn Tool>, String> {
    let max_results = positive_setting(ctx, "max_results", DEFAULT_MAX_RESULTS)?;
    JobTool::reading(
        ctx,
        &GLOB,
        format!(
            "Find files in the workspace whose path matches a glob pattern, e.g. `**/*.rs` \
             or `src/*.toml` (`*` stays within one directory, `**` crosses directories). \
             Files ignored by .gitignore are skipped. Paths come sorted, relative to the \
             workspace root, at most {max_results} of them."
        ),
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "The glob, matched against paths relative to `path`."
                },
                "path": {
                    "type": "string",
                    "description": "Directory to search under, relative to the workspace root (default: the root)."
                }
            },
            "required": ["pattern"]
        }),
        max_results,
        search,
    )
}

fn search(workspace: &Workspace, args: &Args, max: usize) -> Result<String, String> {
    let path = args.path.as_deref().unwrap_or(".");
    let pattern = args.pattern.as_str();
    if Path::new(pattern).is_absolute() {
        return Err(format!(
            "Error: the pattern `{pattern}` is absolute; patterns are matched against paths \
             relative to `path`, e.g. `**/*.rs`"
        ));
    }
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("Error: invalid glob pattern `{pattern}`: {e}"))?
        .compile_matcher();
    let base = workspace
        .resolve_existing(path)
        .map_err(|e| e.to_string())?;
    if !base.is_dir() {
        return Err(format!(
            "Error: `{path}` is not a directory; give the directory to search under"
        ));
    }
    let mut found = Vec::new();
    let mut truncated = false;
    let mut hidden = HiddenCount::default();
    let pruned = Arc::new(Pruned::default());
    for entry in walk(&base, workspace, &pruned).flatten() {
        if entry.file_type().is_none_or(|t| t.is_dir()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(&base) else {
            continue;
        };
        if matcher.is_match(relative) {
            if let Some(why) = workspace.hidden(entry.path()) {
                hidden.add(why);
                continue;
            }
            if found.len() == max {
                truncated = true;
                break;
            }
            found.push(workspace.display(entry.path()));
        }
    }
    pruned.add_to(&mut hidden);
    let mut out = if found.is_empty() {
        format!("No files match `{pattern}` under `{path}`")
    } else {
        found.join("\n")
    };
    if truncated {
        out.push_str(&format!(
            "\n... (results truncated to {max} matches; narrow the pattern or the path)"
        ));
    }
    out.push_str(&hidden.note());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::CallStandalone;
    use crate::tools::ToolOutput;
    use crate::tools::sandbox::testing::tool;

    fn tree() -> tempfile::TempDir {
        crate::tools::sandbox::testing::tree(&[
            ("src/main.rs", b""),
            ("src/lib.rs", b""),
            ("src/sub/deep.rs", b""),
            ("README.md", b""),
            ("target/debug/out.rs", b""),
            (".github/ci.rs", b""),
            (".git/hooks.rs", b""),
            ("notes.log", b""),
            (".gitignore", b"target/\n*.log\n"),
        ])
    }

    #[tokio::test]
    async fn finds_sorted_files_respecting_gitignore() {
        let dir = tree();
        let glob = tool(dir.path(), "glob", "", &[]);
        let out = glob.call_standalone(json!({"pattern": "**/*.rs"})).await;
        assert_eq!(
            out,
            ToolOutput::ok(".github/ci.rs\nsrc/lib.rs\nsrc/main.rs\nsrc/sub/deep.rs")
        );
        let out = glob
            .call_standalone(json!({"pattern": "*.rs", "path": "src"}))
            .await;
        assert_eq!(out, ToolOutput::ok("src/lib.rs\nsrc/main.rs"));
        let out = glob.call_standalone(json!({"pattern": "*.log"})).await;
        assert_eq!(out, ToolOutput::ok("No files match `*.log` under `.`"));
    }

    #[tokio::test]
    async fn secret_files_are_left_out_and_counted() {
        let dir = crate::tools::sandbox::testing::tree(&[
            (".env", b"K=1"),
            (".env.local", b"K=1"),
            ("certs/site.pem", b"-"),
            ("certs/site.crt", b"-"),
        ]);
        let glob = tool(dir.path(), "glob", "", &[]);
        let out = glob.call_standalone(json!({"pattern": "**/*"})).await;
        assert_eq!(
            out,
            ToolOutput::ok("certs/site.crt\n(3 files hidden: secret)")
        );
    }

    #[tokio::test]
    async fn says_when_results_are_truncated() {
        let dir = tree();
        let glob = tool(dir.path(), "glob", ", max_results: 2", &[]);
        let out = glob.call_standalone(json!({"pattern": "**/*.rs"})).await;
        assert_eq!(
            out.content,
            ".github/ci.rs\nsrc/lib.rs\n... (results truncated to 2 matches; narrow the \
             pattern or the path)"
        );
    }

    #[tokio::test]
    async fn refusals_and_bad_patterns() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(ws.join("f.txt"), "").unwrap();
        std::os::unix::fs::symlink(outer.path(), ws.join("up")).unwrap();
        let glob = tool(&ws, "glob", "", &[]);
        for path in ["..", "up", "/"] {
            let out = glob
                .call_standalone(json!({"pattern": "*", "path": path}))
                .await;
            assert!(out.content.contains("outside the workspace"), "{out:?}");
        }
        let out = glob
            .call_standalone(json!({"pattern": "a[", "path": "."}))
            .await;
        assert!(
            out.is_error && out.content.contains("invalid glob"),
            "{out:?}"
        );
        let out = glob.call_standalone(json!({"pattern": "/etc/*"})).await;
        assert!(out.is_error && out.content.contains("absolute"), "{out:?}");
        let out = glob
            .call_standalone(json!({"pattern": "*", "path": "f.txt"}))
            .await;
        assert!(
            out.is_error && out.content.contains("not a directory"),
            "{out:?}"
        );
        let out = glob.call_standalone(json!({"pattern": "**/*"})).await;
        assert_eq!(
            out,
            ToolOutput::ok("f.txt\nup"),
            "the link is listed, not followed"
        );
    }
}

//! `grep(pattern, path?, glob?)`: matching lines under a directory, searched with
//! ripgrep's library crates (`.gitignore` respected, binary files skipped).

use std::path::Path;
use std::sync::Arc;

use globset::{GlobBuilder, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde::Deserialize;
use serde_json::json;

use super::Workspace;
use super::common::{JobTool, io_error, positive_setting};
use super::files::{not_regular, open_read};
use super::walk::{Pruned, walk};
use super::workspace::HiddenCount;
use crate::tools::Tool;
use crate::tools::registry::{ToolBuildContext, ToolFactory};

/// The registry entry for `antler.sandbox:grep`.
pub const GREP: ToolFactory = ToolFactory {
    id: "antler.sandbox:grep",
    tool_name: "grep",
    settings: &["max_results"],
    build,
};

/// Returns at most this many lines unless `max_results` says otherwise (DeerFlow's 100).
const DEFAULT_MAX_RESULTS: usize = 100;
/// Matching lines longer than this many characters are cut.
const MAX_LINE_CHARS: usize = 500;

#[derive(Deserialize)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    literal: bool,
    #[serde(default)]
    case_sensitive: bool,
}

fn build(ctx: &ToolBuildContext<'_>) -> Result<Arc<dyn Tool>, String> {
    let max_results = positive_setting(ctx, "max_results", DEFAULT_MAX_RESULTS)?;
    JobTool::reading(
        ctx,
        &GREP,
        format!(
            "Search the contents of files in the workspace for a regular expression (Rust \
             regex syntax). Prints `path:line:text` for each matching line, at most \
             {max_results} lines. Files ignored by .gitignore and binary files are skipped."
        ),
        json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "The regular expression (or plain text with literal: true)."
                },
                "path": {
                    "type": "string",
                    "description": "File or directory to search, relative to the workspace root (default: the root)."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files matching this glob, e.g. `*.rs` (by file name) or `src/**/*.rs` (by path under `path`)."
                },
                "literal": {
                    "type": "boolean",
                    "description": "Treat the pattern as plain text (default false)."
                },
                "case_sensitive": {
                    "type": "boolean",
                    "description": "Match case exactly (default false)."
                }
            },
            "required": ["pattern"]
        }),
        max_results,
        search,
    )
}

/// Which files a `glob` argument selects: by file name when it has no `/`, as ripgrep's
/// `-g` does, else by the path under the searched directory.
struct FileFilter {
    matcher: GlobMatcher,
    by_name: bool,
}

impl FileFilter {
    fn new(glob: &str) -> Result<Self, String> {
        let matcher = GlobBuilder::new(glob)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("Error: invalid glob `{glob}`: {e}"))?
            .compile_matcher();
        Ok(Self {
            matcher,
            by_name: !glob.contains('/'),
        })
    }

    fn selects(&self, relative: &Path) -> bool {
        if self.by_name {
            relative
                .file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(relative)
        }
    }
}

fn search(workspace: &Workspace, args: &Args, max: usize) -> Result<String, String> {
    let path = args.path.as_deref().unwrap_or(".");
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(!args.case_sensitive)
        .fixed_strings(args.literal)
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| format!("Error: invalid regex `{}`: {e}", args.pattern))?;
    let filter = args.glob.as_deref().map(FileFilter::new).transpose()?;
    let base = workspace
        .resolve_existing(path)
        .map_err(|e| e.to_string())?;
    let meta = std::fs::metadata(&base).map_err(|e| io_error("search", path, &e))?;
    if !meta.is_dir() && !meta.is_file() {
        return Err(not_regular(path, &meta));
    }
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    // Filtering by glob applies under a directory; a single file is searched as asked.
    let filter = filter.filter(|_| base.is_dir());
    let mut lines = Vec::new();
    let mut truncated = false;
    let mut unreadable = 0;
    let mut hidden = HiddenCount::default();
    let pruned = Arc::new(Pruned::default());
    for entry in walk(&base, workspace, &pruned).flatten() {
        if entry.file_type().is_none_or(|t| !t.is_file()) {
            continue;
        }
        let relative = entry.path().strip_prefix(&base).unwrap_or(entry.path());
        if filter.as_ref().is_some_and(|f| !f.selects(relative)) {
            continue;
        }
        if let Some(why) = workspace.hidden(entry.path()) {
            hidden.add(why);
            continue;
        }
        let shown = workspace.display(entry.path());
        let sink = Lossy(|number, line: &str| {
            if lines.len() == max {
                truncated = true;
                return Ok(false);
            }
            lines.push(format!("{shown}:{number}:{}", cut(line)));
            Ok(true)
        });
        // Opened by us, not by the searcher: a file swapped for a pipe must not block.
        let searched = open_read(entry.path(), &shown)
            .ok()
            .map(|file| searcher.search_file(&matcher, &file, sink));
        if !matches!(searched, Some(Ok(()))) {
            unreadable += 1;
        }
        if truncated {
            break;
        }
    }
    let mut out = if lines.is_empty() {
        format!("No matches for `{}` under `{path}`", args.pattern)
    } else {
        lines.join("\n")
    };
    if truncated {
        out.push_str(&format!(
            "\n... (results truncated to {max} matches; narrow the pattern, path or glob)"
        ));
    }
    if unreadable > 0 {
        out.push_str(&format!("\n({unreadable} files could not be read)"));
    }
    pruned.add_to(&mut hidden);
    out.push_str(&hidden.note());
    Ok(out)
}

/// A matching line without its line break, cut after [`MAX_LINE_CHARS`] characters.
fn cut(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}… [line cut]", &line[..at]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::CallStandalone;
    use crate::tools::ToolOutput;
    use crate::tools::sandbox::testing::tool;

    fn tree() -> tempfile::TempDir {
        crate::tools::sandbox::testing::tree(&[
            ("src/a.rs", b"fn main() {}\nlet TODO = 1;\n"),
            ("src/b.txt", b"todo: write docs\n"),
            ("ignored/c.rs", b"TODO hidden by .gitignore\n"),
            ("bin.dat", b"TODO\x00\x01"),
            ("long.txt", &[b'x'; 600]),
            (".gitignore", b"ignored/\n"),
        ])
    }

    #[tokio::test]
    async fn finds_lines_with_paths_and_numbers() {
        let dir = tree();
        let grep = tool(dir.path(), "grep", "", &[]);
        let out = grep.call_standalone(json!({"pattern": "todo"})).await;
        assert_eq!(
            out,
            ToolOutput::ok("src/a.rs:2:let TODO = 1;\nsrc/b.txt:1:todo: write docs")
        );
        let out = grep
            .call_standalone(json!({"pattern": "TODO", "case_sensitive": true, "glob": "*.rs"}))
            .await;
        assert_eq!(out, ToolOutput::ok("src/a.rs:2:let TODO = 1;"));
        let out = grep
            .call_standalone(json!({"pattern": "main()", "literal": true, "path": "src/a.rs"}))
            .await;
        assert_eq!(out, ToolOutput::ok("src/a.rs:1:fn main() {}"));
        let out = grep
            .call_standalone(json!({"pattern": "x+", "glob": "long.*"}))
            .await;
        assert_eq!(
            out.content,
            format!("long.txt:1:{}… [line cut]", "x".repeat(MAX_LINE_CHARS))
        );
        let out = grep
            .call_standalone(json!({"pattern": "nothing here"}))
            .await;
        assert_eq!(
            out,
            ToolOutput::ok("No matches for `nothing here` under `.`")
        );
    }

    #[tokio::test]
    async fn truncates_and_rejects_bad_patterns() {
        let dir = tree();
        let grep = tool(dir.path(), "grep", ", max_results: 1", &[]);
        let out = grep.call_standalone(json!({"pattern": "todo"})).await;
        assert_eq!(
            out.content,
            "src/a.rs:2:let TODO = 1;\n... (results truncated to 1 matches; narrow the \
             pattern, path or glob)"
        );
        let out = grep.call_standalone(json!({"pattern": "(unclosed"})).await;
        assert!(
            out.is_error && out.content.contains("invalid regex"),
            "{out:?}"
        );
        let out = grep
            .call_standalone(json!({"pattern": "a", "glob": "[z"}))
            .await;
        assert!(
            out.is_error && out.content.contains("invalid glob"),
            "{out:?}"
        );
    }

    #[tokio::test]
    async fn secret_files_are_skipped_and_counted_and_pipes_refused() {
        let dir = crate::tools::sandbox::testing::tree(&[
            (".env", b"API_KEY=sk-live-1\n"),
            ("conf/.aws/credentials", b"API_KEY=x\n"),
            ("src/main.rs", b"let API_KEY = env();\n"),
        ]);
        let grep = tool(dir.path(), "grep", "", &[]);
        let out = grep.call_standalone(json!({"pattern": "API_KEY"})).await;
        assert_eq!(
            out,
            ToolOutput::ok("src/main.rs:1:let API_KEY = env();\n(2 files hidden: secret)")
        );
        let out = grep
            .call_standalone(json!({"pattern": "KEY", "path": ".env"}))
            .await;
        assert!(
            out.is_error && out.content.contains("secret file"),
            "{out:?}"
        );
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        let out = grep
            .call_standalone(json!({"pattern": "x", "path": "pipe"}))
            .await;
        assert!(
            out.is_error && out.content.contains("not a regular file"),
            "{out:?}"
        );
        let out = grep.call_standalone(json!({"pattern": "never"})).await;
        assert!(
            out.content.starts_with("No matches"),
            "the pipe in the walk never blocks"
        );
    }

    #[tokio::test]
    async fn stays_inside_the_workspace() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(outer.path().join("secret"), "password\n").unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret"), ws.join("link")).unwrap();
        let grep = tool(&ws, "grep", "", &[]);
        for path in ["..", "link", "../secret"] {
            let out = grep
                .call_standalone(json!({"pattern": "password", "path": path}))
                .await;
            assert!(out.content.contains("outside the workspace"), "{out:?}");
        }
        let out = grep.call_standalone(json!({"pattern": "password"})).await;
        assert_eq!(
            out,
            ToolOutput::ok("No matches for `password` under `.`"),
            "symlinks are not followed"
        );
    }
}

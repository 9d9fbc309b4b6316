//! Workspace files a person attaches to a message in the chat (`@`): listed as `glob`
//! walks (ignore files respected, secret and private folders not entered, secret files
//! left out) and read as `read_file` reads (inside the workspace, regular files, text
//! only, capped). These are blocking filesystem calls: run them off the async runtime.

use std::io::Read;
use std::sync::Arc;

use super::files::open_read;
use super::walk::{Pruned, walk};
use super::workspace::Workspace;

/// How many bytes of a file are scanned for NUL to tell binary files apart.
const BINARY_PROBE_BYTES: u64 = 8192;

/// Up to `limit` workspace files, as paths relative to its root, sorted by path.
pub(crate) fn attachable_files(workspace: &Workspace, limit: usize) -> Vec<String> {
    let pruned = Arc::new(Pruned::default());
    walk(workspace.root(), workspace, &pruned)
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter(|entry| workspace.hidden(entry.path()).is_none())
        .filter_map(|entry| {
            let relative = entry.path().strip_prefix(workspace.root()).ok()?;
            relative.to_str().map(str::to_string)
        })
        .take(limit)
        .collect()
}

/// The text of the workspace file `path` (at most `max_bytes`, cut with a note), or why
/// it cannot be attached.
pub(crate) fn attachable_text(
    workspace: &Workspace,
    path: &str,
    max_bytes: u64,
) -> Result<String, String> {
    let resolved = workspace
        .resolve_existing(path)
        .map_err(|e| e.to_string())?;
    if workspace.hidden(&resolved).is_some() {
        return Err(format!(
            "`{path}` is a secret or private file; it is not attached"
        ));
    }
    let file = open_read(&resolved, path).map_err(|e| e.message("read", path))?;
    let mut bytes = Vec::new();
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read `{path}`: {e}"))?;
    let probe = &bytes[..bytes.len().min(BINARY_PROBE_BYTES as usize)];
    if probe.contains(&0) {
        return Err(format!("`{path}` is a binary file; only text is attached"));
    }
    let cut = bytes.len() as u64 > max_bytes;
    bytes.truncate(max_bytes as usize);
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if cut {
        text.push_str(&format!("\n... [cut at {max_bytes} bytes]"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SandboxConfig;

    #[test]
    fn secret_and_ignored_files_are_neither_listed_nor_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("notes.md"), "hello").unwrap();
        std::fs::write(root.join(".env"), "KEY=1").unwrap();
        std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir(root.join("build")).unwrap();
        std::fs::write(root.join("build/out.txt"), "x").unwrap();
        std::fs::write(root.join("blob.bin"), b"a\0b").unwrap();
        let workspace = Workspace::from_config(&SandboxConfig::default(), root).unwrap();
        let files = attachable_files(&workspace, 100);
        assert!(files.contains(&"notes.md".to_string()), "{files:?}");
        assert!(
            !files.iter().any(|f| f == ".env" || f.starts_with("build")),
            "{files:?}"
        );
        assert_eq!(
            attachable_text(&workspace, "notes.md", 100).unwrap(),
            "hello"
        );
        assert!(attachable_text(&workspace, ".env", 100).is_err());
        assert!(attachable_text(&workspace, "../../etc/passwd", 100).is_err());
        assert!(
            attachable_text(&workspace, "blob.bin", 100)
                .unwrap_err()
                .contains("binary")
        );
        assert_eq!(
            attachable_text(&workspace, "notes.md", 2).unwrap(),
            "he\n... [cut at 2 bytes]"
        );
    }
}

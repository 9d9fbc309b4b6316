//! The workspace boundary every file tool resolves its paths through.

use std::path::{Path, PathBuf};

use crate::config::SandboxConfig;

/// Why a path was refused. The message goes back to the model, so it says what to do.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WorkspaceError {
    /// The path resolves (after `..` and symlinks) to a place outside every allowed root.
    #[error("Error: the path `{0}` is outside the workspace; use a path inside {1}")]
    Outside(String, String),
    /// The path does not exist.
    #[error("Error: no such file or directory: `{0}`")]
    NotFound(String),
    /// Another I/O problem while resolving.
    #[error("Error: cannot access `{0}`: {1}")]
    Io(String, String),
}

/// The root the tools may write in, plus extra read-only roots. All canonical.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    read_only: Vec<PathBuf>,
}

impl Workspace {
    /// The workspace of `sandbox` (relative to `cwd`; `cwd` itself when unset).
    pub fn from_config(sandbox: &SandboxConfig, cwd: &Path) -> std::io::Result<Self> {
        let root = std::fs::canonicalize(
            cwd.join(sandbox.workspace.as_deref().unwrap_or(Path::new("."))),
        )?;
        let read_only = sandbox
            .read_only_paths
            .iter()
            .filter_map(|p| match std::fs::canonicalize(cwd.join(p)) {
                Ok(path) => Some(path),
                Err(err) => {
                    tracing::warn!(
                        "sandbox.read_only_paths: `{}` is not used: {err}",
                        p.display()
                    );
                    None
                }
            })
            .collect();
        Ok(Self { root, read_only })
    }

    /// The workspace root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` (relative to the root, or absolute) for reading: it must exist and,
    /// with `..` and symlinks resolved, lie inside the root or a read-only root.
    pub fn resolve_existing(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        let joined = self.root.join(path);
        let resolved = std::fs::canonicalize(&joined).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => WorkspaceError::NotFound(path.to_string()),
            _ => WorkspaceError::Io(path.to_string(), e.to_string()),
        })?;
        let inside = std::iter::once(&self.root)
            .chain(&self.read_only)
            .any(|root| resolved.starts_with(root));
        if inside {
            Ok(resolved)
        } else {
            Err(WorkspaceError::Outside(
                path.to_string(),
                self.root.display().to_string(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traversal_absolute_and_symlink_escapes_are_refused() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(outer.path().join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret"), ws.join("link")).unwrap();
        let w = Workspace::from_config(&SandboxConfig::default(), &ws).unwrap();

        assert!(w.resolve_existing("sub").is_ok());
        assert!(w.resolve_existing(".").is_ok());
        assert!(matches!(
            w.resolve_existing("../secret"),
            Err(WorkspaceError::Outside(..))
        ));
        let abs = outer.path().join("secret");
        assert!(matches!(
            w.resolve_existing(&abs.to_string_lossy()),
            Err(WorkspaceError::Outside(..))
        ));
        assert!(matches!(
            w.resolve_existing("link"),
            Err(WorkspaceError::Outside(..))
        ));
        assert_eq!(
            w.resolve_existing("missing"),
            Err(WorkspaceError::NotFound("missing".into()))
        );
    }

    #[test]
    fn read_only_paths_extend_what_can_be_read() {
        let outer = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outer.path().join("ws")).unwrap();
        std::fs::create_dir_all(outer.path().join("skills")).unwrap();
        let sandbox = SandboxConfig {
            read_only_paths: vec![PathBuf::from("../skills")],
            ..SandboxConfig::default()
        };
        let w = Workspace::from_config(&sandbox, &outer.path().join("ws")).unwrap();
        assert!(w.resolve_existing("../skills").is_ok());
    }
}

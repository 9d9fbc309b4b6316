//! The workspace boundary every file tool resolves its paths through.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::secrets::SecretFiles;
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
    /// A write to a place that may only be read (`sandbox.read_only_paths`).
    #[error("Error: `{0}` is read-only (sandbox.read_only_paths); write inside {1} instead")]
    ReadOnly(String, String),
    /// A write target that is a symlink whose target does not exist.
    #[error("Error: `{0}` is a symbolic link to a missing target; write to a real path instead")]
    DanglingLink(String),
    /// The path is one of antler's own start-up files (a `.env`, `config.yaml`, ...) at
    /// the workspace root: writing it would change what runs, unconfined, next time.
    #[error(
        "Error: `{0}` configures antler itself and is not written by tools; ask the user to \
         edit it"
    )]
    StartupFile(String),
    /// Inside a `.git` folder: git runs programs named there.
    #[error(
        "Error: `{0}` is inside git's own folder (.git), whose config and hooks run programs; \
         tools do not write there (use git commands to change a repository)"
    )]
    GitInternals(String),
    /// A secret file (`sandbox.deny_read`): keys, credentials, `.env`.
    #[error(
        "Error: `{0}` is a secret file (sandbox.deny_read: keys, credentials, .env files); file \
         tools neither read nor write it. Ask the user for what you need from it"
    )]
    Secret(String),
    /// antler's own data or configuration (threads, other threads' saved outputs, the trust
    /// store, its config and log folders).
    #[error(
        "Error: `{0}` belongs to antler itself (its data, config or log folder); tools cannot use it"
    )]
    Private(String),
    /// Another I/O problem while resolving.
    #[error("Error: cannot access `{0}`: {1}")]
    Io(String, String),
}

/// Files antler reads at start-up from its working directory: `.env`, `config.yaml`,
/// `extensions_config.json`, `mcp_config.json`. A prompt-injected tool call must not be
/// able to plant an MCP server command or an endpoint there (in the working directory or
/// the workspace root; project trust covers every other way of writing them).
pub const STARTUP_FILES: &[&str] = &[
    ".env",
    "config.yaml",
    "extensions_config.json",
    "mcp_config.json",
];

/// Claude Code's project settings, whose hooks antler runs with `hooks.import_claude`: as
/// much a start-up file as `config.yaml`.
pub const HOOK_SETTINGS: &[&str] = &[".claude/settings.json", ".claude/settings.local.json"];

/// The running thread's saved-outputs folder, which its tools may read though it lies in
/// antler's data folder. A session switches it when it switches threads, so the tools built
/// once serve every thread; clones share it.
#[derive(Debug, Clone, Default)]
pub struct ThreadOutputs(Arc<std::sync::RwLock<Option<PathBuf>>>);

impl ThreadOutputs {
    /// A handle pointing at `folder` (created if missing, so that it resolves).
    pub fn at(folder: &Path) -> Self {
        let outputs = Self::default();
        outputs.set(Some(folder));
        outputs
    }

    /// Points the handle at `folder` (`None`: no thread).
    pub fn set(&self, folder: Option<&Path>) {
        let folder = folder.map(|f| {
            let _ = crate::base::private_file::create_dir(f);
            canonical_or_same(f)
        });
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = folder;
    }

    /// The folder now, if a thread runs.
    pub fn current(&self) -> Option<PathBuf> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn contains(&self, path: &Path) -> bool {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .is_some_and(|folder| path.starts_with(folder))
    }
}

/// The folders of the skills the running thread loaded, which its file tools may read
/// (never write) wherever they are, even in antler's config folder. A session sets them
/// when it switches threads and `load_skill` adds one; clones share them.
#[derive(Debug, Clone, Default)]
pub struct SkillReads(Arc<std::sync::RwLock<Vec<PathBuf>>>);

impl SkillReads {
    /// Makes `folder` (canonical) readable.
    pub fn grant(&self, folder: &Path) {
        let mut folders = self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !folders.iter().any(|f| f == folder) {
            folders.push(folder.to_path_buf());
        }
    }

    /// Makes exactly `folders` readable.
    pub fn set(&self, folders: Vec<PathBuf>) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = folders;
    }

    /// The folders readable now.
    pub fn current(&self) -> Vec<PathBuf> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn contains(&self, path: &Path) -> bool {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .any(|folder| path.starts_with(folder))
    }
}

/// antler's own places within reach of the file tools. They come from the session (where
/// the data folder is, which thread runs), not from config.yaml.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    /// Folders tools may neither read nor write: antler's data folder (threads, saved
    /// outputs, the trust store), its config folder and its log folder.
    pub private: Vec<PathBuf>,
    /// The running thread's saved outputs, which its tools may read (though inside the
    /// data folder).
    pub thread_outputs: ThreadOutputs,
    /// More folders whose start-up files are never written (the workspace root and the
    /// working directory always are).
    pub startup_dirs: Vec<PathBuf>,
    /// Files never written wherever they are: the config files in use (named by flag or
    /// environment, they run at the next start as they are).
    pub files: Vec<PathBuf>,
    /// The folders of the skills the running thread loaded: readable.
    pub skill_reads: SkillReads,
    /// Every usable skill's folder: the sandbox's confinement lets its tools read them
    /// (the file tools still need the thread to have loaded the skill).
    pub skill_folders: Vec<PathBuf>,
}

/// Why a path is left out of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hidden {
    /// A `sandbox.deny_read` match.
    Secret,
    /// antler's own data.
    Private,
}

impl Hidden {
    /// How a listing marks it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Secret => "hidden: secret",
            Self::Private => "hidden: antler's own data",
        }
    }
}

/// Counts the secret files a walk left out, for the note at the end of its results
/// (antler's own data is left out without a word: it is nothing the model should look for).
#[derive(Debug, Default)]
pub struct HiddenCount {
    secret: usize,
}

impl HiddenCount {
    /// Counts one.
    pub fn add(&mut self, hidden: Hidden) {
        if hidden == Hidden::Secret {
            self.secret += 1;
        }
    }

    /// `"\n(2 files hidden: secret)"`, or nothing when nothing was left out.
    pub fn note(&self) -> String {
        match self.secret {
            0 => String::new(),
            1 => format!("\n(1 file {})", Hidden::Secret.label()),
            n => format!("\n({n} files {})", Hidden::Secret.label()),
        }
    }
}

/// The root the tools may write in, plus extra read-only roots, minus secret files and
/// antler's own places. All paths canonical.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    read_only: Vec<PathBuf>,
    secrets: Arc<SecretFiles>,
    private: Vec<PathBuf>,
    thread_outputs: ThreadOutputs,
    startup_dirs: Vec<PathBuf>,
    protected_files: Vec<PathBuf>,
    skill_reads: SkillReads,
    skill_folders: Vec<PathBuf>,
}

/// The canonical form of `path`, or `path` itself when it does not exist (yet).
fn canonical_or_same(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

impl Workspace {
    /// The canonical root, which the tools may write in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The canonical read-only roots that exist.
    pub fn read_only_roots(&self) -> &[PathBuf] {
        &self.read_only
    }

    /// The running thread's saved outputs now, readable like a read-only root.
    pub fn thread_outputs(&self) -> Option<PathBuf> {
        self.thread_outputs.current()
    }

    /// Every usable skill's folder (for the sandbox's confinement).
    pub fn skill_folders(&self) -> &[PathBuf] {
        &self.skill_folders
    }

    /// `path` as the model should see it: relative to the root when inside it.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => String::from("."),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

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
        let secrets = match &sandbox.deny_read {
            None => SecretFiles::default(),
            // config.yaml is validated when loaded; a pattern that still fails to compile
            // falls back to the defaults rather than to nothing.
            Some(patterns) => SecretFiles::new(patterns).unwrap_or_default(),
        };
        let startup_dirs = vec![root.clone(), canonical_or_same(cwd)];
        Ok(Self {
            root,
            read_only,
            secrets: Arc::new(secrets),
            private: Vec::new(),
            thread_outputs: ThreadOutputs::default(),
            startup_dirs,
            protected_files: Vec::new(),
            skill_reads: SkillReads::default(),
            skill_folders: Vec::new(),
        })
    }

    /// The workspace with antler's own places protected.
    pub fn with_protected(mut self, protected: &Protected) -> Self {
        self.private
            .extend(protected.private.iter().map(|p| canonical_or_same(p)));
        self.thread_outputs = protected.thread_outputs.clone();
        self.startup_dirs
            .extend(protected.startup_dirs.iter().map(|p| canonical_or_same(p)));
        self.protected_files
            .extend(protected.files.iter().map(|p| canonical_or_same(p)));
        self.skill_reads = protected.skill_reads.clone();
        self.skill_folders
            .extend(protected.skill_folders.iter().cloned());
        self
    }

    /// Why `path` (absolute, symlinks resolved or not followed) is left out of listings.
    pub fn hidden(&self, path: &Path) -> Option<Hidden> {
        if self.is_thread_output(path) {
            return None;
        }
        if self.skill_reads.contains(path) {
            return self.is_skill_secret(path, path).then_some(Hidden::Secret);
        }
        if self.private.iter().any(|p| path.starts_with(p)) {
            return Some(Hidden::Private);
        }
        self.is_secret(path).then_some(Hidden::Secret)
    }

    fn is_thread_output(&self, path: &Path) -> bool {
        self.thread_outputs.contains(path)
    }

    /// Whether `resolved`, in a loaded skill's folder, is a secret file: judged below that
    /// folder, below the root that holds it, and by the names of `written`.
    fn is_skill_secret(&self, resolved: &Path, written: &Path) -> bool {
        let in_skill = self
            .skill_reads
            .current()
            .into_iter()
            .filter_map(|f| resolved.strip_prefix(&f).ok().map(Path::to_path_buf))
            .any(|relative| self.secrets.matches(&relative));
        in_skill || self.is_secret(resolved) || self.secrets.names_match(written)
    }

    /// Whether `path` (absolute) is a secret file, judged below the root that holds it.
    fn is_secret(&self, path: &Path) -> bool {
        let relative = std::iter::once(&self.root)
            .chain(&self.read_only)
            .filter_map(|root| path.strip_prefix(root).ok())
            .min_by_key(|rel| rel.components().count())
            .unwrap_or(path);
        self.secrets.matches(relative)
    }

    /// Resolves `path` (relative to the root, or absolute) for reading: it must exist and,
    /// with `..` and symlinks resolved, lie inside the root or a read-only root.
    pub fn resolve_existing(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        let joined = self.root.join(path);
        let resolved = std::fs::canonicalize(&joined).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => WorkspaceError::NotFound(path.to_string()),
            _ => WorkspaceError::Io(path.to_string(), e.to_string()),
        })?;
        if self.is_thread_output(&resolved) {
            return Ok(resolved);
        }
        if self.skill_reads.contains(&resolved) {
            // A loaded skill's folder, read as a read-only root; its secret files stay out.
            if self.is_skill_secret(&resolved, Path::new(path)) {
                return Err(WorkspaceError::Secret(path.to_string()));
            }
            return Ok(resolved);
        }
        if self.private.iter().any(|p| resolved.starts_with(p)) {
            return Err(WorkspaceError::Private(path.to_string()));
        }
        let inside = std::iter::once(&self.root)
            .chain(&self.read_only)
            .any(|root| resolved.starts_with(root));
        if !inside {
            return Err(self.outside(path));
        }
        // Both the name written and the file reached: a link named `notes` to `.env`, or
        // one named `.env` to anything.
        if self.is_secret(&resolved) || self.secrets.names_match(Path::new(path)) {
            return Err(WorkspaceError::Secret(path.to_string()));
        }
        Ok(resolved)
    }

    /// Resolves `path` for writing: the target may not exist yet, so the nearest existing
    /// ancestor is resolved (`..` and symlinks) and must lie inside the root and outside
    /// every read-only root; the missing rest may hold no `..`. An existing symlink target
    /// must itself resolve inside the root.
    pub fn resolve_for_write(&self, path: &str) -> Result<PathBuf, WorkspaceError> {
        let joined = self.root.join(path);
        let mut existing = joined.as_path();
        let mut missing = Vec::new();
        loop {
            match std::fs::symlink_metadata(existing) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    // `file_name` is `None` for a trailing `..`: a `..` after a missing
                    // directory cannot be resolved, so it is refused.
                    let (Some(parent), Some(name)) = (existing.parent(), existing.file_name())
                    else {
                        return Err(self.outside(path));
                    };
                    missing.push(name.to_os_string());
                    existing = parent;
                }
                Err(e) => return Err(WorkspaceError::Io(path.to_string(), e.to_string())),
            }
        }
        let resolved = std::fs::canonicalize(existing).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => WorkspaceError::DanglingLink(path.to_string()),
            _ => WorkspaceError::Io(path.to_string(), e.to_string()),
        })?;
        if !resolved.starts_with(&self.root) {
            return Err(if self.read_only.iter().any(|r| resolved.starts_with(r)) {
                self.read_only_error(path)
            } else {
                self.outside(path)
            });
        }
        if self.read_only.iter().any(|r| resolved.starts_with(r)) {
            return Err(self.read_only_error(path));
        }
        let target = missing.iter().rev().fold(resolved, |acc, c| acc.join(c));
        if self.is_thread_output(&target) || self.private.iter().any(|p| target.starts_with(p)) {
            return Err(WorkspaceError::Private(path.to_string()));
        }
        let is_startup_file = (target
            .parent()
            .is_some_and(|dir| self.startup_dirs.iter().any(|d| d == dir))
            && target
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| STARTUP_FILES.contains(&n)))
            || self.startup_dirs.iter().any(|dir| {
                target
                    .strip_prefix(dir)
                    .is_ok_and(|rel| HOOK_SETTINGS.iter().any(|s| rel == Path::new(s)))
            });
        if is_startup_file || self.protected_files.contains(&target) {
            return Err(WorkspaceError::StartupFile(path.to_string()));
        }
        // Git runs programs from its config (`core.fsmonitor`, hooks) at the next `git`
        // command: a tool writes the work tree, never the repository's own files.
        let in_git = target
            .strip_prefix(&self.root)
            .is_ok_and(|rel| rel.components().any(|c| c.as_os_str() == ".git"));
        if in_git {
            return Err(WorkspaceError::GitInternals(path.to_string()));
        }
        if self.is_secret(&target) || self.secrets.names_match(Path::new(path)) {
            return Err(WorkspaceError::Secret(path.to_string()));
        }
        Ok(target)
    }

    fn outside(&self, path: &str) -> WorkspaceError {
        WorkspaceError::Outside(path.to_string(), self.root.display().to_string())
    }

    fn read_only_error(&self, path: &str) -> WorkspaceError {
        WorkspaceError::ReadOnly(path.to_string(), self.root.display().to_string())
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
    fn write_targets_resolve_through_their_nearest_existing_ancestor() {
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(outer.path().join("ro")).unwrap();
        std::os::unix::fs::symlink(outer.path(), ws.join("up")).unwrap();
        std::os::unix::fs::symlink(ws.join("sub"), ws.join("inner")).unwrap();
        let sandbox = SandboxConfig {
            read_only_paths: vec![PathBuf::from("../ro"), PathBuf::from("sub/vendor")],
            ..SandboxConfig::default()
        };
        std::fs::create_dir_all(ws.join("sub/vendor")).unwrap();
        let w = Workspace::from_config(&sandbox, &ws).unwrap();
        let root = w.root().to_path_buf();

        assert_eq!(
            w.resolve_for_write("new/deep/f"),
            Ok(root.join("new/deep/f"))
        );
        assert_eq!(w.resolve_for_write("inner/f"), Ok(root.join("sub/f")));
        assert_eq!(w.resolve_for_write("sub/../f"), Ok(root.join("f")));
        for outside in ["../f", "up/f", "up/ws2/f", "new/../../f", "/etc/f"] {
            assert!(
                matches!(
                    w.resolve_for_write(outside),
                    Err(WorkspaceError::Outside(..))
                ),
                "{outside}"
            );
        }
        for read_only in ["../ro/f", "sub/vendor/f", "sub/vendor"] {
            assert!(
                matches!(
                    w.resolve_for_write(read_only),
                    Err(WorkspaceError::ReadOnly(..))
                ),
                "{read_only}"
            );
        }
        assert_eq!(w.display(&root.join("a/b")), "a/b");
        assert_eq!(w.display(&root), ".");
    }

    #[test]
    fn antlers_own_startup_files_at_the_root_are_not_writable() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let w = Workspace::from_config(&SandboxConfig::default(), dir.path()).unwrap();
        for name in [
            ".env",
            "config.yaml",
            "./extensions_config.json",
            "mcp_config.json",
            // Their hooks would run at the next start with `hooks.import_claude`.
            ".claude/settings.json",
            ".claude/settings.local.json",
        ] {
            assert_eq!(
                w.resolve_for_write(name),
                Err(WorkspaceError::StartupFile(name.into()))
            );
        }
        assert!(
            w.resolve_for_write("sub/config.yaml").is_ok(),
            "only at the root"
        );
        assert!(w.resolve_for_write("notes.md").is_ok());
        for git in [".git/config", ".git/hooks/pre-commit", "sub/.git/config"] {
            assert_eq!(
                w.resolve_for_write(git),
                Err(WorkspaceError::GitInternals(git.into()))
            );
        }
        assert!(w.resolve_for_write(".gitignore").is_ok());
        let named = dir.path().join("sub/antler.yaml");
        std::fs::write(&named, "{}").unwrap();
        let w = w.with_protected(&Protected {
            files: vec![named],
            ..Protected::default()
        });
        assert_eq!(
            w.resolve_for_write("sub/antler.yaml"),
            Err(WorkspaceError::StartupFile("sub/antler.yaml".into()))
        );
    }

    #[test]
    fn secret_files_are_neither_read_nor_written_whatever_the_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub/.ssh")).unwrap();
        for f in [".env", "sub/.ssh/id_rsa", "sub/tls.pem", "notes.txt"] {
            std::fs::write(dir.path().join(f), "x").unwrap();
        }
        std::os::unix::fs::symlink(dir.path().join(".env"), dir.path().join("alias")).unwrap();
        let w = Workspace::from_config(&SandboxConfig::default(), dir.path()).unwrap();
        for path in [
            ".env",
            "./sub/../.env",
            "sub/.ssh/id_rsa",
            "sub/tls.pem",
            "alias",
        ] {
            assert_eq!(
                w.resolve_existing(path),
                Err(WorkspaceError::Secret(path.into())),
                "{path}"
            );
        }
        assert!(w.resolve_existing("notes.txt").is_ok());
        for path in ["sub/.env", "sub/new.key"] {
            assert_eq!(
                w.resolve_for_write(path),
                Err(WorkspaceError::Secret(path.into())),
                "{path}"
            );
        }
        assert!(w.resolve_for_write("alias").is_err(), "a link to .env");
        let open = SandboxConfig {
            deny_read: Some(Vec::new()),
            ..SandboxConfig::default()
        };
        let w = Workspace::from_config(&open, dir.path()).unwrap();
        assert!(
            w.resolve_existing("sub/tls.pem").is_ok(),
            "deny_read: [] turns it off"
        );
    }

    #[test]
    fn a_loaded_skills_folder_is_readable_never_writable_and_keeps_secrets_out() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let config = dir.path().join("config");
        let skill = config.join("skills/deploy");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(skill.join("SKILL.md"), "x").unwrap();
        std::fs::write(skill.join(".env"), "TOKEN=1").unwrap();
        std::fs::write(config.join("other.md"), "x").unwrap();
        let reads = SkillReads::default();
        let protected = Protected {
            private: vec![config.clone()],
            skill_reads: reads.clone(),
            ..Protected::default()
        };
        let w = Workspace::from_config(&SandboxConfig::default(), &ws)
            .unwrap()
            .with_protected(&protected);
        let file = skill.join("SKILL.md");
        let file = file.to_str().unwrap();
        assert_eq!(
            w.resolve_existing(file),
            Err(WorkspaceError::Private(file.into()))
        );
        reads.grant(&skill.canonicalize().unwrap());
        assert!(w.resolve_existing(file).is_ok(), "readable once loaded");
        let env = skill.join(".env");
        let env = env.to_str().unwrap();
        assert_eq!(
            w.resolve_existing(env),
            Err(WorkspaceError::Secret(env.into()))
        );
        assert_eq!(
            w.hidden(&skill.canonicalize().unwrap().join(".env")),
            Some(Hidden::Secret)
        );
        assert!(w.resolve_for_write(file).is_err(), "never writable");
        let other = config.join("other.md");
        assert!(
            w.resolve_existing(other.to_str().unwrap()).is_err(),
            "only the skill's folder"
        );
        reads.set(Vec::new());
        assert!(w.resolve_existing(file).is_err(), "another thread");
    }

    #[test]
    fn antlers_own_folders_are_private_but_the_threads_outputs_readable() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(data.join("outputs/t1")).unwrap();
        std::fs::create_dir_all(data.join("outputs/t2")).unwrap();
        std::fs::write(data.join("threads.db"), "db").unwrap();
        std::fs::write(data.join("outputs/t1/a.txt"), "mine").unwrap();
        std::fs::write(data.join("outputs/t2/b.txt"), "theirs").unwrap();
        let protected = Protected {
            private: vec![data.clone()],
            thread_outputs: ThreadOutputs::at(&data.join("outputs/t1")),
            ..Protected::default()
        };
        let w = Workspace::from_config(&SandboxConfig::default(), dir.path())
            .unwrap()
            .with_protected(&protected);
        assert!(w.resolve_existing("data/outputs/t1/a.txt").is_ok());
        let abs = data.join("outputs/t1/a.txt");
        assert!(w.resolve_existing(&abs.to_string_lossy()).is_ok());
        for path in ["data/outputs/t2/b.txt", "data/threads.db", "data"] {
            assert_eq!(
                w.resolve_existing(path),
                Err(WorkspaceError::Private(path.into())),
                "{path}"
            );
        }
        for path in ["data/outputs/t1/a.txt", "data/trust.json"] {
            assert_eq!(
                w.resolve_for_write(path),
                Err(WorkspaceError::Private(path.into())),
                "{path}"
            );
        }
        assert_eq!(w.hidden(&data), Some(Hidden::Private));
        assert_eq!(w.hidden(&data.join("outputs/t1/a.txt")), None);
        // Another thread: the same tools now read its folder and not the first one's.
        protected.thread_outputs.set(Some(&data.join("outputs/t2")));
        assert!(w.resolve_existing("data/outputs/t2/b.txt").is_ok());
        assert!(w.resolve_existing("data/outputs/t1/a.txt").is_err());
    }

    #[test]
    fn startup_files_of_the_working_directory_are_protected_under_a_parent_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir(&project).unwrap();
        let sandbox = SandboxConfig {
            workspace: Some(PathBuf::from("..")),
            ..SandboxConfig::default()
        };
        let w = Workspace::from_config(&sandbox, &project).unwrap();
        for path in [
            "project/extensions_config.json",
            "project/config.yaml",
            "extensions_config.json",
        ] {
            assert_eq!(
                w.resolve_for_write(path),
                Err(WorkspaceError::StartupFile(path.into())),
                "{path}"
            );
        }
        assert!(w.resolve_for_write("project/notes.md").is_ok());
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

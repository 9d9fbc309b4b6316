//! Project trust: a `config.yaml`, `extensions_config.json`, `mcp_config.json` or `.env`
//! found through the working directory (not named by `--config`/`--extensions` or the
//! environment, not in the user's config folder) is used only once the user has trusted
//! that exact content.
//!
//! Path checks cannot keep such files from being written: `bash`, an MCP server with file
//! access or another program can write them. Trust can: a changed file is untrusted again,
//! so whatever a tool planted never runs at the next start without the user seeing it.

mod store;
pub(crate) mod summary;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use store::{TrustStore, TrustStoreError, TrustedFile};

use crate::base::describe::hex;
use crate::config::{
    ConfigError, ConfigPaths, EnvLookup, Found, Origin, app_config_candidates, dotenv_candidate,
    extensions_candidates,
};

/// Which start-up file a project file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProjectFileKind {
    /// `./config.yaml`.
    AppConfig,
    /// `./extensions_config.json` or `./mcp_config.json`.
    Extensions,
    /// `./.env`.
    DotEnv,
    /// A project skill's folder (`.agents/skills/NAME`, `.claude/skills/NAME`), trusted by
    /// the hash of all its files.
    Skill,
    /// Claude Code's `.claude/settings.json` or `.claude/settings.local.json`, whose hooks
    /// run when `hooks.import_claude` is set.
    ClaudeSettings,
}

impl ProjectFileKind {
    /// What the file can do, in a few words.
    pub fn power(self) -> &'static str {
        match self {
            Self::AppConfig => "chooses the model endpoint, the tools and the sandbox",
            Self::Extensions => "starts programs (MCP servers) and connects to URLs",
            Self::DotEnv => "sets environment variables (API keys, endpoints, config paths)",
            Self::Skill => "instructs the model, and its scripts run if the model runs them",
            Self::ClaudeSettings => "runs programs (hooks) around every step",
        }
    }
}

/// A project file as read once: where it was found, content and hash. The content is what
/// gets used, so that a file swapped after the check is never the one loaded.
#[derive(Debug, Clone)]
pub struct ProjectFile {
    /// Which file it is.
    pub kind: ProjectFileKind,
    /// The path it was found at.
    pub path: PathBuf,
    /// Its absolute path as found (symlinks not resolved): the trust store's key. Trust
    /// is for a file in its folder: a link from another folder to a trusted file is not
    /// trusted there, where its relative commands would run elsewhere.
    pub key: PathBuf,
    /// The bytes read once: what is hashed is what is parsed.
    pub content: Vec<u8>,
    /// SHA-256 of the content, hex.
    pub sha256: String,
}

impl ProjectFile {
    /// Reads the file at `path`: a regular file of at most
    /// [`crate::base::bounded_read::CONFIG_BYTES`] (it is read before anyone decided to trust it).
    pub fn read(kind: ProjectFileKind, path: &Path) -> std::io::Result<Self> {
        let content = crate::base::bounded_read::read(
            path,
            crate::base::bounded_read::CONFIG_BYTES,
            "a config file",
        )?;
        Self::with_content(kind, path, content)
    }

    /// The file at `path` with `content` already read from it.
    pub fn with_content(
        kind: ProjectFileKind,
        path: &Path,
        content: Vec<u8>,
    ) -> std::io::Result<Self> {
        Ok(Self {
            kind,
            path: path.to_path_buf(),
            key: std::path::absolute(path)?,
            sha256: hex(&Sha256::digest(&content)),
            content,
        })
    }

    /// A project skill's folder: keyed by the folder, its SKILL.md's content shown, the
    /// hash of every file in it trusted.
    pub fn skill(skill: &crate::skills::discover::ProjectSkill) -> std::io::Result<Self> {
        Ok(Self {
            kind: ProjectFileKind::Skill,
            path: skill.skill_md.clone(),
            key: std::path::absolute(skill.skill_md.parent().unwrap_or(&skill.skill_md))?,
            content: skill.content.clone(),
            sha256: skill.sha256.clone(),
        })
    }

    /// The content as text (lossy: a file that is not UTF-8 fails to parse later anyway).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.content).into_owned()
    }
}

/// The project files antler would use now, read once: `.env`, then the first project
/// `config.yaml` and the first project extensions file (files named by flag or environment
/// and the user's own config are not project files).
pub fn project_files(
    paths: &ConfigPaths,
    cwd: &Path,
    env: EnvLookup<'_>,
) -> Result<Vec<ProjectFile>, ConfigError> {
    let first_project = |found: Vec<Found>| {
        found
            .into_iter()
            .next()
            .filter(|f| f.origin == Origin::Project)
    };
    let candidates = [
        (ProjectFileKind::DotEnv, dotenv_candidate(cwd)),
        (
            ProjectFileKind::AppConfig,
            first_project(app_config_candidates(paths.config.as_deref(), cwd, env)?),
        ),
        (
            ProjectFileKind::Extensions,
            first_project(extensions_candidates(
                paths.extensions.as_deref(),
                cwd,
                env,
            )?),
        ),
    ];
    let mut files = candidates
        .into_iter()
        .filter_map(|(kind, found)| found.map(|f| (kind, f.path)))
        .map(|(kind, path)| {
            ProjectFile::read(kind, &path).map_err(|source| ConfigError::Read { path, source })
        })
        .collect::<Result<Vec<_>, _>>()?;
    files.extend(project_skills(cwd));
    let config = files.iter().find(|f| f.kind == ProjectFileKind::AppConfig);
    if imports_claude_hooks(config, paths, cwd, env) {
        files.extend(project_claude_settings(cwd));
    }
    Ok(files)
}

/// The project's Claude Code settings files that have hooks, each read once.
pub fn project_claude_settings(cwd: &Path) -> Vec<ProjectFile> {
    crate::hooks::claude::PROJECT_SETTINGS
        .iter()
        .map(|name| cwd.join(name))
        .filter(|path| path.is_file())
        .filter_map(|path| ProjectFile::read(ProjectFileKind::ClaudeSettings, &path).ok())
        .filter(|file| file.text().contains("\"hooks\""))
        .collect()
}

/// Whether the config.yaml in use sets `hooks.import_claude` (only then is a project's
/// `.claude/settings.json` a file antler would use). Cheap on every start: the text is
/// parsed only when it names the key.
fn imports_claude_hooks(
    project: Option<&ProjectFile>,
    paths: &ConfigPaths,
    cwd: &Path,
    env: EnvLookup<'_>,
) -> bool {
    let text = match project {
        Some(file) => file.text(),
        None => {
            let Some(found) = app_config_candidates(paths.config.as_deref(), cwd, env)
                .ok()
                .and_then(|found| found.into_iter().next())
            else {
                return false;
            };
            let Ok(text) = crate::base::bounded_read::read_to_string(
                &found.path,
                crate::base::bounded_read::CONFIG_BYTES,
                "a config file",
            ) else {
                return false;
            };
            text
        }
    };
    text.contains("import_claude")
        && yaml_serde::from_str::<yaml_serde::Value>(&text).is_ok_and(|root| {
            root.get("hooks")
                .and_then(|hooks| hooks.get("import_claude"))
                .and_then(yaml_serde::Value::as_bool)
                == Some(true)
        })
}

/// The project's skill folders, each read whole; one that cannot be a skill is left out
/// here (the skills' discovery reports why).
pub fn project_skills(cwd: &Path) -> Vec<ProjectFile> {
    crate::skills::project_roots(cwd)
        .iter()
        .flat_map(|root| crate::skills::discover::skill_dirs(root))
        .filter_map(|dir| crate::skills::project_skill(&dir).ok())
        .filter_map(|skill| ProjectFile::skill(&skill).ok())
        .collect()
}

/// Whether a project file may be used.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum TrustState {
    /// This content is trusted (stored, or for this run).
    Trusted,
    /// Never trusted.
    New,
    /// Trusted once, with other content: it changed since.
    Changed {
        /// When the earlier content was trusted (seconds since the epoch).
        trusted_at: i64,
    },
    /// The trust store cannot be read, so nothing is trusted.
    StoreUnreadable {
        /// The store's error, as text.
        reason: String,
    },
}

impl TrustState {
    /// Whether the file may be used.
    pub fn is_trusted(&self) -> bool {
        matches!(self, Self::Trusted)
    }

    /// The state in words, for errors and reports.
    pub fn describe(&self) -> String {
        match self {
            Self::Trusted => String::from("trusted"),
            Self::New => String::from("not trusted yet"),
            Self::Changed { trusted_at } => format!(
                "changed since it was trusted on {}",
                crate::base::clock::utc_date(*trusted_at)
            ),
            Self::StoreUnreadable { reason } => format!("not trusted: {reason}"),
        }
    }
}

/// What happens to an untrusted project file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnUntrusted {
    /// It is an error (exit 2): `-p`, `tools`, `mcp`.
    Refuse,
    /// It is left out, as if it were not there: the chat after "no", `doctor`, `threads`.
    Skip,
}

/// Project trust for one process: the store, plus contents approved for this run only
/// (`--trust-project`, or trusted at the chat's question).
#[derive(Debug, Clone)]
pub struct ProjectTrust {
    store: Option<TrustStore>,
    approved: Vec<(PathBuf, String)>,
    trust_all: bool,
    on_untrusted: OnUntrusted,
}

/// Why a project file was not used.
#[derive(Debug, thiserror::Error)]
#[error(
    "{path} is a project file antler has not been told to trust ({state}); it {power}. \
     Review it, then run `antler trust` to trust this content, or pass --trust-project to \
     trust the project files for this run only",
    path = file.display(),
    power = kind.power(),
)]
pub struct UntrustedError {
    /// Where it was found.
    pub file: PathBuf,
    /// Which file it is.
    pub kind: ProjectFileKind,
    /// Why it is not trusted: new, or changed since it was.
    pub state: String,
}

impl ProjectTrust {
    /// Trust read from `store` (`None`: no data folder, nothing is stored).
    pub fn new(store: Option<TrustStore>, on_untrusted: OnUntrusted) -> Self {
        Self {
            store,
            approved: Vec::new(),
            trust_all: false,
            on_untrusted,
        }
    }

    /// Every project file counts as trusted: for library users and tests that load files
    /// they wrote themselves.
    pub fn everything() -> Arc<Self> {
        Arc::new(Self {
            store: None,
            approved: Vec::new(),
            trust_all: true,
            on_untrusted: OnUntrusted::Refuse,
        })
    }

    /// The store, when there is one.
    pub fn store(&self) -> Option<&TrustStore> {
        self.store.as_ref()
    }

    /// Changes what happens to an untrusted file.
    pub fn set_on_untrusted(&mut self, on_untrusted: OnUntrusted) {
        self.on_untrusted = on_untrusted;
    }

    /// Trusts `file`'s content for this run only.
    pub fn approve(&mut self, file: &ProjectFile) {
        self.approved.push((file.key.clone(), file.sha256.clone()));
    }

    /// The state of `file`'s content now.
    pub fn state(&self, file: &ProjectFile) -> TrustState {
        let approved = self
            .approved
            .iter()
            .any(|(path, sha)| path == &file.key && sha == &file.sha256);
        if self.trust_all || approved {
            return TrustState::Trusted;
        }
        let Some(store) = &self.store else {
            return TrustState::New;
        };
        match store.entry(&file.key) {
            Ok(Some(entry)) if entry.sha256 == file.sha256 => TrustState::Trusted,
            Ok(Some(entry)) => TrustState::Changed {
                trusted_at: entry.trusted_at,
            },
            Ok(None) => TrustState::New,
            Err(err) => TrustState::StoreUnreadable {
                reason: err.to_string(),
            },
        }
    }

    /// `Ok(true)`: use the file; `Ok(false)`: leave it out; `Err`: refuse to go on.
    pub fn admit(&self, file: &ProjectFile) -> Result<bool, UntrustedError> {
        let state = self.state(file);
        if state.is_trusted() {
            return Ok(true);
        }
        match self.on_untrusted {
            OnUntrusted::Skip => {
                tracing::warn!(
                    "{} is not used: it is a project file antler has not been told to trust ({}); \
                     `antler trust` shows and trusts it",
                    file.path.display(),
                    state.describe()
                );
                Ok(false)
            }
            OnUntrusted::Refuse => Err(UntrustedError {
                file: file.path.clone(),
                kind: file.kind,
                state: state.describe(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, content: &str) -> ProjectFile {
        std::fs::write(dir.join(name), content).unwrap();
        ProjectFile::read(ProjectFileKind::Extensions, &dir.join(name)).unwrap()
    }

    #[test]
    fn trust_is_for_the_exact_content() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::in_dir(&dir.path().join("data"));
        let trust = ProjectTrust::new(Some(store.clone()), OnUntrusted::Refuse);
        let first = file(dir.path(), "e.json", "{}");
        assert_eq!(trust.state(&first), TrustState::New);
        let err = trust.admit(&first).unwrap_err().to_string();
        assert!(
            err.contains("e.json is a project file") && err.contains("antler trust"),
            "{err}"
        );
        store.trust(&first.key, &first.sha256).unwrap();
        assert!(trust.admit(&first).unwrap());
        let changed = file(dir.path(), "e.json", "{\"mcpServers\": {}}");
        assert!(matches!(trust.state(&changed), TrustState::Changed { .. }));
        let mut skipping = trust.clone();
        skipping.set_on_untrusted(OnUntrusted::Skip);
        assert!(!skipping.admit(&changed).unwrap());
        skipping.approve(&changed);
        assert!(skipping.admit(&changed).unwrap());
        assert!(ProjectTrust::everything().admit(&changed).unwrap());
    }
}

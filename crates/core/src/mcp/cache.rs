//! The loaded MCP toolset, cached against the extensions file's signature.

use std::sync::Arc;

use super::McpManager;
use super::manager::StartSettings;
use crate::config::{
    ConfigError, EnvLookup, FileSignature, Found, Origin, parse_extensions_config,
};
use crate::trust::{ProjectFile, ProjectFileKind, ProjectTrust, UntrustedError};

/// How long old servers get to exit after the file changed (antler goes on meanwhile).
const RELOAD_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Why the extensions file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ExtensionsError {
    /// It is missing, unreadable or invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// It is a project file whose content the user has not trusted.
    #[error(transparent)]
    Untrusted(#[from] UntrustedError),
}

/// Keeps one [`McpManager`] per version of the extensions file. An edit (any change of
/// resolved path, mtime, size or content hash) restarts MCP at the next [`McpCache::get`];
/// a deleted or broken file keeps the last good servers, with a warning, so a half-saved
/// edit never takes a running session's tools away. A project file's new content must be
/// trusted like the first: a server written into it while antler runs never starts
/// unseen.
pub struct McpCache {
    file: Option<Found>,
    trust: Arc<ProjectTrust>,
    /// How servers start (manifests, lazy or eager).
    pub settings: StartSettings,
    current: Option<(FileSignature, Arc<McpManager>)>,
    empty: Arc<McpManager>,
}

impl McpCache {
    /// A cache for `file`; `None` means no extensions file (no MCP servers).
    pub fn new(file: Option<Found>, trust: Arc<ProjectTrust>, settings: StartSettings) -> Self {
        Self {
            file,
            trust,
            settings,
            current: None,
            empty: Arc::new(McpManager::empty()),
        }
    }

    /// The servers for the file as it is now, starting them if it changed. The error is
    /// returned only when nothing good was ever loaded; otherwise it is logged and the last
    /// good servers are kept.
    pub async fn get(&mut self, env: EnvLookup<'_>) -> Result<Arc<McpManager>, ExtensionsError> {
        if self.file.is_none() {
            return Ok(self.empty.clone());
        }
        let (path, signature, content) = match self.read() {
            Ok(read) => read,
            Err(err) => return self.keep_last(err),
        };
        if let Some((current, manager)) = &self.current
            && *current == signature
        {
            return Ok(manager.clone());
        }
        let loaded = match self.parse(&path, &content, env) {
            Ok(loaded) => loaded,
            Err(err) => return self.keep_last(err),
        };
        for warning in &loaded.warnings {
            tracing::warn!("{warning}");
        }
        if self.current.is_some() {
            tracing::info!(path = %path.display(), "extensions config changed; restarting MCP servers");
        }
        // Stop the old servers before starting the new ones, so a stdio server is never
        // running twice (front-ends may still hold the old manager; its calls then fail).
        if let Some((_, old)) = self.current.take() {
            old.shutdown(RELOAD_GRACE).await;
        }
        let manager = Arc::new(McpManager::start(loaded.value, &self.settings).await);
        self.current = Some((signature, manager.clone()));
        Ok(manager)
    }

    /// The file's entries as they are now, without starting anything (`antler mcp
    /// login`); none without a file.
    pub fn server_configs(
        &self,
        env: EnvLookup<'_>,
    ) -> Result<Vec<crate::config::McpServerConfig>, ExtensionsError> {
        if self.file.is_none() {
            return Ok(Vec::new());
        }
        let (path, _, content) = self.read()?;
        Ok(self.parse(&path, &content, env)?.value.servers)
    }

    /// The file's path, signature and content, if there is a file.
    fn read(&self) -> Result<(std::path::PathBuf, FileSignature, Vec<u8>), ExtensionsError> {
        let path = self
            .file
            .as_ref()
            .map(|f| f.path.clone())
            .unwrap_or_default();
        match FileSignature::read(&path) {
            Ok(Some((signature, content))) => Ok((path, signature, content)),
            Ok(None) => Err(ConfigError::NotFound {
                path,
                origin: String::from("the extensions config in use"),
            }
            .into()),
            Err(source) => Err(ConfigError::Read { path, source }.into()),
        }
    }

    /// `content`, admitted (a project file must be trusted) and parsed.
    fn parse(
        &self,
        path: &std::path::Path,
        content: &[u8],
        env: EnvLookup<'_>,
    ) -> Result<crate::config::Loaded<crate::config::ExtensionsConfig>, ExtensionsError> {
        if self
            .file
            .as_ref()
            .is_some_and(|f| f.origin == Origin::Project)
        {
            let file =
                ProjectFile::with_content(ProjectFileKind::Extensions, path, content.to_vec())
                    .map_err(|source| ConfigError::Read {
                        path: path.to_path_buf(),
                        source,
                    })?;
            if !self.trust.admit(&file)? {
                return Err(UntrustedError {
                    file: path.to_path_buf(),
                    kind: ProjectFileKind::Extensions,
                    state: self.trust.state(&file).describe(),
                }
                .into());
            }
        }
        let text = String::from_utf8_lossy(content);
        Ok(parse_extensions_config(&text, path, env)?)
    }

    fn keep_last(&self, err: ExtensionsError) -> Result<Arc<McpManager>, ExtensionsError> {
        match &self.current {
            Some((_, manager)) => {
                tracing::warn!("{err}; keeping the MCP servers loaded before");
                Ok(manager.clone())
            }
            None => match err {
                ExtensionsError::Config(ConfigError::NotFound { .. }) => Ok(self.empty.clone()),
                other => Err(other),
            },
        }
    }
}

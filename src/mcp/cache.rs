//! The loaded MCP toolset, cached against the extensions file's signature.

use std::sync::Arc;

use super::McpManager;
use super::manager::StartSettings;
use crate::config::{
    ConfigError, EnvLookup, FileSignature, Found, Origin, parse_extensions_config,
};
use crate::trust::{ProjectFile, ProjectFileKind, ProjectTrust, UntrustedError};

/// How long old servers get to exit after the file changed.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

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
        let Some(found) = self.file.clone() else {
            return Ok(self.empty.clone());
        };
        let path = found.path;
        let (signature, content) = match FileSignature::read(&path) {
            Ok(Some(read)) => read,
            Ok(None) => {
                return self.keep_last(
                    ConfigError::NotFound {
                        path,
                        origin: String::from("the extensions config in use"),
                    }
                    .into(),
                );
            }
            Err(source) => return self.keep_last(ConfigError::Read { path, source }.into()),
        };
        if let Some((current, manager)) = &self.current
            && *current == signature
        {
            return Ok(manager.clone());
        }
        if found.origin == Origin::Project {
            let file = match ProjectFile::with_content(
                ProjectFileKind::Extensions,
                &path,
                content.clone(),
            ) {
                Ok(file) => file,
                Err(source) => return self.keep_last(ConfigError::Read { path, source }.into()),
            };
            match self.trust.admit(&file) {
                Ok(true) => {}
                Ok(false) => {
                    return self.keep_last(
                        UntrustedError {
                            file: path,
                            kind: ProjectFileKind::Extensions,
                            state: self.trust.state(&file).describe(),
                        }
                        .into(),
                    );
                }
                Err(err) => return self.keep_last(err.into()),
            }
        }
        let text = String::from_utf8_lossy(&content);
        let loaded = match parse_extensions_config(&text, &path, env) {
            Ok(loaded) => loaded,
            Err(err) => return self.keep_last(err.into()),
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
            old.shutdown(SHUTDOWN_GRACE).await;
        }
        let manager = Arc::new(McpManager::start(loaded.value, &self.settings).await);
        self.current = Some((signature, manager.clone()));
        Ok(manager)
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

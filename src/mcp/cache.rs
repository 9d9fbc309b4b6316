//! The loaded MCP toolset, cached against the extensions file's signature.

use std::path::PathBuf;
use std::sync::Arc;

use super::McpManager;

/// How long old servers get to exit after the file changed.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);
use crate::config::{ConfigError, EnvLookup, FileSignature, load_extensions_config};

/// Keeps one [`McpManager`] per version of the extensions file. An edit (any change of
/// resolved path, mtime, size or content hash) restarts MCP at the next [`McpCache::get`];
/// a deleted or broken file keeps the last good servers, with a warning, so a half-saved
/// edit never takes a running session's tools away.
pub struct McpCache {
    path: Option<PathBuf>,
    current: Option<(FileSignature, Arc<McpManager>)>,
    empty: Arc<McpManager>,
}

impl McpCache {
    /// A cache for the file at `path`; `None` means no extensions file (no MCP servers).
    pub fn new(path: Option<PathBuf>) -> Self {
        Self {
            path,
            current: None,
            empty: Arc::new(McpManager::empty()),
        }
    }

    /// The servers for the file as it is now, starting them if it changed. The error is
    /// returned only when nothing good was ever loaded; otherwise it is logged and the last
    /// good servers are kept.
    pub async fn get(&mut self, env: EnvLookup<'_>) -> Result<Arc<McpManager>, ConfigError> {
        let Some(path) = self.path.clone() else {
            return Ok(self.empty.clone());
        };
        let signature = match FileSignature::of(&path) {
            Ok(Some(signature)) => signature,
            Ok(None) => {
                return self.keep_last(ConfigError::NotFound {
                    path,
                    origin: String::from("the extensions config in use"),
                });
            }
            Err(source) => return self.keep_last(ConfigError::Read { path, source }),
        };
        if let Some((current, manager)) = &self.current
            && *current == signature
        {
            return Ok(manager.clone());
        }
        let loaded = match load_extensions_config(&path, env) {
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
            old.shutdown(SHUTDOWN_GRACE).await;
        }
        let manager = Arc::new(McpManager::start(loaded.value).await);
        self.current = Some((signature, manager.clone()));
        Ok(manager)
    }

    fn keep_last(&self, err: ConfigError) -> Result<Arc<McpManager>, ConfigError> {
        match &self.current {
            Some((_, manager)) => {
                tracing::warn!("{err}; keeping the MCP servers loaded before");
                Ok(manager.clone())
            }
            None => match err {
                ConfigError::NotFound { .. } => Ok(self.empty.clone()),
                other => Err(other),
            },
        }
    }
}

//! Where OAuth credentials are kept: one JSON file in the user's data folder, readable by
//! the user only (0600, in a 0700 folder), written whole to a temporary file and renamed.
//! Entries are keyed by the server's URL; each holds the issuer that minted it, and rmcp
//! discards credentials whose issuer no longer matches the server's authorization server.
//! Nothing here is ever logged.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

use crate::config::EnvLookup;

/// The file's name in the data folder.
const FILE: &str = "mcp-oauth.json";
/// A larger file is refused: no set of credentials is near this size.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The file's content.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    /// Credentials by server URL.
    servers: BTreeMap<String, StoredCredentials>,
}

/// What servers asked for in a 403 `insufficient_scope`, by server URL: a file of its own
/// beside the tokens, so that keeping a demand never races another process's refresh,
/// which rewrites the token file under its lock.
const DEMANDS_FILE: &str = "mcp-oauth-demands.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct Demands {
    servers: BTreeMap<String, StepUp>,
}

/// A server's demand for more scope than its token carries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepUp {
    /// The scopes it asked for.
    pub scopes: Vec<String>,
    /// The sign-ins made for this demand so far.
    pub sign_ins: u32,
    /// When it was first made (unix seconds).
    #[serde(default)]
    pub since: u64,
}

/// A demand older than this is a new one when the server makes it again: the bound on
/// sign-ins is for one stubborn refusal, not for the life of the server.
const DEMAND_SECS: u64 = 3600;

/// A server cannot make the file grow without end: scopes past these are dropped.
const MAX_SCOPES: usize = 64;
const MAX_SCOPE_CHARS: usize = 256;

/// The OAuth credentials file, which keeps them by server URL.
#[derive(Debug, Clone)]
pub struct TokenStore {
    path: PathBuf,
}

/// Why the credentials file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenStoreError {
    /// Reading, writing or setting permissions failed.
    #[error("the OAuth credentials file {path}: {reason}")]
    Io {
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The file is not what antler writes.
    #[error(
        "the OAuth credentials file {path} is unreadable ({reason}); remove it and log in again"
    )]
    Corrupt {
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl TokenStore {
    /// The file in antler's data folder; `None` without one.
    pub fn in_data_dir(env: EnvLookup<'_>) -> Option<Self> {
        crate::config::dirs::data_dir(env).map(|dir| Self::at(dir.join(FILE)))
    }

    /// The file at `path`.
    pub fn at(path: PathBuf) -> Self {
        Self { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, err: impl std::fmt::Display) -> TokenStoreError {
        TokenStoreError::Io {
            path: self.path.clone(),
            reason: err.to_string(),
        }
    }

    fn read(&self) -> Result<Saved, TokenStoreError> {
        self.read_at(&self.path)
    }

    fn demands_path(&self) -> PathBuf {
        self.path.with_file_name(DEMANDS_FILE)
    }

    fn read_at<T: serde::de::DeserializeOwned + Default>(
        &self,
        path: &Path,
    ) -> Result<T, TokenStoreError> {
        // Tokens someone else could have planted are not used.
        let read = crate::base::private_file::read_private(path, MAX_FILE_BYTES, "a token file");
        let bytes = match read {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(T::default()),
            Err(err) => return Err(self.io(err)),
        };
        serde_json::from_slice(&bytes).map_err(|err| TokenStoreError::Corrupt {
            path: path.to_path_buf(),
            reason: err.to_string(),
        })
    }

    /// Writes `saved` whole: a 0600 temporary file in a 0700 folder, renamed into place.
    fn write_at<T: Serialize>(&self, path: &Path, saved: &T) -> Result<(), TokenStoreError> {
        let dir = path.parent().ok_or_else(|| self.io("no parent folder"))?;
        crate::base::private_file::create_dir(dir).map_err(|e| self.io(e))?;
        let text = serde_json::to_vec_pretty(saved).map_err(|e| self.io(e))?;
        crate::base::private_file::write_atomically(path, &text).map_err(|e| self.io(e))
    }

    /// The credentials kept for `url`.
    pub fn load(&self, url: &str) -> Result<Option<StoredCredentials>, TokenStoreError> {
        Ok(self.read()?.servers.remove(url))
    }

    /// Every access and refresh token kept, to keep them out of tool results and turns (a
    /// server could echo the header it was sent).
    pub fn secrets(&self) -> Vec<String> {
        let Ok(saved) = self.read() else {
            return Vec::new();
        };
        saved
            .servers
            .values()
            .filter_map(|c| serde_json::to_value(&c.token_response).ok())
            .flat_map(|response| {
                ["access_token", "refresh_token"]
                    .into_iter()
                    .filter_map(move |key| response[key].as_str().map(str::to_string))
            })
            .filter(|token| token.len() >= 8)
            .collect()
    }

    /// Whether credentials are kept for `url`.
    pub fn has(&self, url: &str) -> bool {
        self.load(url)
            .is_ok_and(|c| c.is_some_and(|c| c.token_response.is_some()))
    }

    fn update(
        &self,
        url: &str,
        credentials: Option<StoredCredentials>,
    ) -> Result<bool, TokenStoreError> {
        // One change at a time in this process (servers refresh at once).
        self.change(|saved| match credentials {
            Some(credentials) => saved.servers.insert(url.to_string(), credentials).is_some(),
            None => saved.servers.remove(url).is_some(),
        })
    }

    /// Forgets the credentials of `url`, and what it asked for; whether there were any.
    pub fn remove(&self, url: &str) -> Result<bool, TokenStoreError> {
        self.change_demands(|demands| demands.servers.remove(url))?;
        self.update(url, None)
    }

    /// Reads, changes and writes the token file, one change at a time in this process.
    fn change<T>(&self, change: impl FnOnce(&mut Saved) -> T) -> Result<T, TokenStoreError> {
        static CHANGING: Mutex<()> = Mutex::new(());
        let _one = CHANGING.lock().unwrap_or_else(PoisonError::into_inner);
        let mut saved = self.read()?;
        let out = change(&mut saved);
        self.write_at(&self.path, &saved)?;
        Ok(out)
    }

    /// Reads, changes and writes the demands file, one change at a time in this process.
    fn change_demands<T>(
        &self,
        change: impl FnOnce(&mut Demands) -> T,
    ) -> Result<T, TokenStoreError> {
        static CHANGING: Mutex<()> = Mutex::new(());
        let _one = CHANGING.lock().unwrap_or_else(PoisonError::into_inner);
        let path = self.demands_path();
        let mut demands: Demands = self.read_at(&path)?;
        let out = change(&mut demands);
        self.write_at(&path, &demands)?;
        Ok(out)
    }

    /// The demand for more scope `url` made, if one stands (made within the hour).
    pub fn step_up(&self, url: &str) -> Result<Option<StepUp>, TokenStoreError> {
        let mut demands: Demands = self.read_at(&self.demands_path())?;
        let now = crate::base::clock::now_secs();
        Ok(demands
            .servers
            .remove(url)
            .filter(|d| now.saturating_sub(d.since) <= DEMAND_SECS))
    }

    /// Keeps that `url` refused its token for want of `scopes`; a demand for other scopes
    /// than the standing one, or one made again after the hour, starts its count of
    /// sign-ins again. Returns the demand as it stands.
    pub fn demand_scopes(&self, url: &str, scopes: &[String]) -> Result<StepUp, TokenStoreError> {
        let scopes: Vec<String> = scopes
            .iter()
            .filter(|s| s.len() <= MAX_SCOPE_CHARS)
            .take(MAX_SCOPES)
            .cloned()
            .collect();
        let now = crate::base::clock::now_secs();
        self.change_demands(|demands| {
            let entry = demands.servers.entry(url.to_string()).or_default();
            if entry.scopes != scopes || now.saturating_sub(entry.since) > DEMAND_SECS {
                *entry = StepUp {
                    scopes,
                    sign_ins: 0,
                    since: now,
                };
            }
            entry.clone()
        })
    }

    /// Counts a sign-in made for the standing demand of `url`.
    pub fn count_step_up(&self, url: &str) -> Result<(), TokenStoreError> {
        self.change_demands(|demands| {
            if let Some(step_up) = demands.servers.get_mut(url) {
                step_up.sign_ins = step_up.sign_ins.saturating_add(1);
            }
        })
    }

    /// Takes the lock every antler process takes before refreshing a token (a lock file
    /// beside the credentials), so that a refresh token is used by one of them only and
    /// the others read the rotated one; blocks until it is free.
    fn lock(&self) -> Result<nix::fcntl::Flock<std::fs::File>, TokenStoreError> {
        crate::base::private_file::lock(&self.path).map_err(|e| self.io(e))
    }

    /// The store rmcp's authorization manager uses for the server at `url`.
    pub fn for_server(&self, url: &str) -> ServerCredentials {
        ServerCredentials {
            store: self.clone(),
            url: url.to_string(),
            cached: Arc::default(),
        }
    }
}

/// One server's credentials, for rmcp. Read once and then kept in memory: rmcp loads them
/// for every HTTP request.
#[derive(Clone)]
pub struct ServerCredentials {
    store: TokenStore,
    url: String,
    cached: Arc<Mutex<Option<Option<StoredCredentials>>>>,
}

impl ServerCredentials {
    fn cache(&self) -> std::sync::MutexGuard<'_, Option<Option<StoredCredentials>>> {
        self.cached.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn store_error(err: TokenStoreError) -> AuthError {
    AuthError::CredentialStoreError(err.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        if let Some(cached) = self.cache().clone() {
            return Ok(cached);
        }
        let loaded = self.store.load(&self.url).map_err(store_error)?;
        *self.cache() = Some(loaded.clone());
        Ok(loaded)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.store
            .update(&self.url, Some(credentials.clone()))
            .map_err(store_error)?;
        *self.cache() = Some(Some(credentials));
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store.update(&self.url, None).map_err(store_error)?;
        *self.cache() = Some(None);
        Ok(())
    }

    /// Held by rmcp across load, refresh and save: another process's rotated token is
    /// read from the file, not from this one's memory.
    async fn acquire_refresh_guard(
        &self,
    ) -> Result<Option<rmcp::transport::auth::CredentialRefreshGuard>, AuthError> {
        let store = self.store.clone();
        let locked = tokio::task::spawn_blocking(move || store.lock())
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
            .map_err(store_error)?;
        *self.cache() = None;
        Ok(Some(rmcp::transport::auth::CredentialRefreshGuard::new(
            locked,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[tokio::test]
    async fn credentials_are_kept_per_server_in_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::at(dir.path().join("data/mcp-oauth.json"));
        let a = store.for_server("https://a.example/mcp");
        assert!(a.load().await.unwrap().is_none());
        a.save(StoredCredentials::new(
            "client-a".into(),
            None,
            vec![],
            None,
        ))
        .await
        .unwrap();
        store
            .for_server("https://b.example/mcp")
            .save(StoredCredentials::new(
                "client-b".into(),
                None,
                vec![],
                None,
            ))
            .await
            .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.path()), 0o600);
        assert_eq!(mode(store.path().parent().unwrap()), 0o700);
        let again = TokenStore::at(store.path().to_path_buf());
        assert_eq!(
            again
                .load("https://a.example/mcp")
                .unwrap()
                .unwrap()
                .client_id,
            "client-a"
        );
        assert!(again.remove("https://a.example/mcp").unwrap());
        assert!(again.load("https://a.example/mcp").unwrap().is_none());
        assert_eq!(
            again
                .load("https://b.example/mcp")
                .unwrap()
                .unwrap()
                .client_id,
            "client-b"
        );
        let demand = |scopes: &[&str]| {
            let scopes: Vec<String> = scopes.iter().map(|s| s.to_string()).collect();
            again
                .demand_scopes("https://b.example/mcp", &scopes)
                .unwrap()
        };
        assert_eq!(demand(&["a", "b"]).sign_ins, 0);
        again.count_step_up("https://b.example/mcp").unwrap();
        assert_eq!(
            demand(&["a", "b"]).sign_ins,
            1,
            "the same demand keeps its count"
        );
        assert_eq!(demand(&["c"]).sign_ins, 0, "another demand starts again");
        assert!(again.remove("https://b.example/mcp").unwrap());
        assert_eq!(
            again.step_up("https://b.example/mcp").unwrap(),
            None,
            "logout forgets it"
        );
        std::fs::write(store.path(), "{ nope").unwrap();
        assert!(matches!(
            again.load("x"),
            Err(TokenStoreError::Corrupt { .. })
        ));
    }
}

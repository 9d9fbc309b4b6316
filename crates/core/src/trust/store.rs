//! The trust store: which exact contents of which project files the user has trusted, in
//! `trust.json` in antler's data folder, keyed by the file's absolute path as found,
//! holding the SHA-256 of the trusted content.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The store's file name inside the data folder.
const FILE: &str = "trust.json";
/// The format version written.
const VERSION: u32 = 1;

/// Why the trust store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TrustStoreError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}", path = path.display())]
    Io {
        /// The store file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a trust store antler can read; nothing in it is trusted.
    #[error("{path}: not a trust store antler can read ({message}); nothing in it is trusted", path = path.display())]
    Invalid {
        /// The store file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// A trust store entry, kept under the file's (for a skill, its folder's) absolute path as found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustedFile {
    /// SHA-256 (hex) of the content that was trusted.
    pub sha256: String,
    /// When, in seconds since the Unix epoch.
    pub trusted_at: i64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Contents {
    version: u32,
    #[serde(default)]
    files: BTreeMap<PathBuf, TrustedFile>,
}

/// The trust store at a fixed path. Every operation reads the file again, so that trust
/// given in another terminal (`antler trust`) counts at once.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

impl TrustStore {
    /// The store in `data_dir`.
    pub fn in_dir(data_dir: &Path) -> Self {
        Self {
            path: data_dir.join(FILE),
        }
    }

    /// `trust.json` in the data folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<Contents, TrustStoreError> {
        // A store someone else could have written is not used: a planted entry would run
        // an extensions file's commands.
        let bytes = match crate::base::private_file::read_state(&self.path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(Contents::default()),
            Err(source) => {
                return Err(TrustStoreError::Io {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        let contents: Contents =
            serde_json::from_slice(&bytes).map_err(|e| TrustStoreError::Invalid {
                path: self.path.clone(),
                message: e.to_string(),
            })?;
        if contents.version != VERSION {
            return Err(TrustStoreError::Invalid {
                path: self.path.clone(),
                message: format!("version {} (expected {VERSION})", contents.version),
            });
        }
        Ok(contents)
    }

    /// The trusted entry for `key`, if any (whatever its hash).
    pub fn entry(&self, key: &Path) -> Result<Option<TrustedFile>, TrustStoreError> {
        Ok(self.read()?.files.remove(key))
    }

    /// Every trusted file, by path.
    pub fn list(&self) -> Result<BTreeMap<PathBuf, TrustedFile>, TrustStoreError> {
        Ok(self.read()?.files)
    }

    /// Records `sha256` as the trusted content of `key` (replacing what was trusted
    /// before).
    pub fn trust(&self, key: &Path, sha256: &str) -> Result<(), TrustStoreError> {
        // An unreadable store is reported, never overwritten (it may hold a newer version's
        // entries).
        let mut contents = self.read()?;
        contents.version = VERSION;
        contents.files.insert(
            key.to_path_buf(),
            TrustedFile {
                sha256: sha256.to_string(),
                trusted_at: crate::base::clock::now_unix(),
            },
        );
        self.write(&contents)
    }

    /// Forgets `key`; `Ok(false)` when it was not trusted.
    pub fn revoke(&self, key: &Path) -> Result<bool, TrustStoreError> {
        let mut contents = self.read()?;
        let removed = contents.files.remove(key).is_some();
        if removed {
            self.write(&contents)?;
        }
        Ok(removed)
    }

    /// Writes the whole store (owner-only, never half of it).
    fn write(&self, contents: &Contents) -> Result<(), TrustStoreError> {
        let text = serde_json::to_string_pretty(contents).map_err(|e| TrustStoreError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        crate::base::private_file::write_atomically(&self.path, text.as_bytes()).map_err(|source| {
            TrustStoreError::Io {
                path: self.path.clone(),
                source,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_replace_list_and_revoke() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::in_dir(&dir.path().join("data"));
        let file = Path::new("/p/extensions_config.json");
        assert_eq!(store.entry(file).unwrap(), None);
        store.trust(file, "aa").unwrap();
        assert_eq!(store.entry(file).unwrap().unwrap().sha256, "aa");
        store.trust(file, "bb").unwrap();
        assert_eq!(store.list().unwrap().len(), 1);
        assert_eq!(store.entry(file).unwrap().unwrap().sha256, "bb");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(store.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(store.revoke(file).unwrap());
        assert!(!store.revoke(file).unwrap());
        assert_eq!(store.entry(file).unwrap(), None);
    }

    #[test]
    fn a_broken_store_trusts_nothing_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let store = TrustStore::in_dir(dir.path());
        std::fs::write(store.path(), "{not json").unwrap();
        let err = store.entry(Path::new("/x")).unwrap_err().to_string();
        assert!(
            err.contains("trust.json") && err.contains("nothing in it is trusted"),
            "{err}"
        );
        std::fs::write(store.path(), r#"{"version": 9, "files": {}}"#).unwrap();
        assert!(store.list().unwrap_err().to_string().contains("version 9"));
    }
}

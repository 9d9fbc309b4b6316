//! Tool embeddings kept across runs, so a catalog is embedded once ever: an SQLite file in
//! the data folder mapping the SHA-256 of (model id, text) to the text's vector. The key
//! covers the model, so vectors of another model are never returned; a row that is not a
//! vector of the expected length is ignored (and overwritten by the next save). A server
//! controls only the texts, hence only its own keys.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, params};
use sha2::{Digest, Sha256};

/// The cache's file name in the data folder.
pub const FILE: &str = "embeddings.sqlite";
/// How long a write waits for another process's.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Rows looked up per statement (SQLite's default variable limit is 32,766).
const LOOKUP_CHUNK: usize = 500;

/// A text's key in the cache.
pub type Key = [u8; 32];

/// The key of `text` under the model `model_id`.
pub fn key(model_id: &str, text: &str) -> Key {
    let mut h = Sha256::new();
    h.update((model_id.len() as u64).to_le_bytes());
    h.update(model_id);
    h.update(text);
    h.finalize().into()
}

/// The cache file, opened anew for each load and save.
#[derive(Debug, Clone)]
pub struct EmbeddingCache {
    path: PathBuf,
}

/// Why the cache could not be used (search still works; embeddings are then recomputed).
#[derive(Debug, thiserror::Error)]
#[error("embedding cache {}: {message}", path.display())]
pub struct CacheError {
    path: PathBuf,
    message: String,
}

impl EmbeddingCache {
    /// The cache at `path` (created on first save).
    pub fn at(path: PathBuf) -> Self {
        Self { path }
    }

    /// Where it is (it may not exist before the first save).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, e: impl std::fmt::Display) -> CacheError {
        CacheError {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    fn open(&self) -> Result<Connection, CacheError> {
        // SQLite's no-follow refuses a symlink anywhere in the path: the folder is resolved
        // first, so only a symlinked file itself is refused.
        let dir = match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        antler_base::private_file::create_dir(dir).map_err(|e| self.error(e))?;
        let name = self
            .path
            .file_name()
            .ok_or_else(|| self.error("not a file path"))?;
        let path = dir.canonicalize().map_err(|e| self.error(e))?.join(name);
        // A symlink planted in the data folder must not make antler write elsewhere.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NOFOLLOW
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        antler_base::private_file::create_file(&path).map_err(|e| self.error(e))?;
        let conn = Connection::open_with_flags(&path, flags).map_err(|e| self.error(e))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| self.error(e))?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL) \
             WITHOUT ROWID;",
        )
        .map_err(|e| self.error(e))?;
        Ok(conn)
    }

    /// The cached vectors of `keys` that have `dims` components. A missing file is an empty
    /// cache.
    pub fn load(&self, keys: &[Key], dims: usize) -> Result<HashMap<Key, Vec<f32>>, CacheError> {
        let mut found = HashMap::new();
        if keys.is_empty() || !self.path.exists() {
            return Ok(found);
        }
        let conn = self.open()?;
        for chunk in keys.chunks(LOOKUP_CHUNK) {
            let marks = vec!["?"; chunk.len()].join(",");
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT key, vector FROM vectors WHERE key IN ({marks})"
                ))
                .map_err(|e| self.error(e))?;
            let rows = stmt
                .query_map(rusqlite::params_from_iter(chunk.iter()), |row| {
                    Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, Vec<u8>>(1)?))
                })
                .map_err(|e| self.error(e))?;
            for row in rows {
                let (key, bytes) = row.map_err(|e| self.error(e))?;
                let (Ok(key), true) = (Key::try_from(key), bytes.len() == dims * 4) else {
                    continue;
                };
                let vector: Vec<f32> = bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                // Only what the encoder can produce: a unit vector, or zeros for a text
                // without tokens. Anything else was not written by it.
                let norm: f32 = vector.iter().map(|v| v * v).sum();
                if vector.iter().all(|v| v.is_finite())
                    && (norm == 0.0 || (norm - 1.0).abs() < 1e-3)
                {
                    found.insert(key, vector);
                }
            }
        }
        Ok(found)
    }

    /// Saves `vectors` in one transaction.
    pub fn save<'a>(
        &self,
        vectors: impl IntoIterator<Item = (&'a Key, &'a [f32])>,
    ) -> Result<(), CacheError> {
        let mut conn = self.open()?;
        let tx = conn.transaction().map_err(|e| self.error(e))?;
        {
            let mut stmt = tx
                .prepare("INSERT OR REPLACE INTO vectors (key, vector) VALUES (?1, ?2)")
                .map_err(|e| self.error(e))?;
            for (key, vector) in vectors {
                let bytes: Vec<u8> = vector.iter().flat_map(|v| v.to_le_bytes()).collect();
                stmt.execute(params![&key[..], bytes])
                    .map_err(|e| self.error(e))?;
            }
        }
        tx.commit().map_err(|e| self.error(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_vectors_load_by_model_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let cache = EmbeddingCache::at(dir.path().join("sub/embeddings.sqlite"));
        let (a, b) = (key("m1", "weather"), key("m2", "weather"));
        assert_ne!(a, b, "the model is part of the key");
        assert!(cache.load(&[a], 2).unwrap().is_empty(), "no file yet");
        cache.save([(&a, &[0.6f32, 0.8][..])]).unwrap();
        let got = cache.load(&[a, b], 2).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[&a], [0.6, 0.8]);
        // Rows no encoder wrote (not unit length, not finite) are ignored.
        cache
            .save([(&b, &[3.0f32, 4.0][..]), (&a, &[f32::NAN, 0.0][..])])
            .unwrap();
        assert!(cache.load(&[a, b], 2).unwrap().is_empty());
        cache.save([(&a, &[0.6f32, 0.8][..])]).unwrap();
        // A row of the wrong length (another model's dims, a damaged row) is ignored.
        assert!(cache.load(&[a], 3).unwrap().is_empty());
        // Many keys are looked up in chunks.
        let keys: Vec<Key> = (0..1_200).map(|i| key("m1", &i.to_string())).collect();
        let vectors: Vec<[f32; 2]> = (0..1_200)
            .map(|i| {
                let a = i as f32 / 1_200.0;
                [a, (1.0 - a * a).sqrt()]
            })
            .collect();
        cache
            .save(keys.iter().zip(vectors.iter().map(|v| &v[..])))
            .unwrap();
        let got = cache.load(&keys, 2).unwrap();
        assert_eq!(got.len(), 1_200);
        assert_eq!(got[&keys[1_100]], vectors[1_100]);
    }

    #[test]
    fn a_symlinked_folder_on_the_way_is_fine() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("home")).unwrap();
        let cache = EmbeddingCache::at(dir.path().join("home/data/embeddings.sqlite"));
        let k = key("m", "t");
        cache.save([(&k, &[1.0f32][..])]).unwrap();
        assert_eq!(cache.load(&[k], 1).unwrap()[&k], [1.0]);
    }

    #[test]
    fn a_symlinked_cache_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "").unwrap();
        let path = dir.path().join("embeddings.sqlite");
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let cache = EmbeddingCache::at(path);
        assert!(cache.save([(&key("m", "t"), &[1.0f32][..])]).is_err());
        assert_eq!(std::fs::read(&elsewhere).unwrap(), b"");
    }

    #[test]
    fn a_file_that_is_not_a_database_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("embeddings.sqlite");
        std::fs::write(
            &path,
            "not sqlite at all, just some text that is long enough",
        )
        .unwrap();
        let cache = EmbeddingCache::at(path);
        let err = cache.load(&[key("m", "t")], 2).unwrap_err().to_string();
        assert!(err.contains("embedding cache"), "{err}");
    }
}

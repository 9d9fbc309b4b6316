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
pub(crate) enum OutputFileError {
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
pub(crate) struct OutputFile {
    path: PathBuf,
    target: Target,
}

#[derive(Debug)]
enum Target {
    /// A regular file (or none yet) in a folder opened at start, created with `mode`.
    InFolder {
        folder_path: PathBuf,
        folder: OwnedFd,
        name: OsString,
        mode: u32,
    },
    /// A stream opened at start (`/dev/stdout`, `/dev/null`, a pipe such as `>(cmd)`):
    /// what is written there does not stay in a file a later run reads.
    Stream(File),
}

impl OutputFile {
    /// Opens the folder of `path` now (a regular file there is created with `mode`, before
    /// the umask), and refuses a file that is already a link to a file or not a regular
    /// file (better said before the run than after it). A device or a pipe, named or
    /// linked to, is opened now.
    pub(crate) fn at_start(path: &Path, mode: u32) -> Result<Self, OutputFileError> {
        let stream = |meta: &std::fs::Metadata| {
            use std::os::unix::fs::FileTypeExt;
            meta.file_type().is_char_device() || meta.file_type().is_fifo()
        };
        let target = match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => match std::fs::metadata(path) {
                Ok(meta) if stream(&meta) => Target::Stream(open_stream(path)?),
                _ => return Err(OutputFileError::Link),
            },
            Ok(meta) if stream(&meta) => Target::Stream(open_stream(path)?),
            Ok(meta) if !meta.is_file() => {
                return Err(OutputFileError::NotRegular(
                    crate::base::bounded_read::kind_of(&meta),
                ));
            }
            _ => in_folder(path, mode)?,
        };
        Ok(Self {
            path: path.to_path_buf(),
            target,
        })
    }

    /// The path as named.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Creates (or empties) the file in the folder opened at start and returns it, open
    /// for writing (a stream opened at start: a handle to it).
    pub(crate) fn create(&self) -> Result<File, OutputFileError> {
        let (folder, name, mode) = match &self.target {
            Target::Stream(file) => return Ok(file.try_clone()?),
            Target::InFolder {
                folder, name, mode, ..
            } => (folder, name, *mode),
        };
        self.same_folder()?;
        let flags = OFlag::O_WRONLY
            | OFlag::O_CREAT
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_NOCTTY
            | OFlag::O_CLOEXEC;
        let file = File::from(openat(
            folder,
            name.as_os_str(),
            flags,
            Mode::from_bits_truncate(mode),
        )?);
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(OutputFileError::NotRegular(
                crate::base::bounded_read::kind_of(&meta),
            ));
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
    pub(crate) fn write(&self, bytes: &[u8]) -> Result<(), OutputFileError> {
        let mut file = self.create()?;
        file.write_all(bytes)?;
        Ok(())
    }

    /// Whether the folder's path still leads to the folder opened at start.
    fn same_folder(&self) -> Result<(), OutputFileError> {
        let Target::InFolder {
            folder_path,
            folder,
            ..
        } = &self.target
        else {
            return Ok(());
        };
        let opened = fstat(folder)?;
        let now = std::fs::metadata(folder_path);
        let same = now.is_ok_and(|meta| {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino()) == (opened.st_dev, opened.st_ino)
        });
        if same {
            Ok(())
        } else {
            Err(OutputFileError::Moved(folder_path.clone()))
        }
    }
}

/// The folder of `path`, opened now.
fn in_folder(path: &Path, mode: u32) -> Result<Target, OutputFileError> {
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
    Ok(Target::InFolder {
        folder_path,
        folder,
        name,
        mode,
    })
}

/// A device or pipe opened for writing without blocking on a pipe nobody reads (refused),
/// then made blocking again for the writes.
fn open_stream(path: &Path) -> Result<File, OutputFileError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ENXIO) => OutputFileError::Io(std::io::Error::other(
                "it is a pipe nobody reads, so nothing can be written to it",
            )),
            _ => OutputFileError::Io(err),
        })?;
    let flags = nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_GETFL)?;
    let blocking = OFlag::from_bits_truncate(flags) - OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETFL(blocking))?;
    Ok(file)
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
        let file = OutputFile::at_start(&path, 0o666).unwrap();
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
            OutputFile::at_start(&path, 0o666),
            Err(OutputFileError::Link)
        ));
    }

    #[test]
    fn a_device_or_a_stream_named_at_start_is_written_to() {
        let dir = tempfile::tempdir().unwrap();
        OutputFile::at_start(Path::new("/dev/null"), 0o666)
            .unwrap()
            .write(b"gone")
            .unwrap();
        let link = dir.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        OutputFile::at_start(&link, 0o666)
            .unwrap()
            .write(b"gone")
            .unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = OutputFile::at_start(&fifo, 0o666).unwrap_err();
        assert!(err.to_string().contains("a pipe nobody reads"), "{err}");
    }

    #[test]
    fn a_folder_swapped_for_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&out).unwrap();
        std::fs::create_dir(&elsewhere).unwrap();
        let file = OutputFile::at_start(&out.join("answer.txt"), 0o666).unwrap();
        std::fs::rename(&out, dir.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &out).unwrap();
        let err = file.write(b"x").unwrap_err();
        assert!(matches!(err, OutputFileError::Moved(_)), "{err}");
        assert!(!elsewhere.join("answer.txt").exists());
    }
}

//! Opening files for the file tools: regular files only. A named pipe blocks `open` until
//! a writer appears (forever, for a pipe nobody writes), and a device or socket is not
//! something to read as text or overwrite; each is refused at once.

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Why a file was not opened; the message is for the model, with the path as it wrote it.
pub(crate) fn not_regular(path: &str, meta: &std::fs::Metadata) -> String {
    let kind = crate::base::bounded_read::kind_of(meta);
    if meta.is_dir() {
        format!("Error: `{path}` is a directory, not a file; use `ls` to list it")
    } else {
        format!(
            "Error: `{path}` is {kind}, not a regular file; file tools read and write regular \
             files only"
        )
    }
}

/// Opens `target` for reading if it is a regular file. The open cannot block: it is made
/// non-blocking, and the file opened must be the regular file that was checked (a swap
/// for a pipe in between is caught).
pub(crate) fn open_read(target: &Path, shown: &str) -> Result<File, OpenError> {
    use crate::base::bounded_read::Refused;
    crate::base::bounded_read::open_regular(target).map_err(|refused| match refused {
        Refused::NotRegular(meta) => OpenError::NotRegular(not_regular(shown, &meta)),
        Refused::Changed => OpenError::NotRegular(format!(
            "Error: `{shown}` changed while it was being opened; try again"
        )),
        Refused::Io(err) => OpenError::Io(err),
    })
}

/// Opens `target` for writing (created if missing, emptied if it exists) if it is, or will
/// be, a regular file. A pipe without a reader fails the non-blocking open at once; one
/// with a reader is refused before anything is written.
pub(crate) fn open_write(target: &Path, shown: &str) -> Result<File, OpenError> {
    match std::fs::metadata(target) {
        Ok(meta) if !meta.is_file() => {
            return Err(OpenError::NotRegular(not_regular(shown, &meta)));
        }
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(OpenError::Io(e)),
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(target)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENXIO) => OpenError::NotRegular(format!(
                "Error: `{shown}` is a named pipe, not a regular file; file tools read and \
                 write regular files only"
            )),
            _ => OpenError::Io(e),
        })?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    if !meta.is_file() {
        return Err(OpenError::NotRegular(not_regular(shown, &meta)));
    }
    // Emptied only now that it is known to be a regular file.
    file.set_len(0).map_err(OpenError::Io)?;
    Ok(file)
}

/// Why [`open_read`] or [`open_write`] failed.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// Not a regular file: the message for the model.
    NotRegular(String),
    /// Another I/O error.
    Io(std::io::Error),
}

impl OpenError {
    /// The message for the model; `action` ("read", "write") phrases an I/O error.
    pub(crate) fn message(self, action: &str, shown: &str) -> String {
        match self {
            Self::NotRegular(message) => message,
            Self::Io(e) => super::common::io_error(action, shown, &e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    fn fifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn pipes_sockets_devices_and_dirs_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = dir.path().join("pipe");
        fifo(&pipe);
        let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
        for (path, kind) in [
            (pipe.clone(), "a named pipe"),
            (dir.path().join("sock"), "a socket"),
            (Path::new("/dev/null").to_path_buf(), "a device"),
        ] {
            let Err(OpenError::NotRegular(msg)) = open_read(&path, "p") else {
                panic!("{} was opened for reading", path.display());
            };
            assert!(msg.contains(kind), "{msg}");
            let Err(OpenError::NotRegular(msg)) = open_write(&path, "p") else {
                panic!("{} was opened for writing", path.display());
            };
            assert!(msg.contains(kind), "{msg}");
        }
        let Err(OpenError::NotRegular(msg)) = open_read(dir.path(), "d") else {
            panic!("a directory was opened");
        };
        assert!(msg.contains("is a directory"), "{msg}");
    }

    #[test]
    fn regular_files_read_and_write_as_usual() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let Ok(mut file) = open_write(&path, "f") else {
            panic!("not created");
        };
        file.write_all(b"hello").unwrap();
        drop(file);
        let Ok(mut file) = open_write(&path, "f") else {
            panic!("not opened");
        };
        file.write_all(b"hi").unwrap();
        drop(file);
        let mut text = String::new();
        let Ok(mut file) = open_read(&path, "f") else {
            panic!("not opened");
        };
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "hi", "an existing file is emptied first");
    }
}

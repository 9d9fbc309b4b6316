//! Reading files that antler did not write itself (a cloned project's `config.yaml`, a
//! state file another process may have swapped) within a bound, regular files only: a
//! 3 GiB sparse file costs a clear error instead of the machine's memory, and a named pipe
//! or a device in its place cannot hang or flood the read.

use std::fs::{File, Metadata};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The most of a configuration file antler reads (`config.yaml`, an extensions file,
/// `.env`): a real one holds a few kilobytes.
pub const CONFIG_BYTES: u64 = 4 << 20;
/// The most of one of antler's state files (`trust.json`, `approvals.json`).
pub const STATE_BYTES: u64 = 16 << 20;

/// Why a file was not opened.
#[derive(Debug)]
pub enum Refused {
    /// It is not a regular file.
    NotRegular(Box<Metadata>),
    /// It changed between the check and the open (swapped for something else).
    Changed,
    /// Another I/O error.
    Io(std::io::Error),
}

impl From<Refused> for std::io::Error {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::NotRegular(meta) => std::io::Error::new(
                ErrorKind::InvalidInput,
                format!("it is {}, not a regular file", kind_of(&meta)),
            ),
            Refused::Changed => std::io::Error::new(
                ErrorKind::InvalidInput,
                "it changed while it was being opened",
            ),
            Refused::Io(err) => err,
        }
    }
}

/// What a path is when it is not a regular file, in words.
pub fn kind_of(meta: &Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Opens `path` (links followed) for reading if it is a regular file. The open cannot
/// block, and the file opened must be the one checked, so a swap for a pipe in between is
/// caught.
pub fn open_regular(path: &Path) -> Result<File, Refused> {
    let checked = std::fs::metadata(path).map_err(Refused::Io)?;
    if !checked.is_file() {
        return Err(Refused::NotRegular(Box::new(checked)));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)
        .map_err(Refused::Io)?;
    let opened = file.metadata().map_err(Refused::Io)?;
    if !opened.is_file() {
        return Err(Refused::NotRegular(Box::new(opened)));
    }
    if (opened.dev(), opened.ino()) != (checked.dev(), checked.ino()) {
        return Err(Refused::Changed);
    }
    Ok(file)
}

/// The regular file `path` whole, if it holds at most `limit` bytes; `what` names the kind
/// of file in the error ("a config file"). Never reads more than `limit` and one byte.
pub fn read(path: &Path, limit: u64, what: &str) -> std::io::Result<Vec<u8>> {
    read_open(open_regular(path)?, limit, what)
}

/// [`read`] of a file already opened (and checked).
pub fn read_open(file: File, limit: u64, what: &str) -> std::io::Result<Vec<u8>> {
    let size = file.metadata()?.len();
    let too_large = |size: u64| {
        std::io::Error::new(
            ErrorKind::FileTooLarge,
            format!(
                "it holds {}, more than the {} antler reads of {what}, so it is not read",
                shown_size(size),
                shown_size(limit)
            ),
        )
    };
    if size > limit {
        return Err(too_large(size));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        // It grew while it was read.
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text.
pub fn read_to_string(path: &Path, limit: u64, what: &str) -> std::io::Result<String> {
    String::from_utf8(read(path, limit, what)?)
        .map_err(|_| std::io::Error::new(ErrorKind::InvalidData, "it is not UTF-8 text"))
}

/// A size in bytes as people read it: `512 B`, `4 MiB`, `3.0 GiB`.
pub fn shown_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_bound_is_refused_by_its_size_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        let file = File::create(&path).unwrap();
        // Sparse: 3 GiB on paper, nothing on disk; reading it would take 3 GiB of memory.
        file.set_len(3 << 30).unwrap();
        let err = read(&path, CONFIG_BYTES, "a config file").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::FileTooLarge);
        assert_eq!(
            err.to_string(),
            "it holds 3 GiB, more than the 4 MiB antler reads of a config file, so it is not read"
        );
        std::fs::write(&path, "models: []\n").unwrap();
        assert_eq!(read(&path, CONFIG_BYTES, "x").unwrap(), b"models: []\n");
    }

    #[test]
    fn pipes_devices_and_folders_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("extensions_config.json");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = read(&fifo, CONFIG_BYTES, "x").unwrap_err();
        assert_eq!(err.to_string(), "it is a named pipe, not a regular file");
        let err = read(Path::new("/dev/zero"), CONFIG_BYTES, "x").unwrap_err();
        assert_eq!(err.to_string(), "it is a device, not a regular file");
        let link = dir.path().join(".env");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(read(&link, CONFIG_BYTES, "x").is_err());
        let err = read(dir.path(), CONFIG_BYTES, "x").unwrap_err();
        assert_eq!(err.to_string(), "it is a directory, not a regular file");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(shown_size(512), "512 B");
        assert_eq!(shown_size(4 << 20), "4 MiB");
        assert_eq!(shown_size(1536), "1.5 KiB");
        assert_eq!(shown_size(3 << 30), "3 GiB");
    }
}

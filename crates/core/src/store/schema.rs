//! Opening the database file: connection settings shared by every antler process, and the
//! schema, versioned with `PRAGMA user_version`.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, TransactionBehavior};

use super::StoreError;

/// The schema version this build writes and understands.
pub(super) const SCHEMA_VERSION: i64 = 1;

/// How long a statement waits for another process's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Version 1: threads with their state and usage totals, and their messages in order.
const SCHEMA_V1: &str = "
CREATE TABLE threads (
    id TEXT PRIMARY KEY NOT NULL,
    cwd TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    state_json TEXT NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    cached_input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE messages (
    thread_id TEXT NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    json TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID;
CREATE INDEX threads_by_cwd ON threads(cwd, updated_at);
";

/// Turns a SQLite error about `path` into a [`StoreError`], recognising a file that is not
/// a database.
pub(super) fn sqlite_error(path: &Path, source: rusqlite::Error) -> StoreError {
    match source.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => StoreError::NotADatabase {
            path: path.to_path_buf(),
        },
        _ => StoreError::Sqlite {
            path: path.to_path_buf(),
            source,
        },
    }
}

/// Opens (creating if needed) the database at `path`, configured for several processes at
/// once, with the current schema.
pub(super) fn open(path: &Path) -> Result<Connection, StoreError> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        crate::base::private_file::create_dir(dir).map_err(|source| StoreError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    // Created owner-only before SQLite opens it, which gives its WAL and shared-memory files
    // the same mode: the text of every conversation is in them.
    crate::base::private_file::create_file(path).map_err(|source| StoreError::CreateFile {
        path: path.to_path_buf(),
        source,
    })?;
    let sql = |source| sqlite_error(path, source);
    let mut conn = Connection::open(path).map_err(sql)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
    // The first statement that reads the file: a non-database fails here. Switching a new
    // file to WAL needs its exclusive lock, and SQLite reports a concurrent opener as busy
    // at once instead of waiting: so this waits here.
    let mode: String =
        when_not_busy(|| conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)))
            .map_err(sql)?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(path = %path.display(), mode, "the thread database is not in WAL mode");
    }
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sql)?;
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(sql)?;
    migrate(&mut conn, path)?;
    Ok(conn)
}

/// Runs `statement` until it does not fail with `SQLITE_BUSY`, for at most
/// [`BUSY_TIMEOUT`]: for the statements SQLite does not retry under its busy timeout.
fn when_not_busy<T>(mut statement: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let started = std::time::Instant::now();
    loop {
        match statement() {
            Err(err)
                if err.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            result => return result,
        }
    }
}

/// The file's schema version.
fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Brings the schema to [`SCHEMA_VERSION`], refusing a database from a newer antler. The
/// write lock is taken only when there is something to do, and the version is read again
/// under it, so two processes opening a new file at once create the schema once.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let sql = |source| sqlite_error(path, source);
    let too_new = |found| StoreError::TooNew {
        path: path.to_path_buf(),
        found,
        supported: SCHEMA_VERSION,
    };
    let found = user_version(conn).map_err(sql)?;
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    if found > SCHEMA_VERSION {
        return Err(too_new(found));
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    let found = user_version(&tx).map_err(sql)?;
    if found > SCHEMA_VERSION {
        return Err(too_new(found));
    }
    if found < 1 {
        tx.execute_batch(SCHEMA_V1).map_err(sql)?;
    }
    if found < SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(sql)?;
        tracing::debug!(path = %path.display(), from = found, to = SCHEMA_VERSION, "thread database schema updated");
    }
    tx.commit().map_err(sql)
}

//! Persistent threads: one SQLite file that every antler process shares, holding each
//! thread's messages, state and token usage, so a conversation can be listed, shown and
//! resumed later, and a process killed mid-turn loses at most the model call under way.

mod error;
mod ids;
mod schema;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde::Serialize;

pub use error::StoreError;

use crate::agent::runner::{SaveError, Thread, ThreadSink};
use crate::agent::state::ThreadState;
use crate::base::clock::now_unix;
use crate::config::EnvLookup;
use crate::protocol::Message;
use crate::protocol::{ThreadMeta, Usage};

/// The database's file name inside the data directory.
const DB_FILE: &str = "threads.db";

/// The longest title [`title_from`] makes, in characters, ellipsis included.
const TITLE_MAX: usize = 60;

/// Where the thread database lives: `$ANTLER_DATA_DIR/threads.db` when that is set (for
/// tests and portable setups), else `$XDG_DATA_HOME/antler/threads.db` (an absolute
/// `XDG_DATA_HOME` only, as the XDG spec asks), else `$HOME/.local/share/antler/threads.db`.
pub fn default_path(env: EnvLookup<'_>) -> Result<PathBuf, StoreError> {
    crate::config::dirs::data_dir(env)
        .map(|dir| dir.join(DB_FILE))
        .ok_or(StoreError::NoDataDir)
}

/// A thread's title from the user's first message: its first non-empty line with
/// whitespace collapsed, cut to 60 characters (the last one an ellipsis) so it fits a
/// listing row.
pub fn title_from(text: &str) -> String {
    let line = text
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
        .find(|line| !line.is_empty())
        .unwrap_or_default();
    if line.chars().count() <= TITLE_MAX {
        return line;
    }
    let mut cut: String = line.chars().take(TITLE_MAX - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// A whole thread, as needed to resume or show it (`--json` prints it as stored).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredThread {
    /// Its listing data.
    pub meta: ThreadMeta,
    /// Its messages, oldest first.
    pub messages: Vec<Message>,
    /// Its state (promoted tools and their use).
    pub state: ThreadState,
}

/// The thread database. One handle per process is enough; several processes may open the
/// same file at once (WAL mode and a busy timeout let them take turns writing).
#[derive(Debug)]
pub struct ThreadStore {
    /// The database file, for errors.
    path: PathBuf,
    /// The connection; a mutex so the store can be shared between tasks.
    conn: Mutex<Connection>,
}

/// The columns of a [`ThreadMeta`], in the order [`meta_from_row`] reads them.
const META_COLUMNS: &str = "id, title, cwd, model, created_at, updated_at, input_tokens, \
     cached_input_tokens, output_tokens, \
     (SELECT COUNT(*) FROM messages m WHERE m.thread_id = threads.id)";

/// Newest first; for equal seconds, the later created.
const NEWEST_FIRST: &str = "ORDER BY updated_at DESC, rowid DESC";

impl ThreadStore {
    /// Opens the database at `path`, creating it and its directory if needed and bringing
    /// its schema up to date.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = schema::open(path)?;
        tracing::debug!(path = %path.display(), "thread database opened");
        Ok(Self {
            path: path.to_path_buf(),
            conn: Mutex::new(conn),
        })
    }

    /// The database file, for messages that say where threads are kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Starts an empty, untitled thread.
    pub fn create(&self, cwd: &Path, model: &str) -> Result<ThreadMeta, StoreError> {
        let id = ids::new_id();
        let state = self.encode(&id, "state", &ThreadState::default())?;
        let now = now_unix();
        let cwd_text = cwd.to_string_lossy();
        self.conn()
            .execute(
                "INSERT INTO threads (id, cwd, model, created_at, updated_at, state_json) \
                 VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                params![id, cwd_text, model, now, state],
            )
            .map_err(|e| self.sql(e))?;
        tracing::debug!(%id, "thread created");
        Ok(ThreadMeta {
            id,
            title: String::new(),
            cwd: PathBuf::from(cwd_text.into_owned()),
            model: model.to_string(),
            created_at: now,
            updated_at: now,
            usage: Usage::default(),
            message_count: 0,
        })
    }

    /// Stores `messages` at positions `start_seq..` and replaces the thread's state and
    /// usage totals, all in one transaction: if any position is taken, nothing is written.
    /// Called after each model reply and each batch of tool results.
    pub fn append(
        &self,
        id: &str,
        start_seq: usize,
        messages: &[Message],
        state: &ThreadState,
        usage: &Usage,
    ) -> Result<(), StoreError> {
        let rows = self.encode_messages(id, start_seq, messages)?;
        let state = self.encode(id, "state", state)?;
        let mut conn = self.conn();
        let tx = self.write(&mut conn)?;
        self.update_thread(&tx, id, &state, usage)?;
        self.insert_messages(&tx, id, &rows)?;
        tx.commit().map_err(|e| self.sql(e))
    }

    /// Replaces the whole message list (after summarisation), the state and the usage
    /// totals, in one transaction.
    pub fn replace_messages(
        &self,
        id: &str,
        messages: &[Message],
        state: &ThreadState,
        usage: &Usage,
    ) -> Result<(), StoreError> {
        let rows = self.encode_messages(id, 0, messages)?;
        let state = self.encode(id, "state", state)?;
        let mut conn = self.conn();
        let tx = self.write(&mut conn)?;
        self.update_thread(&tx, id, &state, usage)?;
        tx.execute("DELETE FROM messages WHERE thread_id = ?1", [id])
            .map_err(|e| self.sql(e))?;
        self.insert_messages(&tx, id, &rows)?;
        tx.commit().map_err(|e| self.sql(e))
    }

    /// Sets the title listings show.
    pub fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError> {
        let changed = self
            .conn()
            .execute(
                "UPDATE threads SET title = ?2 WHERE id = ?1",
                params![id, title],
            )
            .map_err(|e| self.sql(e))?;
        found(changed, id)
    }

    /// The full id of the one thread whose id is or starts with `id_or_prefix` (at least 4
    /// characters, case-insensitive), so people can type a short prefix.
    pub fn resolve(&self, id_or_prefix: &str) -> Result<String, StoreError> {
        self.resolve_in(&self.conn(), id_or_prefix)
    }

    /// The thread whose id is or starts with `id_or_prefix` (see [`Self::resolve`]), with
    /// its messages and state, read as one consistent snapshot.
    pub fn load(&self, id_or_prefix: &str) -> Result<StoredThread, StoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.sql(e))?;
        let id = self.resolve_in(&tx, id_or_prefix)?;
        let (meta, state_json) = tx
            .query_row(
                &format!("SELECT {META_COLUMNS}, state_json FROM threads WHERE id = ?1"),
                [&id],
                |row| Ok((meta_from_row(row)?, row.get::<_, String>(10)?)),
            )
            .optional()
            .map_err(|e| self.sql(e))?
            .ok_or_else(|| StoreError::NotFound(id.clone()))?;
        let state = serde_json::from_str(&state_json)
            .map_err(|source| self.corrupt(&id, "state".into(), source))?;
        let mut statement = tx
            .prepare("SELECT seq, json FROM messages WHERE thread_id = ?1 ORDER BY seq")
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([&id], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(|e| self.sql(e))?;
        let mut messages = Vec::with_capacity(meta.message_count);
        for row in rows {
            let (seq, json) = row.map_err(|e| self.sql(e))?;
            let message = serde_json::from_str(&json)
                .map_err(|source| self.corrupt(&id, format!("message {seq}"), source))?;
            messages.push(message);
        }
        Ok(StoredThread {
            meta,
            messages,
            state,
        })
    }

    /// The most recently updated thread started in exactly `cwd`, to resume by default.
    pub fn latest_in(&self, cwd: &Path) -> Result<Option<ThreadMeta>, StoreError> {
        self.conn()
            .query_row(
                &format!(
                    "SELECT {META_COLUMNS} FROM threads WHERE cwd = ?1 {NEWEST_FIRST} LIMIT 1"
                ),
                [cwd.to_string_lossy()],
                meta_from_row,
            )
            .optional()
            .map_err(|e| self.sql(e))
    }

    /// Up to `limit` threads (all when `None`), most recently updated first.
    pub fn list(&self, limit: Option<usize>) -> Result<Vec<ThreadMeta>, StoreError> {
        // SQLite reads a negative LIMIT as "no limit".
        let limit = limit.map_or(-1, to_i64);
        let conn = self.conn();
        let mut statement = conn
            .prepare(&format!(
                "SELECT {META_COLUMNS} FROM threads {NEWEST_FIRST} LIMIT ?1"
            ))
            .map_err(|e| self.sql(e))?;
        let rows = statement
            .query_map([limit], meta_from_row)
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Deletes the thread with exactly this id if it has no message (a run that never
    /// started); whether it did. Checked in the statement itself, so a thread another
    /// process has written to meanwhile is kept.
    pub fn forget_empty(&self, id: &str) -> Result<bool, StoreError> {
        let changed = self
            .conn()
            .execute(
                "DELETE FROM threads WHERE id = ?1 \
                 AND NOT EXISTS (SELECT 1 FROM messages WHERE thread_id = ?1)",
                [id],
            )
            .map_err(|e| self.sql(e))?;
        if changed > 0 {
            tracing::debug!(%id, "empty thread deleted");
        }
        Ok(changed > 0)
    }

    /// The connection. A panic while it was held cannot leave a transaction open (the
    /// transaction rolls back on drop), so a poisoned lock is safe to use.
    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A write transaction that takes the lock up front, so it waits for other processes
    /// (up to the busy timeout) instead of failing when it first writes.
    fn write<'c>(&self, conn: &'c mut Connection) -> Result<Transaction<'c>, StoreError> {
        conn.transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.sql(e))
    }

    /// See [`Self::resolve`].
    fn resolve_in(&self, conn: &Connection, id_or_prefix: &str) -> Result<String, StoreError> {
        let prefix = id_or_prefix.trim().to_ascii_lowercase();
        if prefix.chars().count() < ids::MIN_PREFIX {
            return Err(StoreError::PrefixTooShort(id_or_prefix.to_string()));
        }
        let mut statement = conn
            .prepare("SELECT id FROM threads WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id")
            .map_err(|e| self.sql(e))?;
        let mut candidates: Vec<String> = statement
            .query_map([&prefix], |row| row.get(0))
            .map_err(|e| self.sql(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.sql(e))?;
        match candidates.len() {
            0 => Err(StoreError::NotFound(id_or_prefix.to_string())),
            1 => Ok(candidates.remove(0)),
            _ => Err(StoreError::Ambiguous {
                prefix: id_or_prefix.to_string(),
                candidates,
            }),
        }
    }

    /// Replaces a thread's state and usage and stamps it as updated now.
    fn update_thread(
        &self,
        tx: &Transaction<'_>,
        id: &str,
        state_json: &str,
        usage: &Usage,
    ) -> Result<(), StoreError> {
        let changed = tx
            .execute(
                "UPDATE threads SET state_json = ?2, input_tokens = ?3, \
                 cached_input_tokens = ?4, output_tokens = ?5, updated_at = ?6 WHERE id = ?1",
                params![
                    id,
                    state_json,
                    u64_to_i64(usage.input_tokens),
                    u64_to_i64(usage.cached_input_tokens),
                    u64_to_i64(usage.output_tokens),
                    now_unix(),
                ],
            )
            .map_err(|e| self.sql(e))?;
        found(changed, id)
    }

    /// Inserts encoded messages; a position already taken is a [`StoreError::SeqConflict`].
    fn insert_messages(
        &self,
        tx: &Transaction<'_>,
        id: &str,
        rows: &[(usize, String)],
    ) -> Result<(), StoreError> {
        let mut statement = tx
            .prepare("INSERT INTO messages (thread_id, seq, json) VALUES (?1, ?2, ?3)")
            .map_err(|e| self.sql(e))?;
        for (seq, json) in rows {
            statement
                .execute(params![id, to_i64(*seq), json])
                .map_err(|e| match e.sqlite_error().map(|e| e.extended_code) {
                    Some(rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY) => StoreError::SeqConflict {
                        path: self.path.clone(),
                        id: id.to_string(),
                        seq: *seq,
                    },
                    _ => self.sql(e),
                })?;
        }
        Ok(())
    }

    /// Each message as JSON with its position, before any lock is taken.
    fn encode_messages(
        &self,
        id: &str,
        start_seq: usize,
        messages: &[Message],
    ) -> Result<Vec<(usize, String)>, StoreError> {
        messages
            .iter()
            .enumerate()
            .map(|(i, message)| {
                let seq = start_seq + i;
                self.encode(id, &format!("message {seq}"), message)
                    .map(|json| (seq, json))
            })
            .collect()
    }

    /// `value` as JSON, the error naming what it was.
    fn encode(&self, id: &str, what: &str, value: &impl Serialize) -> Result<String, StoreError> {
        serde_json::to_string(value).map_err(|source| StoreError::Encode {
            path: self.path.clone(),
            id: id.to_string(),
            what: what.to_string(),
            source,
        })
    }

    /// A SQLite error about this store's file.
    fn sql(&self, source: rusqlite::Error) -> StoreError {
        schema::sqlite_error(&self.path, source)
    }

    /// A stored value of thread `id` that does not parse.
    fn corrupt(&self, id: &str, what: String, source: serde_json::Error) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            id: id.to_string(),
            what,
            source,
        }
    }
}

/// `NotFound` when a statement keyed by `id` changed no row.
fn found(changed: usize, id: &str) -> Result<(), StoreError> {
    if changed == 0 {
        return Err(StoreError::NotFound(id.to_string()));
    }
    Ok(())
}

/// Reads the [`META_COLUMNS`].
fn meta_from_row(row: &Row<'_>) -> rusqlite::Result<ThreadMeta> {
    let tokens = |i| row.get::<_, i64>(i).map(|n| u64::try_from(n).unwrap_or(0));
    Ok(ThreadMeta {
        id: row.get(0)?,
        title: row.get(1)?,
        cwd: PathBuf::from(row.get::<_, String>(2)?),
        model: row.get(3)?,
        created_at: row.get(4)?,
        updated_at: row.get(5)?,
        usage: Usage {
            input_tokens: tokens(6)?,
            cached_input_tokens: tokens(7)?,
            output_tokens: tokens(8)?,
        },
        message_count: usize::try_from(row.get::<_, i64>(9)?).unwrap_or(0),
    })
}

/// A count or position as SQLite's integer (saturating; never reached in practice).
fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A token count as SQLite's integer (saturating; never reached in practice).
fn u64_to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The runner's [`ThreadSink`] over a store: every save is one transaction.
pub struct StoreSink<'a> {
    store: &'a ThreadStore,
}

impl<'a> StoreSink<'a> {
    /// A sink writing to `store`.
    pub fn new(store: &'a ThreadStore) -> Self {
        Self { store }
    }
}

impl ThreadSink for StoreSink<'_> {
    fn append(&self, thread: &Thread, from: usize) -> Result<(), SaveError> {
        let new = thread.messages.get(from..).unwrap_or_default();
        self.store
            .append(&thread.id, from, new, &thread.state, &thread.usage)
            .map_err(|e| SaveError {
                thread: thread.id.clone(),
                message: e.to_string(),
            })
    }

    fn rewrite(&self, thread: &Thread) -> Result<(), SaveError> {
        self.store
            .replace_messages(&thread.id, &thread.messages, &thread.state, &thread.usage)
            .map_err(|e| SaveError {
                thread: thread.id.clone(),
                message: e.to_string(),
            })
    }
}

//! A stored thread as listings show it.

use std::path::PathBuf;

use serde::Serialize;

use super::Usage;

/// What listings show of a thread, without its messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadMeta {
    /// The id: 12 lowercase hex characters.
    pub id: String,
    /// The title, empty until one is set.
    pub title: String,
    /// The working directory the thread was started in, as given.
    pub cwd: PathBuf,
    /// The model the thread was started with.
    pub model: String,
    /// When it was created, in unix seconds.
    pub created_at: i64,
    /// When messages or state were last written, in unix seconds.
    pub updated_at: i64,
    /// The thread's token usage so far.
    pub usage: Usage,
    /// How many messages are stored.
    pub message_count: usize,
}

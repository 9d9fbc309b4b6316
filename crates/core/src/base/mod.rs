//! The bottom floor: helpers that know nothing of tools, servers, threads or models, and
//! that every floor above may use. Nothing here imports another antler module. The
//! helpers the chat's screen or the search crate need too (text, tables, time, `describe`,
//! bounded reads, private files) are the `antler-base` crate, re-exported here.

pub use antler_base::{bounded_read, clock, describe, private_file, table, text};

pub mod http;
pub(crate) mod output_file;
pub(crate) mod pending;
pub(crate) mod process;

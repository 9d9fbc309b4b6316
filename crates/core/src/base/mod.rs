//! The bottom floor: helpers that know nothing of tools, servers, threads or models, and
//! that every floor above may use. Nothing here imports another antler module. The
//! helpers the chat's screen needs too (text, tables, time, `describe`) are the
//! `antler-base` crate, re-exported here.

pub use antler_base::{clock, describe, table, text};

pub(crate) mod bounded_read;
pub mod http;
pub(crate) mod output_file;
pub(crate) mod pending;
pub mod private_file;
pub(crate) mod process;

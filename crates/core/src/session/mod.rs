//! The session: one handle ([`handle::Session`]) that both front-ends drive — `antler -p`
//! runs one message on it, the chat's [`controller`] turns [`Command`](crate::protocol::Command)s
//! into calls on it and answers with [`Update`](crate::protocol::Update)s — over one
//! long-lived [`assembly`] of tools and MCP servers. Front-ends never build agents, touch
//! the store or talk to MCP servers themselves.

pub mod assembly;
mod attach;
pub mod controller;
pub(crate) mod handle;
pub(crate) mod instructions;
mod options;
mod start;

pub use handle::Session;
pub use options::{PermissionOptions, SessionError, SessionOptions, StartThread};
pub use start::Starting;

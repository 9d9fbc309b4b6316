//! The interactive session: the controller that turns a front-end's
//! [`Command`](crate::protocol::Command)s into runs and answers with
//! [`Update`](crate::protocol::Update)s, and the one place agents are assembled. The
//! front-end never builds agents, touches the store or talks to MCP servers itself.

pub mod assembly;
pub mod controller;

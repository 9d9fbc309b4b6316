//! The agent core: thread state and its reducer, messages, and the middleware chain whose
//! layers shape every model call and every tool call.

pub mod layers;
pub mod message;
pub mod middleware;
pub mod state;

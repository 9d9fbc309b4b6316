//! The agent core: messages, thread state and its reducer, the middleware chain and its
//! layers, the system prompt, the runner and the events it emits. The core never prints:
//! front-ends render its events.

pub mod event;
pub mod layers;
pub mod message;
pub mod middleware;
pub mod prompt;
pub mod runner;
pub mod state;

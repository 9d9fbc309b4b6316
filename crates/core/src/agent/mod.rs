//! The agent core: thread state and its reducer, the middleware chain and its layers, the
//! system prompt and the runner, which emits the events of [`crate::protocol`]. The core
//! never prints: front-ends render its events.

pub mod layers;
pub(crate) mod ledger;
pub mod middleware;
pub mod prompt;
pub mod runner;
pub mod state;
pub(crate) mod subagent;

//! Output for people and scripts. The core never prints; front-ends do, here.

pub mod listing;
pub mod search;
pub mod threads;

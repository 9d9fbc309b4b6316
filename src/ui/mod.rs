//! Output for people and scripts. The core never prints; front-ends do, here.

pub mod doctor;
pub mod listing;
pub mod run_output;
pub mod search;
pub mod threads;
pub mod tui;

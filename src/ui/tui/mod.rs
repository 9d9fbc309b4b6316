//! The interactive chat (`antler` without a prompt): a full-screen ratatui front-end that
//! only renders the session's updates and sends its commands; no agent logic lives here.

mod highlight;
mod markdown;
mod table;
mod theme;
mod wrap;

#[cfg(test)]
mod markdown_tests;

//! The interactive chat (`antler` without a prompt): a full-screen ratatui front-end that
//! only renders the session's [`Update`](antler_protocol::Update)s and sends
//! [`Command`](antler_protocol::Command)s; no agent logic lives here.
//!
//! [`App`](app::App) is the whole state, pure and scriptable (tests drive it with updates and keys
//! and render it on a `TestBackend`); [`run_tui`] connects it to the real terminal.

mod app;
mod apply;
mod approval;
mod cards;
mod dialog_pages;
mod dialog_view;
mod dialogs;
mod entries;
mod form;
mod form_view;
mod highlight;
mod input;
mod keys;
mod markdown;
mod slash;
mod status;
mod table;
mod terminal;
mod theme;
mod transcript;
mod view;
mod wrap;

#[cfg(test)]
mod dialog_snapshots;
#[cfg(test)]
mod key_tests;
#[cfg(test)]
mod markdown_tests;
#[cfg(test)]
mod snapshot_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod transcript_tests;

pub use terminal::run_tui;

/// Why the chat stopped early: the terminal could not be set up, read or drawn on.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// A terminal operation failed.
    #[error("terminal: {0}")]
    Io(#[from] std::io::Error),
}

//! The interactive chat (`antler` without a prompt): a full-screen ratatui front-end that
//! only renders the session's [`Update`](crate::session::Update)s and sends
//! [`Command`](crate::session::Command)s; no agent logic lives here.
//!
//! [`App`] is the whole state, pure and scriptable: it takes updates, keys, pastes, mouse
//! events and ticks, and renders into a ratatui frame.

mod app;
mod apply;
mod cards;
mod dialog_pages;
mod dialog_view;
mod dialogs;
mod entries;
mod highlight;
mod input;
mod keys;
mod markdown;
mod slash;
mod status;
mod table;
mod theme;
mod transcript;
mod view;
mod wrap;

#[cfg(test)]
mod markdown_tests;

pub use app::App;
pub use theme::{Palette, Theme};

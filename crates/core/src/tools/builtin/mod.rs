//! Built-in tools: present whenever their condition holds (a workspace, a vision model, an
//! interactive front-end), not selected in `config.yaml`. The `task` tool is the agent's
//! own (`crate::agent::subagent`).

pub mod clarification;
pub mod present_files;
pub mod view_image;

pub use clarification::{ASK_CLARIFICATION, AskClarification, Clarifications};
pub use present_files::{PRESENT_FILES, PresentFiles};
pub use view_image::{VIEW_IMAGE, ViewImage};

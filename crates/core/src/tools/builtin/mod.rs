//! Built-in tools: present whenever their condition holds (a workspace, a vision model, an
//! interactive front-end), not selected in `config.yaml`. The `task` tool is the agent's
//! own (`crate::agent::subagent`).

pub(crate) mod clarification;
pub(crate) mod present_files;
pub(crate) mod view_image;

pub(crate) use clarification::{AskClarification, Clarifications};
pub(crate) use present_files::PresentFiles;
pub(crate) use view_image::ViewImage;

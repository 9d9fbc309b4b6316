//! Built-in tools: present whenever their condition holds (a workspace, a vision model, an
//! interactive front-end, subagents configured), not selected in `config.yaml`.

pub mod clarification;
pub mod present_files;
pub mod task;
pub mod view_image;

pub use clarification::{ASK_CLARIFICATION, AskClarification, Clarification};
pub use present_files::{PRESENT_FILES, PresentFiles};
pub use task::{SubagentEnv, TASK, Task};
pub use view_image::{VIEW_IMAGE, ViewImage};

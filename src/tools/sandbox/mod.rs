//! Sandbox tools: they act on the workspace and never outside it.

mod ls;
mod web_fetch;
mod workspace;

pub use ls::LS;
pub use web_fetch::WEB_FETCH;
pub use workspace::{Workspace, WorkspaceError};

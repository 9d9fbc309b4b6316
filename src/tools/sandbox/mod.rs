//! Sandbox tools: they act on the workspace and never outside it.

mod ls;
mod workspace;

pub use ls::LS;
pub use workspace::{Workspace, WorkspaceError};

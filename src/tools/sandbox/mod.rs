//! Sandbox tools: they act on the workspace and never outside it. Every filesystem
//! operation and every `bash` process goes through one [`SandboxRuntime`] per build, which
//! runs it unconfined on the blocking pool or, with `sandbox.mode: landlock`, on a worker
//! thread that the kernel confines (see `confine`).

mod common;
mod confine;
mod ls;
mod runtime;
#[cfg(test)]
mod testing;
mod workspace;

pub use confine::{LandlockStatus, landlock_status};
pub use ls::LS;
pub use runtime::{JobError, SandboxError, SandboxRuntime, SharedSandbox};
pub use workspace::{Workspace, WorkspaceError};

//! Sandbox tools: the file tools and `bash` act on the workspace and never outside it
//! (`web_fetch` only reads the web). Every filesystem
//! operation and every `bash` process goes through one [`SandboxRuntime`] per build, which
//! runs it unconfined on the blocking pool or, with `sandbox.mode: landlock`, on a worker
//! thread that the kernel confines (see `confine`).

pub(crate) mod attach;
mod bash;
mod common;
mod confine;
pub(crate) mod files;
mod glob;
mod grep;
mod ls;
mod preview;
mod read_file;
mod runtime;
mod secrets;
mod str_replace;
#[cfg(test)]
mod testing;
mod walk;
mod web_fetch;
mod workspace;
mod write_file;

pub use bash::BASH;
pub use confine::{LandlockStatus, landlock_status};
pub use glob::GLOB;
pub use grep::GREP;
pub use ls::LS;
pub use preview::unified_diff;
pub use read_file::READ_FILE;
pub use runtime::{JobError, SandboxError, SandboxRuntime, SharedSandbox};
pub use secrets::{DEFAULT_DENY_READ, SecretFiles};
pub use str_replace::STR_REPLACE;
pub use web_fetch::WEB_FETCH;
pub use workspace::{
    HOOK_SETTINGS, Hidden, HiddenCount, Protected, STARTUP_FILES, SkillReads, ThreadOutputs,
    Workspace, WorkspaceError,
};
pub use write_file::WRITE_FILE;

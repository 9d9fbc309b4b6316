//! What every command runs with, passed as one value instead of the same five arguments.

use std::path::Path;
use std::sync::Arc;

use crate::config::{ConfigPaths, EnvLookup};
use crate::setup::{Setup, SetupError};
use crate::trust::ProjectTrust;

/// Where the configuration is, the working directory, the environment (with a trusted
/// `.env`), the project's trust, and the model the command line asked for.
#[derive(Clone, Copy)]
pub(super) struct CommandContext<'a> {
    /// `--model`.
    pub(super) model: Option<&'a str>,
    /// `--config`, `--extensions` and the default places.
    pub(super) paths: &'a ConfigPaths,
    pub(super) cwd: &'a Path,
    pub(super) env: EnvLookup<'a>,
    /// What start-up decided of the project's files.
    pub(super) trust: &'a Arc<ProjectTrust>,
}

impl CommandContext<'_> {
    /// The configuration, loaded as every command loads it (admitted by the project's
    /// trust).
    pub(super) fn setup(&self) -> Result<Setup, SetupError> {
        Setup::load(self.paths, self.cwd, self.env, self.trust)
    }
}

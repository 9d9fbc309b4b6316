//! The one place sandbox tools touch the filesystem and start processes: a job API that
//! runs on `spawn_blocking` without confinement, or on the Landlock worker with
//! `sandbox.mode: landlock`. One runtime is shared by every sandbox tool of a build.

use std::cell::OnceCell;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::confine::{self, ConfinedWorker, LandlockStatus, Rules};
use super::{Protected, Workspace};
use crate::config::{SandboxConfig, SandboxMode};

/// Why the sandbox cannot be set up: a configuration error that stops antler.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The workspace root does not exist or cannot be resolved.
    #[error("sandbox.workspace: cannot open `{path}`: {source}")]
    Workspace {
        /// The configured (or default) root, as joined to the working directory.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// `mode: landlock` on a kernel without Landlock: refused, never run unconfined.
    #[error(
        "sandbox.mode is `landlock` but Landlock is {0}; remove `mode` (or set it to `none`) \
         to run the sandbox tools with the workspace path check only"
    )]
    LandlockUnavailable(LandlockStatus),
    /// Landlock is there but the confinement could not be set up.
    #[error("sandbox.mode is `landlock` but the sandbox cannot be confined: {0}")]
    Confinement(String),
}

/// Why a job did not finish; the message is meant for the model.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JobError {
    /// The worker (or the blocking pool) is gone, e.g. while shutting down.
    #[error("Error: the sandbox is shutting down; the operation did not run")]
    Gone,
    /// The job panicked: a bug in antler, reported instead of crashing the run.
    #[error("Error: the operation failed unexpectedly (internal error)")]
    Panicked,
    /// The job took longer than the limit; its result is dropped.
    #[error(
        "Error: the operation took longer than {} s and was abandoned; narrow the path or the \
         search",
        .0.as_secs()
    )]
    TimedOut(std::time::Duration),
}

/// The longest one file-tool job may take: nothing a file tool does should block for long,
/// and a job that does (a slow mount, a huge tree) must not hold the run forever.
const JOB_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

enum Executor {
    Blocking,
    Landlock {
        worker: ConfinedWorker,
        temp_dir: PathBuf,
    },
}

/// The workspace plus where its jobs run. Shared (`Arc`) by the sandbox tools.
pub struct SandboxRuntime {
    workspace: Workspace,
    executor: Executor,
    job_timeout: std::time::Duration,
}

impl std::fmt::Debug for SandboxRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxRuntime")
            .field("workspace", &self.workspace)
            .field("mode", &self.mode())
            .finish()
    }
}

impl SandboxRuntime {
    /// Opens the workspace of `config` (relative to `cwd`) and, with `mode: landlock`,
    /// starts the confined worker; Landlock missing is an error, not a fallback.
    pub fn new(
        config: &SandboxConfig,
        cwd: &Path,
        protected: &Protected,
    ) -> Result<Arc<Self>, SandboxError> {
        let workspace = Workspace::from_config(config, cwd)
            .map_err(|source| SandboxError::Workspace {
                path: cwd.join(config.workspace.as_deref().unwrap_or(Path::new("."))),
                source,
            })?
            .with_protected(protected);
        let executor = match config.mode {
            SandboxMode::Unconfined => Executor::Blocking,
            SandboxMode::Landlock => {
                let status = confine::landlock_status();
                if !matches!(status, LandlockStatus::Available { .. }) {
                    return Err(SandboxError::LandlockUnavailable(status));
                }
                let temp_dir = confine::private_temp_dir().map_err(|e| {
                    SandboxError::Confinement(format!("cannot create a private temp dir: {e}"))
                })?;
                // Fixed for the worker's life: a session that switches threads starts
                // another sandbox (see `session::assembly`).
                let rules = Rules {
                    read_write: vec![workspace.root().to_path_buf(), temp_dir.clone()],
                    read_only: workspace
                        .read_only_roots()
                        .iter()
                        .cloned()
                        .chain(workspace.thread_outputs())
                        .chain(workspace.skill_folders().iter().cloned())
                        .collect(),
                };
                match ConfinedWorker::start(rules) {
                    Ok(worker) => Executor::Landlock { worker, temp_dir },
                    Err(e) => {
                        confine::remove_temp_dir(&temp_dir);
                        return Err(SandboxError::Confinement(e));
                    }
                }
            }
        };
        tracing::debug!(
            "sandbox: workspace {} ({:?})",
            workspace.root().display(),
            config.mode
        );
        Ok(Arc::new(Self {
            workspace,
            executor,
            job_timeout: JOB_TIMEOUT,
        }))
    }

    /// The path boundary every tool resolves through.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// How jobs are confined.
    pub fn mode(&self) -> SandboxMode {
        match self.executor {
            Executor::Blocking => SandboxMode::Unconfined,
            Executor::Landlock { .. } => SandboxMode::Landlock,
        }
    }

    /// Under Landlock, the private writable directory that `bash` gets as `TMPDIR`.
    pub fn temp_dir(&self) -> Option<&Path> {
        match &self.executor {
            Executor::Blocking => None,
            Executor::Landlock { temp_dir, .. } => Some(temp_dir),
        }
    }

    /// Runs blocking `job` off the async runtime: on the blocking pool, or confined on the
    /// Landlock worker. A panic in the job is caught and reported; a job that takes longer
    /// than the limit is abandoned (its thread finishes on its own, its result is dropped).
    pub async fn run<T, F>(&self, job: F) -> Result<T, JobError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        tokio::time::timeout(self.job_timeout, self.run_unlimited(job))
            .await
            .unwrap_or(Err(JobError::TimedOut(self.job_timeout)))
    }

    async fn run_unlimited<T, F>(&self, job: F) -> Result<T, JobError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        match &self.executor {
            Executor::Blocking => match tokio::task::spawn_blocking(job).await {
                Ok(value) => Ok(value),
                Err(e) if e.is_panic() => Err(JobError::Panicked),
                Err(_) => Err(JobError::Gone),
            },
            Executor::Landlock { worker, .. } => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let submitted = worker.submit(Box::new(move || {
                    let _ = tx.send(std::panic::catch_unwind(AssertUnwindSafe(job)));
                }));
                if !submitted {
                    return Err(JobError::Gone);
                }
                match rx.await {
                    Ok(Ok(value)) => Ok(value),
                    Ok(Err(_)) => Err(JobError::Panicked),
                    Err(_) => Err(JobError::Gone),
                }
            }
        }
    }
}

impl Drop for SandboxRuntime {
    fn drop(&mut self) {
        if let Executor::Landlock { temp_dir, .. } = &self.executor {
            confine::remove_temp_dir(temp_dir);
        }
    }
}

/// The sandbox runtime of one build of the configured tools: created by the first sandbox
/// tool that asks, then shared, so that all of them use one workspace and one worker.
pub struct SharedSandbox<'a> {
    config: &'a SandboxConfig,
    cwd: &'a Path,
    protected: &'a Protected,
    runtime: OnceCell<Arc<SandboxRuntime>>,
}

impl<'a> SharedSandbox<'a> {
    /// Nothing is opened until [`SharedSandbox::get`].
    pub fn new(config: &'a SandboxConfig, cwd: &'a Path, protected: &'a Protected) -> Self {
        Self {
            config,
            cwd,
            protected,
            runtime: OnceCell::new(),
        }
    }

    /// The shared runtime, created on the first call.
    pub fn get(&self) -> Result<Arc<SandboxRuntime>, SandboxError> {
        if let Some(runtime) = self.runtime.get() {
            return Ok(runtime.clone());
        }
        let runtime = SandboxRuntime::new(self.config, self.cwd, self.protected)?;
        Ok(self.runtime.get_or_init(|| runtime).clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::sandbox::testing::{build_error, landlock_available};

    fn landlock_config() -> SandboxConfig {
        SandboxConfig {
            mode: SandboxMode::Landlock,
            ..SandboxConfig::default()
        }
    }

    #[test]
    fn one_runtime_per_build_and_clear_setup_errors() {
        let dir = tempfile::tempdir().unwrap();
        let config = SandboxConfig::default();
        let protected = Protected::default();
        let shared = SharedSandbox::new(&config, dir.path(), &protected);
        assert!(Arc::ptr_eq(&shared.get().unwrap(), &shared.get().unwrap()));
        let err = build_error(dir.path(), "ls", "", &["workspace: missing"]);
        assert!(
            err.starts_with("tools[0] `ls`: sandbox.workspace: cannot open")
                && err.contains("missing"),
            "{err}"
        );
        let err = build_error(dir.path(), "ls", ", max_results: 0", &[]);
        assert!(
            err.contains("`max_results` must be a positive integer"),
            "{err}"
        );
        let unavailable = SandboxError::LandlockUnavailable(LandlockStatus::Unavailable {
            reason: String::from("no kernel support"),
        });
        assert_eq!(
            unavailable.to_string(),
            "sandbox.mode is `landlock` but Landlock is unavailable: no kernel support; remove \
             `mode` (or set it to `none`) to run the sandbox tools with the workspace path \
             check only"
        );
    }

    #[tokio::test]
    async fn jobs_run_off_the_runtime_and_panics_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let runtime =
            SandboxRuntime::new(&SandboxConfig::default(), dir.path(), &Protected::default())
                .unwrap();
        assert_eq!(runtime.mode(), SandboxMode::Unconfined);
        assert_eq!(runtime.temp_dir(), None);
        assert_eq!(runtime.run(|| 1 + 1).await, Ok(2));
        #[allow(clippy::panic)]
        let panicked = runtime.run(|| panic!("boom")).await;
        assert_eq!(panicked, Err::<(), _>(JobError::Panicked));
    }

    #[tokio::test]
    async fn a_job_that_blocks_is_abandoned_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let runtime =
            SandboxRuntime::new(&SandboxConfig::default(), dir.path(), &Protected::default())
                .unwrap();
        let mut runtime = Arc::into_inner(runtime).unwrap();
        runtime.job_timeout = std::time::Duration::from_millis(50);
        let (_never, blocked) = std::sync::mpsc::channel::<()>();
        let outcome = runtime.run(move || blocked.recv().is_ok()).await;
        assert_eq!(
            outcome,
            Err(JobError::TimedOut(std::time::Duration::from_millis(50)))
        );
        assert!(outcome.unwrap_err().to_string().contains("abandoned"));
    }

    #[tokio::test]
    async fn landlock_confines_file_jobs_and_nothing_else() {
        if !landlock_available("landlock_confines_file_jobs_and_nothing_else") {
            return;
        }
        let outer = tempfile::tempdir().unwrap();
        let ws = outer.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(outer.path().join("secret"), "s").unwrap();
        let runtime = SandboxRuntime::new(&landlock_config(), &ws, &Protected::default()).unwrap();
        assert_eq!(runtime.mode(), SandboxMode::Landlock);
        let temp_dir = runtime.temp_dir().unwrap().to_path_buf();
        let (inside, outside, secret) = (
            ws.join("f"),
            outer.path().join("escaped"),
            outer.path().join("secret"),
        );
        let (i, o, s, t) = (
            inside.clone(),
            outside.clone(),
            secret.clone(),
            temp_dir.clone(),
        );
        let (wrote_inside, wrote_outside, read_secret, wrote_temp) = runtime
            .run(move || {
                (
                    std::fs::write(&i, "in").map_err(|e| e.kind()),
                    std::fs::write(&o, "out").map_err(|e| e.kind()),
                    std::fs::read(&s).map_err(|e| e.kind()),
                    std::fs::write(t.join("t"), "t").map_err(|e| e.kind()),
                )
            })
            .await
            .unwrap();
        assert_eq!(wrote_inside, Ok(()));
        assert_eq!(wrote_outside, Err(std::io::ErrorKind::PermissionDenied));
        assert_eq!(read_secret, Err(std::io::ErrorKind::PermissionDenied));
        assert_eq!(wrote_temp, Ok(()));
        assert!(!outside.exists());
        // Only the worker is confined: this thread still writes where it likes.
        std::fs::write(&outside, "here").unwrap();
        drop(runtime);
        assert!(!temp_dir.exists(), "the private temp dir is removed");
    }
}

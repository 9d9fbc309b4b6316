//! Landlock confinement (`sandbox.mode: landlock`). Landlock restricts only the calling
//! thread and what it starts later, and this crate forbids `unsafe`, so the restriction
//! lives on a dedicated worker thread: it restricts itself once, then starts one thread per
//! job, and each job thread (and every process it spawns, e.g. `bash`) inherits the ruleset.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use ::landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, LandlockStatus as KernelStatus, RestrictSelf,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

/// The newest ABI whose rights we ask for; older kernels get the subset they know.
const TARGET_ABI: ABI = ABI::V6;

/// System places that programs need to read and execute.
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/nix/store",
];

/// Device files that shells write to or read from as if they were files.
const DEVICES_RW: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// Whether this kernel can enforce `sandbox.mode: landlock`, for `antler doctor` and for
/// the error that refuses to run unconfined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LandlockStatus {
    /// Landlock works; `abi` is the kernel's ABI version.
    Available {
        /// The Landlock ABI version of the running kernel.
        abi: i32,
    },
    /// Landlock cannot be used.
    Unavailable {
        /// Why, and what would fix it.
        reason: String,
    },
}

impl std::fmt::Display for LandlockStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Available { abi } => write!(f, "available (ABI {abi})"),
            Self::Unavailable { reason } => write!(f, "unavailable: {reason}"),
        }
    }
}

/// Asks the kernel whether Landlock is available, without restricting anything.
pub fn landlock_status() -> LandlockStatus {
    match RestrictSelf::default().no_new_privs(false).apply() {
        Err(e) => LandlockStatus::Unavailable {
            reason: e.to_string(),
        },
        Ok(status) => match status.landlock {
            KernelStatus::Available {
                effective_abi,
                kernel_abi,
            } => LandlockStatus::Available {
                abi: kernel_abi.unwrap_or(effective_abi as i32),
            },
            KernelStatus::NotEnabled => LandlockStatus::Unavailable {
                reason: String::from(
                    "the kernel has Landlock but it is not enabled (add `landlock` to the \
                     `lsm=` boot parameter)",
                ),
            },
            _ => LandlockStatus::Unavailable {
                reason: String::from(
                    "the kernel has no Landlock support (it needs Linux 5.13 or later built \
                     with CONFIG_SECURITY_LANDLOCK)",
                ),
            },
        },
    }
}

/// What the confined jobs may touch.
#[derive(Debug, Clone)]
pub(super) struct Rules {
    /// Read, write and execute beneath these (the workspace, the private temp dir).
    pub read_write: Vec<PathBuf>,
    /// Read and execute beneath these (`sandbox.read_only_paths`).
    pub read_only: Vec<PathBuf>,
}

/// A job for the confined worker.
pub(super) type Job = Box<dyn FnOnce() + Send + 'static>;

/// The handle to the confined worker thread; dropping it ends the worker.
#[derive(Debug)]
pub(super) struct ConfinedWorker {
    jobs: mpsc::Sender<Job>,
}

impl ConfinedWorker {
    /// Starts the worker and waits until it has restricted itself; an error means nothing
    /// will run (never unconfined).
    pub(super) fn start(rules: Rules) -> Result<Self, String> {
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), String>>(1);
        let (jobs, job_rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name(String::from("antler-landlock"))
            .spawn(move || {
                let restricted = restrict_current_thread(&rules);
                let ok = restricted.is_ok();
                let _ = ready_tx.send(restricted);
                if ok {
                    serve(job_rx);
                }
            })
            .map_err(|e| format!("cannot start the Landlock worker thread: {e}"))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Self { jobs }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(String::from(
                "the Landlock worker thread stopped while starting",
            )),
        }
    }

    /// Hands a job to the worker; `false` when the worker is gone.
    pub(super) fn submit(&self, job: Job) -> bool {
        self.jobs.send(job).is_ok()
    }
}

/// Runs every job on its own thread, started from this restricted thread so that it
/// inherits the ruleset. A job that cannot start is dropped, which its caller sees.
fn serve(jobs: mpsc::Receiver<Job>) {
    for job in jobs {
        let started = std::thread::Builder::new()
            .name(String::from("antler-sandbox-job"))
            .spawn(job);
        if let Err(e) = started {
            tracing::error!("cannot start a confined sandbox job: {e}");
        }
    }
}

fn restrict_current_thread(rules: &Rules) -> Result<(), String> {
    let all = AccessFs::from_all(TARGET_ABI);
    let read = AccessFs::from_read(TARGET_ABI);
    let fail = |e: ::landlock::RulesetError| format!("cannot set up the Landlock ruleset: {e}");
    let status = Ruleset::default()
        .handle_access(all)
        .map_err(fail)?
        // Scopes need ABI 6: on older kernels they are dropped, the file rules stay.
        .set_compatibility(CompatLevel::BestEffort)
        .scope(Scope::from_all(TARGET_ABI))
        .map_err(fail)?
        .create()
        .map_err(fail)?
        .add_rules(path_beneath_rules(SYSTEM_READ, read))
        .map_err(fail)?
        .add_rules(path_beneath_rules(rules.read_only.iter(), read))
        .map_err(fail)?
        .add_rules(path_beneath_rules(DEVICES_RW, all))
        .map_err(fail)?
        .add_rules(path_beneath_rules(rules.read_write.iter(), all))
        .map_err(fail)?
        .restrict_self()
        .map_err(fail)?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => {
            tracing::debug!("landlock: the sandbox worker is fully confined");
            Ok(())
        }
        RulesetStatus::PartiallyEnforced => {
            tracing::warn!(
                "landlock: this kernel enforces only part of the sandbox ruleset (an older \
                 Landlock ABI); file access is still confined"
            );
            Ok(())
        }
        RulesetStatus::NotEnforced => Err(format!(
            "Landlock did not enforce the ruleset ({})",
            landlock_status()
        )),
    }
}

/// A fresh private directory for temporary files under the system temp dir (mode 0700),
/// writable under Landlock where `/tmp` itself is not.
pub(super) fn private_temp_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    let mut last = None;
    for _ in 0..8 {
        let dir = base.join(format!(
            "antler-sandbox-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return std::fs::canonicalize(&dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free name")))
}

/// Removes the private temp dir; failures are logged, never fatal.
pub(super) fn remove_temp_dir(dir: &Path) {
    if let Err(e) = std::fs::remove_dir_all(dir) {
        tracing::warn!("cannot remove the sandbox temp dir {}: {e}", dir.display());
    }
}

//! What the sandbox tools share: settings from their config entry, argument parsing and
//! error messages the model can act on.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::runtime::{JobError, SandboxRuntime};
use super::workspace::Workspace;
use crate::protocol::Preview;
use crate::tools::registry::{ToolBuildContext, ToolFactory};
use crate::tools::{Effect, Tool, ToolContext, ToolFuture, ToolInfo, ToolOutput, TypedTool};
use futures::future::BoxFuture;

/// A positive integer setting of the tool's config entry (`max_results: 50`), or `default`.
pub(super) fn positive_setting(
    ctx: &ToolBuildContext<'_>,
    key: &str,
    default: usize,
) -> Result<usize, String> {
    match ctx.entry.extra.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| format!("`{key}` must be a positive integer, got {v}")),
    }
}

/// An I/O error on `path` (as the model wrote it), phrased for the model.
pub(super) fn io_error(action: &str, path: &str, e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound => format!("Error: no such file or directory: `{path}`"),
        ErrorKind::PermissionDenied => format!(
            "Error: permission denied: cannot {action} `{path}` (the file's permissions or \
             the sandbox do not allow it)"
        ),
        ErrorKind::IsADirectory => {
            format!("Error: `{path}` is a directory, not a file; use `ls` to list it")
        }
        ErrorKind::NotADirectory => format!("Error: a part of `{path}` is not a directory"),
        _ => format!("Error: cannot {action} `{path}`: {e}"),
    }
}

/// Folds a job's outcome into the tool's output (a job that did not finish is an error).
pub(super) fn finish(result: Result<Result<String, String>, JobError>) -> ToolOutput {
    match result {
        Ok(Ok(text)) => ToolOutput::ok(text),
        Ok(Err(message)) => ToolOutput::error(message),
        Err(e) => ToolOutput::error(e.to_string()),
    }
}

/// Works out what a call would change, on the runtime's thread.
pub(super) type PreviewJob<A> = fn(&Workspace, &A) -> Result<Preview, String>;

/// A call's work on the runtime's thread, with the tool's limit.
pub(super) type Job<A> = fn(&Workspace, &A, usize) -> Result<String, String>;

/// What the model is told of the sandbox tool `factory` builds; `parallel`: its calls may
/// run beside others (it only reads).
pub(super) fn tool_info(
    ctx: &ToolBuildContext<'_>,
    factory: &ToolFactory,
    description: String,
    parameters: Value,
    parallel: bool,
) -> ToolInfo {
    ToolInfo {
        name: factory.tool_name.to_string(),
        description,
        parameters,
        source: ctx.source.clone(),
        metadata: Map::new(),
        parallel,
    }
}

/// A sandbox tool whose call is one job on the runtime: parse the arguments into `A`, run
/// `job` with the workspace and the tool's limit (confined with `mode: landlock`), and turn
/// its result into the output. Most sandbox tools are exactly this.
pub(super) struct JobTool<A> {
    /// What the model is told.
    pub(super) info: ToolInfo,
    /// Where the job runs.
    pub(super) runtime: Arc<SandboxRuntime>,
    /// The tool's size limit (`max_results`, `max_bytes`); 0 when it has none.
    pub(super) limit: usize,
    /// The work, on the runtime's thread.
    pub(super) job: Job<A>,
    /// What its calls do, for the permission policy.
    pub(super) effect: Effect,
    /// What a call would change, for the approval dialog (on the runtime's thread too, so
    /// it reads only what the tool could).
    pub(super) preview: Option<PreviewJob<A>>,
    /// The call's subject for permission rules (`write_file(src/**)`): the file it writes,
    /// resolved in the workspace, so `src/../.git/hooks/x` or a link out of `src` is not
    /// `src/…`.
    pub(super) subject: Option<fn(&Workspace, &A) -> Option<String>>,
}

impl<A: DeserializeOwned + Send + 'static> JobTool<A> {
    /// A tool that only reads: its calls run `job` with `limit` on the build's runtime,
    /// beside other calls.
    pub(super) fn reading(
        ctx: &ToolBuildContext<'_>,
        factory: &ToolFactory,
        description: String,
        parameters: Value,
        limit: usize,
        job: Job<A>,
    ) -> Result<Arc<dyn Tool>, String> {
        Ok(Arc::new(Self {
            info: tool_info(ctx, factory, description, parameters, true),
            runtime: ctx.sandbox.get().map_err(|e| e.to_string())?,
            limit,
            job,
            effect: Effect::ReadOnly,
            preview: None,
            subject: None,
        }))
    }

    /// A tool that writes the file its call names (`subject`): its calls run one at a
    /// time, and the person asked to approve one sees `preview`.
    pub(super) fn writing(
        ctx: &ToolBuildContext<'_>,
        factory: &ToolFactory,
        description: String,
        parameters: Value,
        job: Job<A>,
        preview: PreviewJob<A>,
        subject: fn(&Workspace, &A) -> Option<String>,
    ) -> Result<Arc<dyn Tool>, String> {
        Ok(Arc::new(Self {
            info: tool_info(ctx, factory, description, parameters, false),
            runtime: ctx.sandbox.get().map_err(|e| e.to_string())?,
            limit: 0,
            job,
            effect: Effect::WritesFiles,
            preview: Some(preview),
            subject: Some(subject),
        }))
    }
}

impl<A: DeserializeOwned + Send + 'static> TypedTool for JobTool<A> {
    type Args = A;

    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn run<'a>(&'a self, _ctx: ToolContext<'a>, args: A) -> ToolFuture<'a> {
        Box::pin(async move {
            let workspace = self.runtime.workspace().clone();
            let (job, limit) = (self.job, self.limit);
            finish(
                self.runtime
                    .run(move || job(&workspace, &args, limit))
                    .await,
            )
        })
    }

    fn effect(&self) -> Effect {
        self.effect
    }

    fn subject(&self, args: &A) -> Option<String> {
        (self.subject?)(self.runtime.workspace(), args)
    }

    fn preview(&self, args: A) -> BoxFuture<'_, Option<Preview>> {
        Box::pin(async move {
            let preview = self.preview?;
            let workspace = self.runtime.workspace().clone();
            match self.runtime.run(move || preview(&workspace, &args)).await {
                Ok(Ok(preview)) => Some(preview),
                Ok(Err(why)) => {
                    tracing::debug!("no preview of the call: {why}");
                    None
                }
                Err(err) => {
                    tracing::debug!("no preview of the call: {err}");
                    None
                }
            }
        })
    }
}

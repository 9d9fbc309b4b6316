//! `bash(command)`: a shell command in the workspace root. Off unless
//! `sandbox.allow_host_bash: true`: as in DeerFlow, a configured `bash` tool still exists
//! when it is off, and a call explains how to turn it on, so the model learns why instead
//! of guessing. Without `sandbox.mode: landlock` the command is not isolated from the host.

mod exec;
#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use self::exec::{Ending, Outcome, Request};
use super::SandboxRuntime;
use super::common::{positive_setting, tool_info};
use crate::config::SandboxMode;
use crate::tools::Effect;
use crate::tools::registry::{ToolBuildContext, ToolFactory};
use crate::tools::{Tool, ToolFuture, ToolInfo, ToolOutput};
use crate::tools::{ToolContext, TypedTool};

/// The registry entry for `antler.sandbox:bash`.
pub const BASH: ToolFactory = ToolFactory {
    id: "antler.sandbox:bash",
    tool_name: "bash",
    settings: &["timeout_seconds", "max_output_chars"],
    build,
};

/// A command is killed after this many seconds unless `timeout_seconds` says otherwise.
const DEFAULT_TIMEOUT_SECONDS: usize = 600;
/// Each output stream is cut after this many characters unless `max_output_chars` says
/// otherwise.
const DEFAULT_MAX_OUTPUT_CHARS: usize = 30_000;

/// What a call returns while host bash is off.
const DISABLED: &str = "Error: host bash is disabled: commands would run directly on this \
                        machine. To allow it, set `sandbox.allow_host_bash: true` in \
                        config.yaml (with `sandbox.mode: landlock` to confine it to the \
                        workspace). Until then, use the file tools.";

struct Bash {
    info: ToolInfo,
    runtime: Arc<SandboxRuntime>,
    enabled: bool,
    shell: PathBuf,
    env: Vec<(OsString, OsString)>,
    timeout: Duration,
    max_chars: usize,
}

#[derive(Deserialize)]
struct Args {
    command: String,
}

fn build(ctx: &ToolBuildContext<'_>) -> Result<Arc<dyn Tool>, String> {
    let timeout_seconds = positive_setting(ctx, "timeout_seconds", DEFAULT_TIMEOUT_SECONDS)?;
    let max_chars = positive_setting(ctx, "max_output_chars", DEFAULT_MAX_OUTPUT_CHARS)?;
    let runtime = ctx.sandbox.get().map_err(|e| e.to_string())?;
    let enabled = ctx.app.sandbox.allow_host_bash;
    if !enabled {
        tracing::debug!("bash: sandbox.allow_host_bash is false; calls will be refused");
    }
    let env = exec::allowed_env(std::env::vars_os());
    let info = tool_info(
        ctx,
        &BASH,
        description(&runtime, enabled, timeout_seconds, max_chars),
        json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The command, run with `bash -c` in the workspace root."
                }
            },
            "required": ["command"]
        }),
        false,
    );
    Ok(Arc::new(Bash::new(
        info,
        runtime,
        enabled,
        env,
        Duration::from_secs(timeout_seconds as u64),
        max_chars,
    )))
}

fn description(
    runtime: &SandboxRuntime,
    enabled: bool,
    timeout_seconds: usize,
    max_chars: usize,
) -> String {
    if !enabled {
        return String::from(
            "Run a shell command. Host bash is disabled in this configuration: calls return \
             an error saying how to enable it.",
        );
    }
    let mut text = format!(
        "Run a shell command with `bash -c` in the workspace root (stdin is empty). It is \
         killed after {timeout_seconds} s; stdout and stderr come back, each cut after \
         {max_chars} characters, followed by the exit code. Start long-running processes in \
         the background with their output redirected to a file."
    );
    if runtime.mode() == SandboxMode::Landlock {
        text.push_str(
            " The command is confined by Landlock: it can write only in the workspace and \
             in $TMPDIR, and read the system directories.",
        );
    }
    text
}

impl Bash {
    fn new(
        info: ToolInfo,
        runtime: Arc<SandboxRuntime>,
        enabled: bool,
        mut env: Vec<(OsString, OsString)>,
        timeout: Duration,
        max_chars: usize,
    ) -> Self {
        if let Some(temp_dir) = runtime.temp_dir() {
            env.retain(|(name, _)| name != "TMPDIR");
            env.push((OsString::from("TMPDIR"), temp_dir.as_os_str().to_owned()));
        }
        let shell = crate::base::process::find_shell(&env);
        Self {
            info,
            runtime,
            enabled,
            shell,
            env,
            timeout,
            max_chars,
        }
    }
}

impl TypedTool for Bash {
    type Args = Args;

    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn effect(&self) -> Effect {
        Effect::RunsCommands
    }

    fn subject(&self, args: &Args) -> Option<String> {
        Some(args.command.clone())
    }

    fn run<'a>(&'a self, _ctx: ToolContext<'a>, args: Args) -> ToolFuture<'a> {
        Box::pin(async move {
            if !self.enabled {
                return ToolOutput::error(DISABLED);
            }
            let request = Request {
                shell: self.shell.clone(),
                command: args.command,
                env: self.env.clone(),
                timeout: self.timeout,
                max_chars: self.max_chars,
            };
            match exec::run(&self.runtime, request).await {
                Ok(outcome) => self.render(&outcome),
                Err(message) => ToolOutput::error(message),
            }
        })
    }
}

impl Bash {
    /// Output, then `[stderr]` and its output, then how the command ended.
    fn render(&self, outcome: &Outcome) -> ToolOutput {
        let mut parts = Vec::new();
        let stdout = outcome.stdout.text(self.max_chars);
        if !stdout.is_empty() {
            parts.push(stdout.trim_end_matches('\n').to_string());
        }
        let stderr = outcome.stderr.text(self.max_chars);
        if !stderr.is_empty() {
            parts.push(format!("[stderr]\n{}", stderr.trim_end_matches('\n')));
        }
        if outcome.stdout.left_open || outcome.stderr.left_open {
            parts.push(String::from(
                "[a background process still holds the output open; redirect its output \
                 to a file]",
            ));
        }
        match outcome.ending {
            Ending::Exited(0) => {
                parts.push(String::from("[exit code 0]"));
                ToolOutput::ok(parts.join("\n"))
            }
            Ending::Exited(code) => {
                parts.push(format!("[exit code {code}]"));
                ToolOutput::error(parts.join("\n"))
            }
            Ending::Signaled(signal) => {
                parts.push(format!("[killed by signal {signal}]"));
                ToolOutput::error(parts.join("\n"))
            }
            Ending::TimedOut => {
                parts.insert(
                    0,
                    format!(
                        "Error: timed out after {} s; the command and every process it \
                         started were killed. Run long jobs in the background with their \
                         output redirected to a file. Output so far:",
                        self.timeout.as_secs()
                    ),
                );
                ToolOutput::error(parts.join("\n"))
            }
        }
    }
}

//! `antler -p PROMPT`: one prompt run to completion on a session, for scripts and CI.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::error::CliError;
use super::{Exit, RunArgs};
use crate::config::{ConfigPaths, EnvLookup};
use crate::protocol::{Event, RunStatus};
use crate::session::{Session, SessionOptions, StartThread};
use crate::setup::Setup;
use crate::trust::ProjectTrust;
use crate::ui::run_output::RunPrinter;

/// Runs the prompt of `args` and returns the exit status.
pub async fn run_prompt(
    args: &RunArgs,
    model: Option<&str>,
    paths: &ConfigPaths,
    cwd: &Path,
    env: EnvLookup<'_>,
    trust: &Arc<ProjectTrust>,
) -> Exit {
    run(args, model, paths, cwd, env, trust)
        .await
        .unwrap_or_else(CliError::report)
}

async fn run(
    args: &RunArgs,
    model: Option<&str>,
    paths: &ConfigPaths,
    cwd: &Path,
    env: EnvLookup<'_>,
    trust: &Arc<ProjectTrust>,
) -> Result<Exit, CliError> {
    let prompt = read_prompt(args.prompt.as_deref())?;
    // Ctrl-C is caught from here on, so that MCP servers starting below are always shut
    // down (a Ctrl-C during start-up ends the run as interrupted before its first call).
    let cancel = CancellationToken::new();
    let watcher = tokio::spawn(interrupt_on_ctrl_c(cancel.clone()));
    let setup = Setup::load(paths, cwd, env, trust)?;
    let (mut session, _) = Session::start(setup, env, cwd, session_options(args, model)).await?;
    for status in session.mcp().await.statuses().await {
        if let Some(error) = status.error {
            tracing::warn!(
                "MCP server `{}` is unavailable, its tools are missing: {error}",
                status.name
            );
        }
    }
    let printer = RunPrinter::new(
        args.output_format,
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    );
    let emit = |event: Event| printer.event(&event);
    let result = session.run(prompt, &emit, &cancel).await;
    if let Ok(result) = &result {
        printer.finish(result);
    }
    // Everything for stdout is out: its reader is done now, not once the MCP servers have
    // stopped. Errors still reach stderr.
    super::output::close_stdout();
    session.close().await;
    watcher.abort();
    let result = result?;
    Ok(match result.status {
        RunStatus::Success => Exit::Success,
        RunStatus::Failed => Exit::Failure,
        RunStatus::Interrupted => Exit::Interrupted,
    })
}

/// The session `-p` runs on: no one to answer `ask_clarification`.
fn session_options(args: &RunArgs, model: Option<&str>) -> SessionOptions {
    SessionOptions {
        model: model.map(str::to_string),
        max_turns: args.max_turns,
        thread: start_thread(args),
        replay: args.replay.clone(),
        record: args.record.clone(),
        clarify: false,
        // JSON output carries the ledger; text output takes it only when it is cheap.
        ledger: args.output_format != crate::ui::run_output::OutputFormat::Text,
    }
}

/// The thread `--continue` or `--resume` asks for, else a new one.
pub(super) fn start_thread(args: &RunArgs) -> StartThread {
    match (&args.resume, args.continue_thread) {
        (Some(id), _) => StartThread::Resume(id.clone()),
        (None, true) => StartThread::Latest,
        (None, false) => StartThread::New,
    }
}

/// The prompt from `-p`, `-p -` (stdin) or piped stdin.
fn read_prompt(arg: Option<&str>) -> Result<String, CliError> {
    let from_stdin = || {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map(|_| text)
            .map_err(|e| CliError::usage(format!("cannot read the prompt from stdin: {e}")))
    };
    let no_prompt = || {
        CliError::usage(
            "no prompt: pass -p PROMPT, -p - to read it from stdin, or pipe it in\n\n\
             Usage: antler [OPTIONS] -p <PROMPT>\n       antler <COMMAND>\n\n\
             For more information, try 'antler --help'.",
        )
    };
    let prompt = match arg {
        Some("-") => from_stdin()?,
        Some(text) => text.to_string(),
        None if !std::io::stdin().is_terminal() => {
            let text = from_stdin()?;
            if text.is_empty() {
                return Err(no_prompt());
            }
            text
        }
        None => return Err(no_prompt()),
    };
    if prompt.trim().is_empty() {
        return Err(CliError::usage("the prompt is empty"));
    }
    Ok(prompt)
}

/// The first Ctrl-C (or SIGTERM, SIGHUP) cancels the run, which then saves and exits 130;
/// a second Ctrl-C exits at once.
async fn interrupt_on_ctrl_c(cancel: CancellationToken) {
    // SIGTERM and SIGHUP (a closed terminal, `kill`, `timeout`) end the run the same way.
    let stop = async {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(mut term), Ok(mut hup)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    };
    tokio::select! {
        result = tokio::signal::ctrl_c() => {
            if result.is_err() {
                return;
            }
        }
        () = stop => {}
    }
    cancel.cancel();
    if tokio::signal::ctrl_c().await.is_ok() {
        eprintln!("antler: interrupted twice; exiting without waiting");
        // No destructor runs on this exit: stop MCP servers and shell commands first.
        crate::process::kill_all_groups();
        std::process::exit(130);
    }
}

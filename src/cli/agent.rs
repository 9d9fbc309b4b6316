//! `antler -p PROMPT`: one prompt run to completion against the configured model, for
//! scripts and CI. Builds the agent from the setup, runs it, prints its events.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{Exit, RunArgs};
use crate::agent::runner::{Thread, run_live};
use crate::config::{ConfigPaths, EnvLookup};
use crate::protocol::{Event, RunStatus};
use crate::provider::Provider;
use crate::provider::replay::{RecordingProvider, ReplayProvider};
use crate::provider::resolve::openai_provider;
use crate::session::assembly::{Assembly, AssemblySpec, ThreadPlace, prepare_outputs};
use crate::setup::Setup;
use crate::store::{StoreSink, ThreadStore, default_path, title_from};
use crate::trust::ProjectTrust;
use crate::ui::run_output::RunPrinter;

/// Why a run could not start (or its result could not be kept): a message and an exit
/// status.
pub(super) struct Stop {
    pub(super) exit: Exit,
    pub(super) message: String,
}

impl Stop {
    pub(super) fn usage(message: impl Into<String>) -> Self {
        Self {
            exit: Exit::Config,
            message: message.into(),
        }
    }

    pub(super) fn failure(message: impl Into<String>) -> Self {
        Self {
            exit: Exit::Failure,
            message: message.into(),
        }
    }
}

/// Runs the prompt of `args` and returns the exit status.
pub async fn run_prompt(
    args: &RunArgs,
    model: Option<&str>,
    paths: &ConfigPaths,
    cwd: &Path,
    env: EnvLookup<'_>,
    trust: &Arc<ProjectTrust>,
) -> Exit {
    match run(args, model, paths, cwd, env, trust).await {
        Ok(exit) => exit,
        Err(stop) => {
            eprintln!("error: {}", stop.message);
            stop.exit
        }
    }
}

async fn run(
    args: &RunArgs,
    model: Option<&str>,
    paths: &ConfigPaths,
    cwd: &Path,
    env: EnvLookup<'_>,
    trust: &Arc<ProjectTrust>,
) -> Result<Exit, Stop> {
    let prompt = read_prompt(args.prompt.as_deref())?;
    // Ctrl-C is caught from here on, so that MCP servers starting below are always shut
    // down (a Ctrl-C during start-up ends the run as interrupted before its first call).
    let cancel = CancellationToken::new();
    let watcher = tokio::spawn(interrupt_on_ctrl_c(cancel.clone()));
    let setup = Setup::load(paths, cwd, env, trust).map_err(|e| Stop::usage(e.to_string()))?;
    let provider = provider(args, &setup, model, cwd, env)?;
    let db = default_path(env).map_err(|e| Stop::failure(e.to_string()))?;
    let store = ThreadStore::open(&db).map_err(|e| Stop::failure(e.to_string()))?;
    let outputs = prepare_outputs(&db)
        .map_err(|e| Stop::failure(format!("cannot create the outputs folder: {e}")))?;
    let mut thread = open_thread(args, &store, cwd, &prompt, provider.model())?;
    let spec = AssemblySpec {
        provider,
        model: model.map(str::to_string),
        max_turns: args.max_turns,
        clarifications: None,
    };
    let assembly = match Assembly::new(setup, cwd, spec, env).await {
        Ok(assembly) => assembly,
        Err(err) => {
            forget_if_empty(&store, &thread.thread);
            return Err(Stop::usage(err.to_string()));
        }
    };
    for status in assembly.mcp().await.statuses().await {
        if let Some(error) = status.error {
            tracing::warn!(
                "MCP server `{}` is unavailable, its tools are missing: {error}",
                status.name
            );
        }
    }
    let result = async {
        let printer = RunPrinter::new(
            args.output_format,
            std::io::stdout().is_terminal(),
            std::io::stderr().is_terminal(),
        );
        assembly
            .set_thread(ThreadPlace {
                date: crate::clock::utc_date(thread.created_at),
                outputs: outputs.join(&thread.thread.id),
            })
            .await;
        let agent = assembly
            .prepare()
            .await
            .map_err(|e| Stop::usage(e.to_string()))?;
        let emit = |event: Event| printer.event(&event);
        let sink = StoreSink::new(&store);
        let result = run_live(
            &assembly,
            agent,
            &mut thread.thread,
            prompt,
            &sink,
            &emit,
            &cancel,
        )
        .await;
        printer.finish(&result);
        Ok::<_, Stop>(match result.status {
            RunStatus::Success => Exit::Success,
            RunStatus::Failed => Exit::Failure,
            RunStatus::Interrupted => Exit::Interrupted,
        })
    }
    .await;
    // The servers in use now (a change of the extensions file during the run restarted
    // them).
    let mcp = assembly.mcp().await;
    mcp.shutdown(super::run::SHUTDOWN_GRACE).await;
    watcher.abort();
    forget_if_empty(&store, &thread.thread);
    result
}

/// A run that never started leaves no empty thread behind.
fn forget_if_empty(store: &ThreadStore, thread: &Thread) {
    if !thread.resumed
        && thread.messages.is_empty()
        && let Err(err) = store.delete(&thread.id)
    {
        tracing::warn!("cannot remove the empty thread {}: {err}", thread.id);
    }
}

/// The prompt from `-p`, `-p -` (stdin) or piped stdin.
fn read_prompt(arg: Option<&str>) -> Result<String, Stop> {
    let from_stdin = || {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map(|_| text)
            .map_err(|e| Stop::usage(format!("cannot read the prompt from stdin: {e}")))
    };
    let no_prompt = || {
        Stop::usage(
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
        return Err(Stop::usage("the prompt is empty"));
    }
    Ok(prompt)
}

/// The model: a replay file, or the resolved OpenAI-compatible endpoint; recorded when
/// `--record` asks.
fn provider(
    args: &RunArgs,
    setup: &Setup,
    model: Option<&str>,
    cwd: &Path,
    env: EnvLookup<'_>,
) -> Result<Arc<dyn Provider>, Stop> {
    let provider: Arc<dyn Provider> = match &args.replay {
        Some(path) => {
            Arc::new(ReplayProvider::open(cwd.join(path)).map_err(|e| Stop::usage(e.to_string()))?)
        }
        None => Arc::new(
            openai_provider(&setup.app.value.models, model, env)
                .map_err(|e| Stop::usage(e.to_string()))?,
        ),
    };
    Ok(match &args.record {
        Some(path) => Arc::new(
            RecordingProvider::create(cwd.join(path), provider)
                .map_err(|e| Stop::usage(e.to_string()))?,
        ),
        None => provider,
    })
}

/// A thread being run, with the time it was created (the system prompt's date).
struct OpenThread {
    thread: Thread,
    created_at: i64,
}

/// The thread to continue (`--continue`, `--resume`) or a new one titled by the prompt.
fn open_thread(
    args: &RunArgs,
    store: &ThreadStore,
    cwd: &Path,
    prompt: &str,
    model: &str,
) -> Result<OpenThread, Stop> {
    let id = if args.continue_thread {
        match store
            .latest_in(cwd)
            .map_err(|e| Stop::failure(e.to_string()))?
        {
            Some(meta) => Some(meta.id),
            None => {
                return Err(Stop::usage(format!(
                    "no thread to continue in {}; start one without --continue",
                    cwd.display()
                )));
            }
        }
    } else {
        args.resume.clone()
    };
    let Some(id) = id else {
        let meta = store
            .create(cwd, model)
            .map_err(|e| Stop::failure(e.to_string()))?;
        store
            .set_title(&meta.id, &title_from(prompt))
            .map_err(|e| Stop::failure(e.to_string()))?;
        return Ok(OpenThread {
            thread: Thread {
                id: meta.id,
                ..Thread::default()
            },
            created_at: meta.created_at,
        });
    };
    let stored = store.load(&id).map_err(|e| Stop::usage(e.to_string()))?;
    Ok(OpenThread {
        created_at: stored.meta.created_at,
        thread: Thread {
            id: stored.meta.id,
            messages: stored.messages,
            state: stored.state,
            usage: stored.meta.usage,
            resumed: true,
        },
    })
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

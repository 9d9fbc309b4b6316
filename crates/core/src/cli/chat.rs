//! `antler` in a terminal with no prompt: the interactive chat. The session controller
//! runs the core; the TUI renders its updates and sends the user's commands. The screen
//! comes up before the MCP servers do: the session starts beside the TUI, which shows
//! each server as it is ready and holds typed messages until the session is.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::context::CommandContext;
use super::error::CliError;
use super::{Exit, RunArgs};
use crate::config::EnvLookup;
use crate::protocol::{ChatEnding, Command, ServerStatus, SessionInfo, Update};
use crate::session::controller::{Served, start_and_serve};
use crate::session::{Session, SessionOptions, Starting};

/// The chat's screen: it renders the session's updates and sends the user's commands until
/// the user quits (`bool`: open the thread picker first); an error says why the terminal
/// failed. The binary passes the `antler-tui` crate's, so the core does not depend on the
/// screen (an edit of the screen rebuilds neither the other).
pub type ChatScreen = fn(
    UnboundedSender<Command>,
    UnboundedReceiver<Update>,
    SessionInfo,
    bool,
) -> Pin<Box<dyn Future<Output = Result<ChatEnding, String>>>>;

/// Opens the chat on `screen`; returns when the user quits.
pub(super) async fn run_chat(screen: ChatScreen, args: &RunArgs, ctx: CommandContext<'_>) -> Exit {
    let env = ctx.env;
    let (starting, progress_receiver) = match prepare(args, ctx).await {
        Ok(prepared) => prepared,
        Err(exit) => return exit,
    };
    let info = starting.info();
    let (commands, command_receiver) = unbounded_channel();
    let (updates, update_receiver) = unbounded_channel();
    // SIGINT, SIGTERM and SIGHUP end the session like /quit: the session stops, which
    // closes the TUI's updates, which gives the terminal back. Registered before the
    // screen is taken, so no signal finds the terminal raw with nobody to restore it.
    let signals = match quit_signals() {
        Ok(signals) => Some(tokio::spawn(quit_on_signal(signals, commands.clone()))),
        Err(err) => {
            tracing::warn!("cannot watch for signals: {err}");
            None
        }
    };
    let quit = commands.clone();
    let pick_thread = args.resume == Some(None);
    let tui = async move {
        let ended = screen(commands, update_receiver, info, pick_thread).await;
        // However the TUI ended (a terminal error too), the session must end with it.
        let _ = quit.send(Command::Quit);
        ended
    };
    crate::ui::set_stderr_quiet(true);
    let (tui, served) = tokio::join!(
        tui,
        start_and_serve(starting, env, progress_receiver, command_receiver, updates)
    );
    crate::ui::set_stderr_quiet(false);
    let sigint = match signals {
        Some(task) => was_interrupted(task).await,
        None => false,
    };
    // The terminal is restored by now: errors go to stderr as before the screen was up.
    match (served, tui) {
        (Served::Failed(err), _) => CliError::from(err).report(),
        (_, Err(err)) => CliError::failure(err).report(),
        // A Ctrl-C before the session was ready interrupted its start, as one before the
        // screen was up would have.
        (_, Ok(ChatEnding::Interrupted)) => Exit::Interrupted,
        _ if sigint => Exit::Interrupted,
        (Served::Closed | Served::QuitWhileStarting, Ok(ChatEnding::Quit)) => Exit::Success,
    }
}

/// Everything that can fail on bad configuration, the model or the thread asked for fails
/// here, before the screen is taken; only the MCP servers start behind it, reporting on the
/// receiver returned.
async fn prepare(
    args: &RunArgs,
    ctx: CommandContext<'_>,
) -> Result<(Starting, UnboundedReceiver<ServerStatus>), Exit> {
    let CommandContext {
        model, cwd, env, ..
    } = ctx;
    let mut setup = ctx.setup().map_err(|err| CliError::from(err).report())?;
    // Servers on an old manifest stay idle; it is refreshed once the session is up.
    setup.accept_stale_manifests();
    let (progress, progress_receiver) = unbounded_channel();
    setup.report_server_progress(progress);
    let permissions = super::agent::permission_options(args).map_err(|err| err.report())?;
    if args.replay.is_none()
        && crate::provider::resolve::embedded_missing(&setup.app.value.models, model, env)
        && let Some(exit) = offer_embedded_model(cwd, env).await
    {
        return Err(exit);
    }
    let options = SessionOptions {
        model: model.map(str::to_string),
        max_turns: args.max_turns,
        thread: super::agent::start_thread(args),
        replay: args.replay.clone(),
        record: args.record.clone(),
        clarify: true,
        elicitation: crate::mcp::elicitation::Unattended::Decline,
        permissions,
        prompt: super::agent::prompt_options(args),
    };
    let starting =
        Session::prepare(setup, env, cwd, options).map_err(|err| CliError::from(err).report())?;
    Ok((starting, progress_receiver))
}

/// Whether the signal watcher saw an interrupt; one still waiting is stopped.
async fn was_interrupted(task: tokio::task::JoinHandle<bool>) -> bool {
    if task.is_finished() {
        task.await.unwrap_or(false)
    } else {
        task.abort();
        false
    }
}

/// SIGINT, SIGTERM and SIGHUP, registered now.
fn quit_signals() -> std::io::Result<[Signal; 3]> {
    Ok([
        signal(SignalKind::interrupt())?,
        signal(SignalKind::terminate())?,
        signal(SignalKind::hangup())?,
    ])
}

/// Sends `Quit` on the first of `signals`; true if it was SIGINT.
async fn quit_on_signal(signals: [Signal; 3], commands: UnboundedSender<Command>) -> bool {
    let [mut int, mut term, mut hup] = signals;
    let sigint = tokio::select! {
        _ = int.recv() => true,
        _ = term.recv() => false,
        _ = hup.recv() => false,
    };
    let _ = commands.send(Command::Quit);
    sigint
}

/// With no model to talk to but the embedded one, which is missing: asks on the terminal
/// whether to download it now. `None`: go on (installed now); `Some`: the exit to end with
/// (declined: the error saying what to set; or the failed install).
async fn offer_embedded_model(cwd: &Path, env: EnvLookup<'_>) -> Option<Exit> {
    use std::io::{BufRead, IsTerminal, Write};
    let missing = crate::provider::resolve::ModelSetupError::EmbeddedMissing { defaulted: true };
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Some(CliError::usage(missing.to_string()).report());
    }
    let model = crate::provider::embedded::catalog::CHAT;
    eprint!(
        "No model endpoint is configured. antler can answer with a small model on this \
         machine: {} ({}, downloaded once). Download it now? [y/N] ",
        model.title,
        model.size_text()
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    if !matches!(answer.trim(), "y" | "Y" | "yes" | "Yes") {
        return Some(CliError::usage(missing.to_string()).report());
    }
    match super::models::fetch_chat(model.name, None, cwd, env).await {
        Exit::Success => None,
        failed => Some(failed),
    }
}

//! `antler` in a terminal with no prompt: the interactive chat. The session controller
//! runs the core; the TUI renders its updates and sends the user's commands.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::mpsc::unbounded_channel;

use super::error::CliError;
use super::{Exit, RunArgs};
use crate::config::{ConfigPaths, EnvLookup};
use crate::protocol::Command;
use crate::session::controller::serve;
use crate::session::{Session, SessionOptions};
use crate::setup::Setup;
use crate::trust::ProjectTrust;
use crate::ui::tui::run_tui;

/// Opens the chat; returns when the user quits.
pub async fn run_chat(
    args: &RunArgs,
    model: Option<&str>,
    paths: &ConfigPaths,
    cwd: &Path,
    env: EnvLookup<'_>,
    trust: &Arc<ProjectTrust>,
) -> Exit {
    // Everything that can fail on bad configuration fails here, before the screen is taken.
    let setup = match Setup::load(paths, cwd, env, trust) {
        Ok(setup) => setup,
        Err(err) => return CliError::from(err).report(),
    };
    let options = SessionOptions {
        model: model.map(str::to_string),
        max_turns: args.max_turns,
        thread: super::agent::start_thread(args),
        replay: args.replay.clone(),
        record: args.record.clone(),
        clarify: true,
    };
    let (commands, command_receiver) = unbounded_channel();
    let (updates, update_receiver) = unbounded_channel();
    // Ctrl-C while the MCP servers start stops them (dropping the start) and exits 130.
    let started = tokio::select! {
        started = Session::start(setup, env, cwd, options) => started,
        _ = tokio::signal::ctrl_c() => return Exit::Interrupted,
    };
    let (session, questions) = match started {
        Ok(started) => started,
        Err(err) => return CliError::from(err).report(),
    };
    let info = session.info(false).await;
    // SIGTERM and SIGHUP end the session like /quit: the session stops, which closes the
    // TUI's updates, which gives the terminal back.
    let terminate = tokio::spawn(quit_on_terminate(commands.clone()));
    crate::ui::set_stderr_quiet(true);
    let (tui, ()) = tokio::join!(
        run_tui(commands, update_receiver, info),
        serve(session, command_receiver, questions, updates)
    );
    crate::ui::set_stderr_quiet(false);
    terminate.abort();
    tui.map_or_else(
        |err| CliError::failure(err.to_string()).report(),
        |()| Exit::Success,
    )
}

/// Sends `Quit` on SIGTERM or SIGHUP.
async fn quit_on_terminate(commands: tokio::sync::mpsc::UnboundedSender<Command>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = hup.recv() => {}
    }
    let _ = commands.send(Command::Quit);
}

//! The `antler` binary: process set-up (`.env`, logging, runtime), then the CLI.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::Context;
use clap::Parser;
use tracing_subscriber::filter::{EnvFilter, LevelFilter, Targets};
use tracing_subscriber::prelude::*;

use antler::cli::{Cli, CliError, Exit, run};
use antler::protocol::{ChatEnding, Command, SessionInfo, Update};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

fn main() -> ExitCode {
    // Project trust is decided and a trusted `.env` loaded before any thread exists (it
    // mutates the environment); the command line is read again after it, so that values
    // taken from the environment see `.env`.
    let first = Cli::parse();
    if let Err(err) = first.enter_dir() {
        return CliError::usage(err).report_as(first.error_format()).into();
    }
    let startup = match antler::cli::prepare(&first) {
        Ok(startup) => startup,
        Err(exit) => return exit.into(),
    };
    let cli = Cli::parse();
    init_logging(cli.verbose, cli.log_file.clone());
    for notice in &startup.notices {
        tracing::warn!("{notice}");
    }
    // One thread drives everything: tool calls and MCP servers are I/O-bound and run
    // concurrently on it; blocking work goes to tokio's blocking pool. Fewer threads also
    // means fewer allocator arenas (a one-shot run with 527 MCP tools peaks ~3 MB lower).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return Exit::Failure.into();
        }
    };
    let exit = runtime.block_on(run(cli, startup, chat_screen));
    // MCP children are killed by their drop handlers; give them a moment, never hang.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    exit.into()
}

/// The chat's screen ([`antler::cli::ChatScreen`]): the `antler-tui` crate's, which the
/// core does not depend on.
fn chat_screen(
    commands: UnboundedSender<Command>,
    updates: UnboundedReceiver<Update>,
    info: SessionInfo,
    pick_thread: bool,
) -> std::pin::Pin<Box<dyn Future<Output = Result<ChatEnding, String>>>> {
    Box::pin(async move {
        antler_tui::run_tui(commands, updates, info, pick_thread)
            .await
            .map_err(|err| err.to_string())
    })
}

/// Modules whose debug logs carry OAuth codes and token responses (rmcp's auth): never
/// below info, whatever `-v` or `ANTLER_LOG` asks.
const NO_SECRETS_BELOW_INFO: [(&str, LevelFilter); 2] = [
    ("rmcp::transport::auth", LevelFilter::INFO),
    ("rmcp::transport::common::auth", LevelFilter::INFO),
];

/// Warnings (or more with `-v`) go to stderr; everything, including MCP servers' stderr,
/// goes to the log file. MCP servers' stderr never reaches the terminal.
fn init_logging(verbose: u8, log_file: Option<PathBuf>) {
    let level = match verbose {
        0 => LevelFilter::WARN,
        1 => LevelFilter::INFO,
        _ => LevelFilter::DEBUG,
    };
    let stderr_filter = match std::env::var("ANTLER_LOG") {
        Ok(filter) => EnvFilter::try_new(&filter).unwrap_or_else(|err| {
            eprintln!("warning: ignoring ANTLER_LOG={filter:?}: {err}");
            EnvFilter::default().add_directive(level.into())
        }),
        Err(_) => EnvFilter::default().add_directive(level.into()),
    };
    // While the chat owns the screen, log lines must not reach the terminal.
    let stderr_writer = || -> Box<dyn std::io::Write> {
        if antler::ui::stderr_quiet() {
            Box::new(std::io::sink())
        } else {
            Box::new(std::io::stderr())
        }
    };
    let stderr_layer = tracing_subscriber::fmt::layer()
        .with_writer(stderr_writer)
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
        .without_time()
        .with_target(false)
        .with_filter(stderr_filter)
        .with_filter(
            Targets::new()
                .with_default(LevelFilter::TRACE)
                .with_target("antler::mcp::stderr", LevelFilter::OFF)
                .with_targets(NO_SECRETS_BELOW_INFO),
        );
    let file_layer = match open_log_file(log_file) {
        Ok(file) => Some(
            tracing_subscriber::fmt::layer()
                .with_writer(Mutex::new(file))
                .with_ansi(false)
                .with_filter(
                    Targets::new()
                        .with_default(LevelFilter::INFO)
                        .with_targets(NO_SECRETS_BELOW_INFO),
                ),
        ),
        Err(err) => {
            eprintln!("warning: no log file: {err:#}");
            None
        }
    };
    tracing_subscriber::registry()
        .with(stderr_layer)
        .with(file_layer)
        .init();
}

fn open_log_file(path: Option<PathBuf>) -> anyhow::Result<std::fs::File> {
    let path = match path {
        Some(p) => p,
        None => antler::config::dirs::state_dir(&|name: &str| std::env::var(name).ok())
            .context("neither XDG_STATE_HOME nor HOME is set")?
            .join("antler.log"),
    };
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        antler::base::private_file::create_dir(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    antler::base::private_file::open_log(&path)
        .with_context(|| format!("cannot open {}", path.display()))
}

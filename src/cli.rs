//! The command line: argument definitions and dispatch, nothing else.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::config::ConfigPaths;
use crate::setup::{Setup, SetupError};
use crate::ui::listing;

/// antler: a terminal LLM agent for people who connect many tools (MCP servers) to a model.
#[derive(Debug, Parser)]
#[command(name = "antler", version, arg_required_else_help = true)]
#[command(after_help = "\
Configuration files:
  config.yaml             --config, $ANTLER_CONFIG, ./config.yaml, $XDG_CONFIG_HOME/antler/config.yaml
  extensions_config.json  --extensions, $ANTLER_EXTENSIONS_CONFIG, ./extensions_config.json, ./mcp_config.json
  A .env file in the working directory is loaded first.

Exit status: 0 success, 1 an MCP server failed, 2 a configuration or usage error.")]
pub struct Cli {
    /// The config.yaml to use.
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The extensions_config.json (MCP servers) to use.
    #[arg(long, global = true, value_name = "PATH")]
    pub extensions: Option<PathBuf>,
    /// More log output on stderr (-v info, -vv debug); `ANTLER_LOG` takes a full filter.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Where to write the log, including MCP servers' stderr (default:
    /// $XDG_STATE_HOME/antler/antler.log).
    #[arg(long, global = true, value_name = "PATH", env = "ANTLER_LOG_FILE")]
    pub log_file: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands; each maps to one front-end action over the same setup.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inspect the toolset: configured, built-in and MCP tools.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Inspect the MCP servers of the extensions config.
    #[command(subcommand)]
    Mcp(McpCommand),
}

/// `antler tools ...`: what the model could be offered, for checking a configuration.
#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List every tool with its tier, server, group and parameter count.
    List(ToolsListArgs),
}

/// Options of `antler tools list`; `--group` mirrors DeerFlow's group selection.
#[derive(Debug, Args)]
pub struct ToolsListArgs {
    /// Print a JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Only configured tools of this group (repeatable); built-in and MCP tools are kept.
    #[arg(long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
}

/// `antler mcp ...`: the MCP servers themselves, for diagnosing connections.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start every MCP server and show its transport, status, tool count, protocol version
    /// and start-up time.
    List(JsonFlag),
}

/// `--json`, for scripts and CI.
#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The documented exit statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything worked.
    Success = 0,
    /// The command ran but something failed (e.g. an MCP server did not start).
    Failure = 1,
    /// Usage or configuration error.
    Config = 2,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit as u8)
    }
}

/// Runs a parsed command line and returns its exit status. Output goes to stdout,
/// diagnostics to stderr.
pub async fn run(cli: Cli) -> Exit {
    let cwd = match std::env::current_dir() {
        Ok(dir) => dir,
        Err(err) => {
            eprintln!("error: cannot read the working directory: {err}");
            return Exit::Config;
        }
    };
    let env = |name: &str| std::env::var(name).ok();
    let paths = ConfigPaths {
        config: cli.config,
        extensions: cli.extensions,
    };
    let result = async {
        let mut setup = Setup::load(&paths, &cwd, &env)?;
        let mcp = setup.mcp(&env).await?;
        let output = match cli.command {
            Command::Tools(ToolsCommand::List(args)) => {
                let groups = (!args.groups.is_empty()).then_some(args.groups.as_slice());
                let toolset = setup.toolset(&mcp, groups).await?;
                let rows = listing::tool_rows(&toolset);
                if args.json {
                    to_json(&rows)
                } else {
                    listing::tools_table(&rows)
                }
            }
            Command::Mcp(McpCommand::List(flag)) => {
                let statuses = mcp.statuses().await;
                if flag.json {
                    to_json(&statuses)
                } else {
                    listing::servers_table(&statuses)
                }
            }
        };
        let statuses = mcp.statuses().await;
        mcp.shutdown(std::time::Duration::from_secs(1)).await;
        let exit = if !mcp.skipped().is_empty() {
            Exit::Config
        } else if statuses.iter().any(|s| s.status == "failed") {
            Exit::Failure
        } else {
            Exit::Success
        };
        Ok::<_, SetupError>(match write_stdout(&output) {
            Ok(()) => exit,
            Err(err) => {
                eprintln!("error: cannot write the output: {err}");
                Exit::Failure
            }
        })
    };
    match result.await {
        Ok(exit) => exit,
        Err(err) => {
            eprintln!("error: {err}");
            Exit::Config
        }
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    // Serialising plain structs of strings and numbers cannot fail; "null" is never printed
    // in practice but keeps this panic-free.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| String::from("null"));
    text.push('\n');
    text
}

/// Writes the command's output. A reader that went away (`antler ... | head`) is not an
/// error worth a message; anything else is.
fn write_stdout(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

//! The command line: argument definitions and dispatch, nothing else.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod run;

pub use run::run;

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
    /// List every tool with its tier, server, group, parameter count and whether it is
    /// deferred behind tool_search.
    List(ToolsListArgs),
    /// Run the same search as the tool_search tool, over the configured MCP tools or a
    /// catalog file.
    Search(ToolsSearchArgs),
    /// Count the tokens (o200k) of binding every MCP schema vs. the deferred prompt section
    /// plus the tool_search schema.
    Stats(ToolsStatsArgs),
}

/// Options of `antler tools search`.
#[derive(Debug, Args)]
pub struct ToolsSearchArgs {
    /// Search this catalog file ({"server": [{"name", "description", "inputSchema"}]})
    /// instead of the configured MCP servers.
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// How many results a ranked search returns (default: tool_search.max_results).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=100))]
    pub limit: Option<u16>,
    /// Print JSON: {"query", "results": [{"name", "description", "score"}]}.
    #[arg(long)]
    pub json: bool,
    /// Read JSONL lines with a "query" field and print one JSON line per query, in order.
    #[arg(long, value_name = "FILE", conflicts_with = "query")]
    pub queries: Option<PathBuf>,
    /// The query: `select:a,b`, `+word rest`, a regular expression, or plain words.
    #[arg(required_unless_present = "queries")]
    pub query: Option<String>,
}

/// Options of `antler tools stats`.
#[derive(Debug, Args)]
pub struct ToolsStatsArgs {
    /// Measure this catalog file instead of the configured MCP servers.
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// Print JSON with `full_tokens`, `deferred_tokens` and `reduction_percent`.
    #[arg(long)]
    pub json: bool,
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

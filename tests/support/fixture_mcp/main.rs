//! `fixture_mcp`: a scriptable MCP server that the integration tests start as
//! a child process, to exercise antler's MCP client over stdio, streamable
//! HTTP and the legacy HTTP+SSE transport.
//!
//! Conventions the tests rely on:
//! - stdio: stdout carries only JSON-RPC; one line "fixture_mcp: starting
//!   (stdio)" goes to stderr at start.
//! - http / sse: the only stdout line is `LISTENING http://127.0.0.1:PORT`,
//!   printed once the socket is bound.

mod features;
mod hostile;
mod oauth;
mod server;
mod sse;

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse as _, Response};
use clap::{Parser, ValueEnum};
use rmcp::ServiceExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::server::{Behaviour, Fixture};

/// A fixture MCP server for antler's integration tests.
#[derive(Debug, Parser)]
struct Cli {
    /// Transport to serve on.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    transport: Transport,
    /// TCP port for http/sse on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Serve the tools of this catalog file instead of the built-in tools.
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// With --catalog: serve only this server's tools.
    #[arg(long, requires = "catalog")]
    server: Option<String>,
    /// Return at most N tools per tools/list page.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    page_size: Option<u64>,
    /// Delay the answer to `initialize` by this many milliseconds.
    #[arg(long, default_value_t = 0)]
    startup_delay_ms: u64,
    /// Never answer `initialize`.
    #[arg(long)]
    hang: bool,
    /// Answer only the first listing of the tools; never answer `tools/list` again.
    #[arg(long)]
    hang_relist: bool,
    /// For http/sse: answer 401 to requests without this exact header,
    /// given as "Name: value".
    #[arg(long, value_parser = parse_header)]
    require_header: Option<RequiredHeader>,
    /// `serverInfo.name` to report.
    #[arg(long, default_value = "fixture_mcp")]
    name: String,
    /// Serve stdio by hand and answer every tool call this broken way.
    #[arg(long, value_enum)]
    hostile: Option<hostile::Hostile>,
    /// Append one line to this file each time the process starts (tests count starts).
    #[arg(long)]
    starts_log: Option<PathBuf>,
    /// The `instructions` to send with `initialize`.
    #[arg(long)]
    instructions: Option<String>,
    /// With --hostile: answer `initialize` with this protocol version, whatever the
    /// client offered (else the one it offered).
    #[arg(long, requires = "hostile")]
    protocol_version: Option<String>,
    /// Append the request id of each `notifications/cancelled` to this file.
    #[arg(long)]
    cancelled_log: Option<PathBuf>,
    /// If this file exists at start, also offer one echo-like tool per line of it (so a
    /// test can change the live list without changing the server's configuration).
    #[arg(long)]
    extra_tools_file: Option<PathBuf>,
    /// Offer resources (a text note, a PNG, a template) and a `tiny_image` tool.
    #[arg(long)]
    resources: bool,
    /// Announce resources but list none (as mcp-server-time does).
    #[arg(long, conflicts_with = "resources")]
    empty_resources: bool,
    /// Announce resources and never answer `resources/list`.
    #[arg(long, conflicts_with = "resources")]
    hang_resources: bool,
    /// Offer the prompt `greet(name, style?)`.
    #[arg(long)]
    prompts: bool,
    /// Offer the tool `ask_user`, which elicits a form from the user.
    #[arg(long)]
    elicitation: bool,
    /// Over http: be an OAuth authorization server too, and answer `/mcp` only with its
    /// access tokens.
    #[arg(long)]
    oauth: bool,
    /// With --oauth: append each registration and grant to this file.
    #[arg(long, requires = "oauth")]
    oauth_log: Option<PathBuf>,
    /// With --oauth: the first access token's lifetime in seconds (0: expired at once).
    #[arg(long, default_value_t = 3600, requires = "oauth")]
    oauth_first_lifetime_secs: u64,
    /// With --oauth: refuse every signed-in request for want of this scope (403).
    #[arg(long, requires = "oauth")]
    oauth_demand_scope: Option<String>,
    /// Exit with an error at start if this file exists.
    #[arg(long)]
    fail_if_exists: Option<PathBuf>,
    /// Over stdio: once the client has closed stdin, wait this many milliseconds before
    /// exiting, like a server with a slow clean-up.
    #[arg(long, default_value_t = 0)]
    exit_delay_ms: u64,
    /// With --exit-delay-ms: stop waiting as soon as this file exists, and create
    /// `<file>.seen` before exiting, so a test can tell that it let the server go (rather
    /// than the client killing it). Such a server outlives SIGTERM.
    #[arg(long)]
    exit_release: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Transport {
    /// MCP over stdin/stdout.
    Stdio,
    /// MCP streamable HTTP at `/mcp`.
    Http,
    /// Legacy MCP HTTP+SSE at `/sse` and `/message`.
    Sse,
}

/// A header every HTTP request must carry, with exactly this value.
#[derive(Debug, Clone)]
struct RequiredHeader {
    name: HeaderName,
    value: HeaderValue,
}

fn parse_header(text: &str) -> Result<RequiredHeader, String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("expected \"Name: value\", got {text:?}"))?;
    Ok(RequiredHeader {
        name: HeaderName::try_from(name.trim()).map_err(|error| error.to_string())?,
        value: HeaderValue::try_from(value.trim()).map_err(|error| error.to_string())?,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Some(log) = &cli.starts_log {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .context("opening --starts-log")?;
        writeln!(file, "{}", std::process::id())?;
    }
    if let Some(marker) = &cli.fail_if_exists
        && marker.exists()
    {
        anyhow::bail!("{} exists (--fail-if-exists)", marker.display());
    }
    if let Some(mode) = cli.hostile {
        return hostile::serve(mode, cli.protocol_version.as_deref());
    }
    let behaviour = Behaviour {
        name: cli.name.clone(),
        startup_delay: Duration::from_millis(cli.startup_delay_ms),
        hang: cli.hang,
        hang_relist: cli.hang_relist,
        instructions: cli.instructions.clone(),
        cancelled_log: cli.cancelled_log.clone(),
        resources: cli.resources,
        empty_resources: cli.empty_resources,
        hang_resources: cli.hang_resources,
        prompts: cli.prompts,
        elicitation: cli.elicitation,
        authorization: cli.oauth,
        page_size: cli
            .page_size
            .map(usize::try_from)
            .transpose()
            .context("--page-size is too large")?,
    };
    let extra = match &cli.extra_tools_file {
        Some(file) if file.exists() => std::fs::read_to_string(file)?
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    let fixture = match &cli.catalog {
        Some(catalog) => Fixture::catalog(behaviour, catalog, cli.server.as_deref())?,
        None => Fixture::builtin(behaviour, &extra),
    };
    // A server a test lets go handles SIGTERM (as one with state to save would): it waits
    // to be released, and only SIGKILL cuts it short. Otherwise SIGTERM ends it at once, as
    // it does a Python or Node server.
    let _term = cli
        .exit_release
        .as_ref()
        .map(|_| tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()))
        .transpose()?;
    match cli.transport {
        Transport::Stdio => {
            serve_stdio(fixture).await?;
            exit_delay(&cli).await
        }
        Transport::Http => {
            let service = StreamableHttpService::new(
                move || Ok(fixture.clone()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default(),
            );
            let oauth = cli.oauth;
            let (log, lifetime) = (cli.oauth_log.clone(), cli.oauth_first_lifetime_secs);
            let demand = cli.oauth_demand_scope.clone();
            serve_http(
                "http",
                move |base| {
                    let router = Router::new().nest_service("/mcp", service);
                    if !oauth {
                        return router;
                    }
                    let state = oauth::OAuth::new(base, log, Duration::from_secs(lifetime), demand);
                    router
                        .layer(middleware::from_fn_with_state(
                            state.clone(),
                            oauth::require_bearer,
                        ))
                        .merge(oauth::router(state))
                },
                &cli,
            )
            .await
        }
        Transport::Sse => serve_http("sse", |_| sse::router(fixture), &cli).await,
    }
}

async fn serve_stdio(fixture: Fixture) -> anyhow::Result<()> {
    // Tests check that the client routes a server's stderr to its log.
    eprintln!("fixture_mcp: starting (stdio)");
    let running = fixture
        .serve(rmcp::transport::stdio_pipes())
        .await
        .context("MCP start-up over stdio")?;
    running.waiting().await.context("MCP service task")?;
    Ok(())
}

/// The wait of `--exit-delay-ms`, cut short by `--exit-release`.
async fn exit_delay(cli: &Cli) -> anyhow::Result<()> {
    let until = tokio::time::Instant::now() + Duration::from_millis(cli.exit_delay_ms);
    while tokio::time::Instant::now() < until {
        if let Some(release) = &cli.exit_release
            && release.exists()
        {
            let mut seen = release.clone().into_os_string();
            seen.push(".seen");
            std::fs::write(&seen, "").with_context(|| format!("writing {seen:?}"))?;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

/// Serves the router `make` builds for the base URL (`http://127.0.0.1:PORT`).
async fn serve_http(
    kind: &str,
    make: impl FnOnce(String) -> Router,
    cli: &Cli,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", cli.port))
        .await
        .with_context(|| format!("binding 127.0.0.1:{}", cli.port))?;
    let address = listener.local_addr()?;
    let router = make(format!("http://{address}"));
    let router = match cli.require_header.clone() {
        Some(required) => router.layer(middleware::from_fn_with_state(required, check_header)),
        None => router,
    };
    eprintln!("fixture_mcp: starting ({kind})");
    // Tests read this line to learn the port.
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "LISTENING http://{address}")?;
    stdout.flush()?;
    drop(stdout);
    // No Nagle: each answer goes out at once, as from a real server (otherwise a small
    // write waits for the client's delayed ACK, ~40 ms).
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router).await?;
    Ok(())
}

/// Rejects with 401 any request that lacks the `--require-header` header.
async fn check_header(
    State(required): State<RequiredHeader>,
    request: Request,
    next: Next,
) -> Response {
    if request.headers().get(&required.name) == Some(&required.value) {
        next.run(request).await
    } else {
        StatusCode::UNAUTHORIZED.into_response()
    }
}

//! Connecting to one MCP server over its configured transport, up to its first tool list.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{ClientConfig, Implementation, PaginatedRequestParams, ProtocolVersion};
use rmcp::service::RunningService;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::sync::watch;

use super::McpError;
use super::incoming::Incoming;
use super::oauth::{self, challenge::Challenges};
use super::readable::readable_error;
use super::transport::http::Opened;
use super::transport::{self, Judged, RawTransport};
use crate::base::process::ProcessGroupGuard;
use crate::config::{McpServerConfig, TransportKind};

/// The client side of one connection. `tools/list_changed` is seen by the transport
/// ([`Incoming::announcing`]); progress notifications go to the call that waits for them
/// ([`ProgressRoutes`](super::progress::ProgressRoutes)); a changed prompt list (seen by
/// the transport too) marks the prompts held as stale.
#[derive(Clone, Default)]
pub(super) struct Client {
    /// The calls in flight that listen for progress, by progress token.
    pub progress: super::progress::ProgressRoutes,
    /// Set by `prompts/list_changed` ([`Incoming::prompts_changed`]): the prompts held are
    /// listed again when next asked for.
    pub prompts_changed: Arc<std::sync::atomic::AtomicBool>,
    /// The calls in flight that take the server's requests for input.
    pub elicit: super::elicitation::Route,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::default();
        info.client_info = Implementation::new("antler", env!("CARGO_PKG_VERSION"));
        // `initialize` offers the newest revision that has the handshake: a later one
        // (rmcp's default) starts with `server/discover` instead, which no server that
        // answers `initialize` knows. A server that speaks an older revision answers with
        // it, and [`check_version`] takes what antler speaks.
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        // Always, whoever answers (see `elicitation`): form and URL requests.
        info.capabilities.elicitation = Some(
            rmcp::model::ElicitationCapability::new()
                .with_form(rmcp::model::FormElicitationCapability::new())
                .with_url(rmcp::model::UrlElicitationCapability::new()),
        );
        info
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        tokio::select! {
            result = self.elicit.ask(request) => Ok(result),
            () = context.ct.cancelled() => Ok(rmcp::model::ElicitResult::new(
                rmcp::model::ElicitationAction::Cancel,
            )),
        }
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        // A token that no call waits for (finished, or made up) is dropped.
        self.progress.offer(params);
    }
}

/// A live connection.
pub(super) type McpService = RunningService<RoleClient, Client>;

/// A server that completed the handshake and listed its tools. Its fields are updated by
/// re-listing and taken apart on shutdown.
pub(super) struct Connection {
    /// The running client.
    pub service: McpService,
    /// Kills a stdio server's process group if it is dropped without a clean shutdown.
    pub process_group: Option<ProcessGroupGuard>,
    /// Every tool, all pages followed.
    pub tools: Vec<rmcp::model::Tool>,
    /// The features the server announced, by name ([`capabilities`]).
    pub capabilities: Vec<String>,
    /// Its prompts, if it offers any, all pages followed (a failed listing is none).
    pub prompts: Vec<rmcp::model::Prompt>,
    /// How many resources and templates the first page of each listed, when it announced
    /// resources and the listing answered ([`count_resources`]).
    pub resources: Option<usize>,
    /// The shortest `ttlMs` of the listing's pages, if the server gave one.
    pub ttl_ms: Option<u64>,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// The change generation the tool list is current for.
    pub listed_generation: u64,
    /// Time from start to the first tool list.
    pub startup: Duration,
    /// What the transport found wrong with the server's messages, if anything.
    pub incoming: Incoming,
    /// Why the server last refused a request for want of authorization (HTTP only).
    pub challenges: Challenges,
    /// The access token a grant issued for this connection (kept tokens are redacted
    /// with the session's secrets): a server that echoes it does not hand it on.
    pub issued_token: Option<String>,
}

/// Connects, handshakes and lists tools, all within the server's start-up timeout. The
/// `changes` generation is bumped whenever the server announces a changed tool list.
pub(super) async fn connect(
    config: &McpServerConfig,
    changes: watch::Sender<u64>,
    tokens: Option<&oauth::TokenStore>,
) -> Result<Connection, McpError> {
    let started = Instant::now();
    let timeout = config.startup_timeout;
    match tokio::time::timeout(timeout, connect_inner(config, changes, tokens)).await {
        Ok(Ok(Started {
            service,
            listing: Listing { tools, ttl_ms },
            listed_generation,
            process_group,
            incoming,
            prompts,
            resources,
            challenges,
            issued_token,
        })) => {
            let info = service.peer_info();
            let protocol_version = info
                .as_ref()
                .map(|info| info.protocol_version.to_string())
                .unwrap_or_default();
            let capabilities = info.map_or_else(Vec::new, |i| capabilities(&i.capabilities));
            Ok(Connection {
                service,
                process_group,
                tools,
                capabilities,
                prompts,
                resources,
                ttl_ms,
                protocol_version,
                listed_generation,
                startup: started.elapsed(),
                incoming,
                challenges,
                issued_token,
            })
        }
        Ok(Err(err)) => Err(err),
        Err(_) => Err(McpError::StartupTimeout(timeout)),
    }
}

/// What `connect_inner` hands back.
struct Started {
    service: McpService,
    listing: Listing,
    listed_generation: u64,
    process_group: Option<ProcessGroupGuard>,
    incoming: Incoming,
    prompts: Vec<rmcp::model::Prompt>,
    resources: Option<usize>,
    challenges: Challenges,
    issued_token: Option<String>,
}

async fn connect_inner(
    config: &McpServerConfig,
    changes: watch::Sender<u64>,
    tokens: Option<&oauth::TokenStore>,
) -> Result<Started, McpError> {
    let mut process_group = None;
    let challenges = Challenges::default();
    let mut issued = None;
    let incoming = Incoming::announcing(changes.clone());
    let handler = Client {
        prompts_changed: incoming.prompts_changed(),
        ..Client::default()
    };
    // Every transport is opened raw and served judged (`transport::Judged`): what a server
    // sends is checked before rmcp sees it, whichever way it comes.
    let service = match config.transport {
        TransportKind::Stdio => {
            let raw = transport::stdio::spawn(config)?;
            process_group = Some(ProcessGroupGuard::new(raw.id()));
            serve(handler, raw, &incoming, config)
                .await
                .map_err(|err| match handshake(err) {
                    McpError::Handshake(reason) => McpError::Handshake(format!(
                        "{reason}; the server's stderr is in the antler log (--log-file)"
                    )),
                    other => other,
                })?
        }
        TransportKind::Http => {
            let (opened, token) = transport::http::open(config, tokens, &challenges).await?;
            issued = token;
            let served = match opened {
                Opened::Signed(raw) => serve(handler, raw, &incoming, config).await,
                Opened::Plain(raw) => serve(handler, raw, &incoming, config).await,
            };
            served.map_err(|err| {
                challenges
                    .refusal(config, tokens)
                    .unwrap_or_else(|| handshake(err))
            })?
        }
        TransportKind::Sse => {
            let raw = transport::sse::open(config).await?;
            serve(handler, raw, &incoming, config)
                .await
                .map_err(handshake)?
        }
    };
    check_version(&service)?;
    // A list_changed that arrives during the listing below makes it stale at once.
    let generation = *changes.borrow();
    let listing = list_all_tools(service.peer())
        .await
        .map_err(|err| challenges.refusal(config, tokens).unwrap_or(err))?;
    let (prompts, resources) = list_features(&service, config).await;
    Ok(Started {
        service,
        listing,
        listed_generation: generation,
        process_group,
        incoming,
        prompts,
        resources,
        challenges,
        issued_token: issued,
    })
}

/// The lifecycle's version negotiation: the server answered `initialize` with the
/// revision it wants, which must be one antler speaks (with the handshake: rmcp knows the
/// revisions up to the one `initialize` offers), or the connection is not used.
fn check_version(service: &McpService) -> Result<(), McpError> {
    let Some(info) = service.peer_info() else {
        return Ok(());
    };
    let version = &info.protocol_version;
    let spoken = ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .any(|known| known == version && known <= &ProtocolVersion::LATEST_WITH_INITIALIZE);
    match spoken {
        true => Ok(()),
        false => Err(McpError::Handshake(format!(
            "the server answered with MCP protocol version `{}`, which antler does not speak \
             (it speaks {})",
            crate::base::text::short_line(version.as_str(), 40).0,
            ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .filter(|v| *v <= &ProtocolVersion::LATEST_WITH_INITIALIZE)
                .map(ProtocolVersion::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The rmcp client over `raw`, every frame judged by `incoming`.
async fn serve<T: RawTransport>(
    handler: Client,
    raw: T,
    incoming: &Incoming,
    config: &McpServerConfig,
) -> Result<McpService, rmcp::service::ClientInitializeError> {
    handler
        .serve(Judged::new(raw, incoming.clone(), &config.name))
        .await
}

/// The prompts and the resource count of a server that announced them, each asked within
/// a share of the start-up time of its own: a server slow to list either keeps its tools.
async fn list_features(
    service: &McpService,
    config: &McpServerConfig,
) -> (Vec<rmcp::model::Prompt>, Option<usize>) {
    let info = service.peer_info();
    let offers_prompts = info
        .as_ref()
        .is_some_and(|i| i.capabilities.prompts.is_some());
    let offers_resources = info
        .as_ref()
        .is_some_and(|i| i.capabilities.resources.is_some());
    let budget = FEATURES_TIMEOUT.min(config.startup_timeout / 4);
    let prompts = async {
        if !offers_prompts {
            return Vec::new();
        }
        match tokio::time::timeout(budget, list_all_prompts(service.peer())).await {
            Ok(Ok(prompts)) => prompts,
            Ok(Err(err)) => {
                tracing::warn!(server = %config.name, "{err}; its prompts are not offered");
                Vec::new()
            }
            Err(_) => {
                tracing::warn!(server = %config.name, "listing its prompts timed out; they are not offered");
                Vec::new()
            }
        }
    };
    let resources = async {
        match offers_resources {
            true => tokio::time::timeout(budget, count_resources(service.peer()))
                .await
                .ok()
                .flatten(),
            false => None,
        }
    };
    tokio::join!(prompts, resources)
}

/// How many resources and resource templates a server that announced resources lists on
/// the first page of each (a further page counts as one more): zero means the resource
/// tools would offer nothing, as for a server that announces the feature by default. A
/// listing that fails is no count (the tools are offered, as the server announced).
async fn count_resources(peer: &rmcp::Peer<RoleClient>) -> Option<usize> {
    let first = || Some(PaginatedRequestParams::default());
    let (resources, templates) = tokio::join!(
        peer.list_resources(first()),
        peer.list_resource_templates(first())
    );
    let resources = resources.ok()?;
    let templates = templates.map_or(0, |t| {
        t.resource_templates.len() + usize::from(t.next_cursor.is_some())
    });
    Some(resources.resources.len() + usize::from(resources.next_cursor.is_some()) + templates)
}

/// The most time the prompts and the resource count take at connect (or a quarter of
/// the server's start-up timeout, if less).
const FEATURES_TIMEOUT: Duration = Duration::from_secs(5);

/// At most this many prompts of a server are kept.
const MAX_PROMPTS: usize = 500;

/// At most this many `tools/list` pages; a server that pages forever is broken.
const MAX_PAGES: usize = 1000;

/// A whole tool list and how long the server says it stays fresh.
pub(crate) struct Listing {
    pub tools: Vec<rmcp::model::Tool>,
    /// The shortest `ttlMs` of its pages.
    pub ttl_ms: Option<u64>,
}

/// One page of a listing: its items, the next cursor, and its `ttlMs`.
type Page<T> = (Vec<T>, Option<String>, Option<u64>);

/// Follows a listing's pagination to the end. Unlike rmcp's `list_all_*` it stops with an
/// error when a server repeats a cursor or never stops paging. Returns the items and the
/// shortest `ttlMs` of the pages.
async fn all_pages<T, F, Fut>(
    mut fetch: F,
    error: fn(String) -> McpError,
) -> Result<(Vec<T>, Option<u64>), McpError>
where
    F: FnMut(PaginatedRequestParams) -> Fut,
    Fut: std::future::Future<Output = Result<Page<T>, rmcp::ServiceError>>,
{
    let mut items = Vec::new();
    let mut ttl_ms: Option<u64> = None;
    let mut seen = std::collections::HashSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let mut params = PaginatedRequestParams::default();
        params.cursor = cursor.clone();
        let (page, next, ttl) = fetch(params).await.map_err(|e| error(readable_error(&e)))?;
        items.extend(page);
        if let Some(ttl) = ttl {
            ttl_ms = Some(ttl_ms.map_or(ttl, |t| t.min(ttl)));
        }
        match next {
            None => return Ok((items, ttl_ms)),
            Some(next) if !seen.insert(next.clone()) => {
                return Err(error(format!("the server repeated the cursor {next:?}")));
            }
            Some(next) => cursor = Some(next),
        }
    }
    Err(error(format!("more than {MAX_PAGES} pages")))
}

/// Every tool of the server, all pages followed (see [`all_pages`]).
pub(crate) async fn list_all_tools(peer: &rmcp::Peer<RoleClient>) -> Result<Listing, McpError> {
    let fetch = |params| async move {
        let page = peer.list_tools(Some(params)).await?;
        Ok((page.tools, page.next_cursor, page.ttl_ms))
    };
    let (tools, ttl_ms) = all_pages(fetch, McpError::ListTools).await?;
    Ok(Listing { tools, ttl_ms })
}

/// Every prompt of the server, all pages followed (see [`all_pages`]).
pub(crate) async fn list_all_prompts(
    peer: &rmcp::Peer<RoleClient>,
) -> Result<Vec<rmcp::model::Prompt>, McpError> {
    let fetch = |params| async move {
        let page = peer.list_prompts(Some(params)).await?;
        Ok((page.prompts, page.next_cursor, None))
    };
    let mut prompts = all_pages(fetch, McpError::ListPrompts).await?.0;
    // Kept in the manifest: a server cannot make it grow without end.
    prompts.truncate(MAX_PROMPTS);
    Ok(prompts)
}

/// The capabilities a server announced, by name.
pub(super) fn capabilities(offered: &rmcp::model::ServerCapabilities) -> Vec<String> {
    [
        ("tools", offered.tools.is_some()),
        ("resources", offered.resources.is_some()),
        ("prompts", offered.prompts.is_some()),
        ("completions", offered.completions.is_some()),
        ("logging", offered.logging.is_some()),
    ]
    .into_iter()
    .filter(|(_, on)| *on)
    .map(|(name, _)| name.to_string())
    .collect()
}

/// A handshake error in words, without rmcp's transport type names.
fn handshake(err: rmcp::service::ClientInitializeError) -> McpError {
    use rmcp::service::ClientInitializeError as E;
    McpError::Handshake(match &err {
        E::TransportError { error, context } => {
            let cause = readable_error(error.error.as_ref());
            if cause.contains("Broken pipe") || cause.contains("connection closed") {
                format!("the server closed the connection ({context}): {cause}")
            } else {
                format!("{context}: {cause}")
            }
        }
        E::ConnectionClosed(context) => format!("the server closed the connection ({context})"),
        _ => readable_error(&err),
    })
}

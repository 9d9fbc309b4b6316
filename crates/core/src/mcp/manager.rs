//! All MCP servers of one extensions config, started together.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::manifest::{ManifestStore, entry_hash};
use super::server::{McpServer, StartPlan};
use super::tool::McpTool;
use crate::config::{ExtensionsConfig, McpServerConfig, SkippedServer, StartMode};
use crate::protocol::{ServerState, ServerStatus};
use crate::tools::Tool;
use crate::tools::naming::ToolNamer;

/// The MCP servers of one extensions config. Dropping it stops them (child processes are
/// killed, connections closed).
pub struct McpManager {
    servers: Vec<Arc<McpServer>>,
    skipped: Vec<SkippedServer>,
    secrets: Vec<String>,
}

/// What decides how the servers start, besides their own entries.
#[derive(Debug, Clone)]
pub struct StartSettings {
    /// Where manifests are kept (none: every server starts at once, nothing is cached).
    pub manifests: Option<ManifestStore>,
    /// The folder stdio servers start in (part of their manifests' identity).
    pub cwd: PathBuf,
    /// `mcp.manifest_max_age_secs`, for servers that do not set their own.
    pub max_age: Duration,
    /// Use a manifest that is too old too, for a front-end that refreshes it in the
    /// background (the chat).
    pub accept_stale: bool,
    /// Where each server's status goes as soon as it is ready (idle, connected or
    /// failed), for a front-end that shows start-up progress.
    pub progress: Option<tokio::sync::mpsc::UnboundedSender<ServerStatus>>,
    /// Who answers the servers' requests for input: a front-end, or `-p`'s policy.
    pub elicitations: super::elicitation::Answerer,
    /// Where OAuth tokens are kept (`antler mcp login`).
    pub tokens: Option<super::oauth::TokenStore>,
}

impl StartSettings {
    /// Settings that start every server at once and keep no manifest: for callers that
    /// need the live servers whatever was cached (the integration tests of the library).
    pub fn eager() -> Self {
        Self {
            manifests: None,
            cwd: PathBuf::new(),
            max_age: Duration::ZERO,
            accept_stale: false,
            progress: None,
            elicitations: super::elicitation::Answerer::default(),
            tokens: None,
        }
    }

    /// How `server` starts: lazily unless its entry says `start: eager`, whether its tools
    /// are deferred or bound (bound from the manifest, each call checked against the live
    /// list as a deferred one is).
    fn plan(&self, server: &McpServerConfig) -> StartPlan {
        StartPlan {
            manifests: self.manifests.clone(),
            entry_hash: entry_hash(server, &self.cwd),
            lazy: server.policy.start == StartMode::Lazy,
            max_age: server.policy.manifest_max_age.unwrap_or(self.max_age),
            accept_stale: self.accept_stale,
            elicitations: self.elicitations.clone(),
            tokens: self.tokens.clone(),
        }
    }
}

impl McpManager {
    /// Starts every enabled server that cannot stay idle concurrently: start-up takes as
    /// long as the slowest of them (bounded by its own timeout), not the sum; a server
    /// whose fresh manifest lists its tools is not started at all. Failures become
    /// statuses.
    pub async fn start(config: ExtensionsConfig, settings: &StartSettings) -> Self {
        let servers = futures::future::join_all(config.servers.into_iter().map(|server| {
            let plan = settings.plan(&server);
            async move {
                let server = McpServer::start(server, plan).await;
                if let Some(progress) = &settings.progress {
                    // A front-end that went away no longer needs to know.
                    let _ = progress.send(server.status().await);
                }
                server
            }
        }))
        .await;
        Self {
            servers: servers.into_iter().map(Arc::new).collect(),
            skipped: config.skipped,
            secrets: config.secrets,
        }
    }

    /// The values of the servers' configuration that must never reach the model (header
    /// values, secret `env` values and what secret variables expanded to).
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// A manager with no servers.
    pub fn empty() -> Self {
        Self {
            servers: Vec::new(),
            skipped: Vec::new(),
            secrets: Vec::new(),
        }
    }

    /// The status of every server in config order, then the skipped entries as failed.
    pub async fn statuses(&self) -> Vec<ServerStatus> {
        let mut statuses = Vec::new();
        for server in &self.servers {
            statuses.push(server.status().await);
        }
        statuses.extend(self.skipped.iter().map(|s| ServerStatus {
            name: s.name.clone(),
            transport: String::from("-"),
            status: ServerState::Failed,
            error: Some(format!("invalid configuration: {}", s.reason)),
            tool_count: 0,
            protocol_version: None,
            startup_ms: None,
            manifest_age_secs: None,
            server_info: None,
            instructions_chars: None,
            capabilities: Vec::new(),
            needs_login: false,
        }));
        statuses
    }

    /// How long servers get to exit when antler is done with them (a command ends, the
    /// session closes) before they are killed.
    pub const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

    /// Shuts every server down concurrently, waiting at most `grace`; servers still running
    /// then are killed when the manager is dropped.
    pub async fn shutdown(&self, grace: std::time::Duration) {
        let all = futures::future::join_all(self.servers.iter().map(|s| s.shutdown()));
        if tokio::time::timeout(grace, all).await.is_err() {
            tracing::debug!("MCP servers did not stop within {grace:?}; killing them");
        }
    }

    /// The servers, in config order.
    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    /// Entries of the config that were skipped as invalid.
    pub fn skipped(&self) -> &[SkippedServer] {
        &self.skipped
    }

    /// The servers' entries, in config order.
    pub fn configs(&self) -> Vec<McpServerConfig> {
        self.servers.iter().map(|s| s.config().clone()).collect()
    }

    /// Each server's `instructions`, by server name, for those that gave any.
    pub async fn instructions(&self) -> BTreeMap<String, String> {
        let mut all = BTreeMap::new();
        for server in &self.servers {
            if let Some(text) = server.instructions().await.filter(|t| !t.trim().is_empty()) {
                all.insert(server.config().name.clone(), text);
            }
        }
        all
    }

    /// Lists the named servers (all enabled ones when `names` is empty) again now and
    /// saves their manifests, concurrently; idle servers go back to idle after. Returns
    /// each server's name with its error, if it failed; an unknown name is an error.
    pub async fn refresh_manifests(&self, names: &[String]) -> Vec<(String, Option<String>)> {
        let mut unknown: Vec<(String, Option<String>)> = names
            .iter()
            .filter(|n| !self.servers.iter().any(|s| &s.config().name == *n))
            .map(|n| {
                (
                    n.clone(),
                    Some(String::from("no such server in the extensions config")),
                )
            })
            .collect();
        let chosen = self.servers.iter().filter(|s| {
            if names.is_empty() {
                s.config().enabled
            } else {
                names.contains(&s.config().name)
            }
        });
        let mut all = futures::future::join_all(chosen.map(|server| async move {
            let outcome = server.refresh_manifest().await;
            (server.config().name.clone(), outcome.err())
        }))
        .await;
        all.append(&mut unknown);
        all
    }

    /// Refreshes the manifests of the idle servers whose manifest is too old (the chat,
    /// once its screen is up), concurrently; see [`McpManager::refresh_manifests`].
    pub async fn refresh_stale(&self) -> Vec<(String, Option<String>)> {
        let mut stale = Vec::new();
        for server in &self.servers {
            if server.has_stale_manifest().await {
                stale.push(server.config().name.clone());
            }
        }
        if stale.is_empty() {
            return Vec::new();
        }
        self.refresh_manifests(&stale).await
    }

    /// Each server's tool-list version (see [`McpServer::refresh_tools`]), the servers
    /// that announced a change listed again first, all at once.
    pub async fn list_versions(&self) -> Vec<u64> {
        futures::future::join_all(self.servers.iter().map(|s| s.refresh_tools())).await
    }

    /// Every MCP tool under its model-facing name: the resource tools when a server offers
    /// resources (first, so no server's tool can take their names), then the servers'
    /// tools, servers in config order, each server's tools in listing order. Servers that
    /// announced a change are listed again first.
    pub async fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut namer = ToolNamer::new();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        tools.extend(super::resources::resource_tools(&self.servers).await);
        for server in &self.servers {
            let prefix = server.config().tool_name_prefix;
            for tool in server.tools().await {
                let name = namer.name(&server.config().name, &tool.name, prefix);
                // A name cut or suffixed to be unique is what the user sees and copies.
                if server.config().policy.tools.disables(&name) {
                    continue;
                }
                tools.push(Arc::new(McpTool::new(server.clone(), &tool, name)));
            }
        }
        tools
    }
}

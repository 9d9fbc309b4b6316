//! All MCP servers of one extensions config, started together.

use std::sync::Arc;

use super::naming::ToolNamer;
use super::server::McpServer;
use super::tool::McpTool;
use crate::config::{ExtensionsConfig, SkippedServer};
use crate::protocol::{ServerState, ServerStatus};
use crate::tools::Tool;

/// The MCP servers of one extensions config. Dropping it stops them (child processes are
/// killed, connections closed).
pub struct McpManager {
    servers: Vec<Arc<McpServer>>,
    skipped: Vec<SkippedServer>,
    secrets: Vec<String>,
}

impl McpManager {
    /// Starts every enabled server concurrently: start-up takes as long as the slowest
    /// server (bounded by its own timeout), not the sum. Failures become statuses.
    pub async fn start(config: ExtensionsConfig) -> Self {
        let servers =
            futures::future::join_all(config.servers.into_iter().map(McpServer::start)).await;
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
        }));
        statuses
    }

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

    /// Each server's tool-list version (see [`McpServer::refresh_tools`]), the servers
    /// that announced a change listed again first, all at once.
    pub async fn list_versions(&self) -> Vec<u64> {
        futures::future::join_all(self.servers.iter().map(|s| s.refresh_tools())).await
    }

    /// Every MCP tool under its model-facing name, servers in config order, each server's
    /// tools in listing order. Servers that announced a change are listed again first.
    pub async fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut namer = ToolNamer::new();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for server in &self.servers {
            let prefix = server.config().tool_name_prefix;
            for tool in server.tools().await {
                let name = namer.name(&server.config().name, &tool.name, prefix);
                tools.push(Arc::new(McpTool::new(server.clone(), &tool, name)));
            }
        }
        tools
    }
}

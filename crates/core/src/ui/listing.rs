//! Plain-text tables and JSON for the `list` subcommands.

use serde::Serialize;

use crate::base::table::table;
use crate::deferred::{DeferredSetup, TOOL_SEARCH};
use crate::protocol::ServerStatus;
use crate::tools::{ToolSource, Toolset};

/// One row of `antler tools list --json`.
#[derive(Debug, Serialize)]
pub(crate) struct ToolRow {
    /// The model-facing name.
    pub name: String,
    /// `configured`, `built-in` or `mcp`.
    pub tier: &'static str,
    /// The MCP server, for MCP tools.
    pub server: Option<String>,
    /// The tool group, for configured tools.
    pub group: Option<String>,
    /// The `use` identifier, for configured tools.
    #[serde(rename = "use")]
    pub use_id: Option<String>,
    /// How many top-level parameters it takes.
    pub parameters: usize,
    /// Whether it is deferred behind `tool_search` (not bound until promoted).
    pub deferred: bool,
    pub description: String,
}

/// The rows of a toolset in assembly order, then `tool_search` when deferral is on.
pub(crate) fn tool_rows(toolset: &Toolset, deferred: &DeferredSetup) -> Vec<ToolRow> {
    let is_deferred = |name: &str| {
        deferred
            .catalog
            .as_ref()
            .is_some_and(|catalog| catalog.contains(name))
    };
    let search = deferred
        .bound
        .iter()
        .filter(|t| t.info().name == TOOL_SEARCH && deferred.catalog.is_some());
    toolset
        .tools()
        .iter()
        .chain(search)
        .map(|tool| {
            let info = tool.info();
            let (server, group, use_id) = match &info.source {
                ToolSource::BuiltIn => (None, None, None),
                ToolSource::Configured { use_id, group } => {
                    (None, group.clone(), Some(use_id.clone()))
                }
                ToolSource::Mcp { server, .. } => (Some(server.clone()), None, None),
                ToolSource::McpResources => (None, None, None),
            };
            ToolRow {
                name: info.name.clone(),
                tier: info.source.tier(),
                server,
                group,
                use_id,
                parameters: info.parameter_count(),
                deferred: is_deferred(&info.name),
                description: info.description.clone(),
            }
        })
        .collect()
}

/// `antler tools list` as a table.
pub(crate) fn tools_table(rows: &[ToolRow]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                r.tier.to_string(),
                r.server.clone().unwrap_or_else(|| "-".into()),
                r.group.clone().unwrap_or_else(|| "-".into()),
                r.parameters.to_string(),
                if r.deferred { "yes" } else { "-" }.to_string(),
            ]
        })
        .collect();
    let mut out = table(
        &["NAME", "TIER", "SERVER", "GROUP", "PARAMS", "DEFERRED"],
        &body,
    );
    let deferred = rows.iter().filter(|r| r.deferred).count();
    let noun = if rows.len() == 1 { "tool" } else { "tools" };
    out.push_str(&format!("{} {noun}, {deferred} deferred\n", rows.len()));
    out
}

/// `antler mcp list` as a table.
pub(crate) fn servers_table(statuses: &[ServerStatus]) -> String {
    let body: Vec<Vec<String>> = statuses
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                s.transport.clone(),
                s.status.as_str().to_string(),
                s.tool_count.to_string(),
                s.protocol_version.clone().unwrap_or_else(|| "-".into()),
                s.startup_ms
                    .map_or_else(|| "-".into(), |ms| format!("{ms} ms")),
                s.manifest_age_secs
                    .map_or_else(|| "-".into(), crate::base::clock::age_words),
                s.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    table(
        &[
            "NAME",
            "TRANSPORT",
            "STATUS",
            "TOOLS",
            "PROTOCOL",
            "STARTUP",
            "MANIFEST",
            "ERROR",
        ],
        &body,
    )
}

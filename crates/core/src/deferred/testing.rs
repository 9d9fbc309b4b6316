//! Test helpers: small catalogs of MCP-tier tools.

use std::sync::Arc;

use serde_json::{Map, json};

use super::DeferredCatalog;
use super::catalog_file::catalog_tools;
use crate::tools::{Tool, ToolInfo, ToolSource};

/// MCP tools from `(server, tool, description)` triples, named `{server}_{tool}`.
pub(crate) fn mcp_tools(spec: &[(&str, &str, &str)]) -> Vec<Arc<dyn Tool>> {
    catalog_tools(
        spec.iter()
            .map(|(server, tool, description)| ToolInfo {
                name: format!("{server}_{tool}"),
                description: description.to_string(),
                parameters: json!({"type": "object", "properties": {}}),
                source: ToolSource::Mcp {
                    server: server.to_string(),
                    original_name: tool.to_string(),
                },
                metadata: Map::new(),
                parallel: false,
            })
            .collect(),
    )
}

/// A catalog of a few servers' tools with distinct descriptions.
pub(crate) fn sample_catalog() -> Arc<DeferredCatalog> {
    Arc::new(DeferredCatalog::new(mcp_tools(&[
        (
            "github",
            "create_issue",
            "Create a new issue in a GitHub repository",
        ),
        (
            "github",
            "list_issues",
            "List issues of a GitHub repository",
        ),
        ("github", "get_file", "Read a file from a GitHub repository"),
        ("word", "convert_to_pdf", "Convert a Word document to PDF"),
        (
            "word",
            "add_paragraph",
            "Add a paragraph to a Word document",
        ),
        ("time", "get_current_time", "Current time in a timezone"),
        ("time", "convert_time", "Convert a time between timezones"),
        ("zhihu", "trending", "获取知乎热榜的热门话题"),
    ])))
}

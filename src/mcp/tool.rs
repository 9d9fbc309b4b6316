//! MCP tools as [`Tool`]s.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::server::McpServer;
use crate::tools::{Tool, ToolFuture, ToolInfo, ToolSource};

/// One tool of one MCP server, under its model-facing name.
pub struct McpTool {
    info: ToolInfo,
    server: Arc<McpServer>,
    original_name: String,
}

impl McpTool {
    /// Wraps `tool` of `server` under the unique `name`.
    pub fn new(server: Arc<McpServer>, tool: &rmcp::model::Tool, name: String) -> Self {
        let server_name = server.config().name.clone();
        let original_name = tool.name.to_string();
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .to_string();
        let mut metadata = Map::new();
        metadata.insert("mcp".into(), Value::Bool(true));
        metadata.insert("server".into(), Value::String(server_name.clone()));
        metadata.insert("original_name".into(), Value::String(original_name.clone()));
        let mut parameters = Value::Object((*tool.input_schema).clone());
        if parameters.get("type").is_none() {
            parameters["type"] = json!("object");
        }
        Self {
            info: ToolInfo {
                name,
                description,
                parameters,
                source: ToolSource::Mcp {
                    server: server_name,
                    original_name: original_name.clone(),
                },
                metadata,
            },
            server,
            original_name,
        }
    }
}

impl Tool for McpTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn call(&self, arguments: Value) -> ToolFuture<'_> {
        Box::pin(self.server.call(&self.original_name, arguments))
    }
}

//! Catalog files: tools grouped by server, `{"server": [{"name", "description",
//! "inputSchema"}, ...]}` — the shape of the LiveMCPBench catalog. They let `tools search`,
//! `tools stats` and the benchmarks work on a large real catalog without starting servers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::tools::naming::ToolNamer;
use crate::tools::{Tool, ToolContext, ToolFuture, ToolInfo, ToolOutput, ToolSource};

/// Why a catalog file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CatalogFileError {
    /// The file could not be read.
    #[error("{path}: cannot read the file: {source}", path = path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a catalog.
    #[error("{path}:{line}:{column}: {message} (expected {{\"server\": [{{\"name\", \"description\", \"inputSchema\"}}]}})", path = path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What was wrong.
        message: String,
    },
}

#[derive(Deserialize)]
struct RawTool {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(rename = "inputSchema", default)]
    input_schema: Option<Value>,
}

/// Reads a catalog file into tools named exactly as live MCP tools would be
/// (`{server}_{tool}`, sanitised and unique), in file order.
pub fn load_catalog_file(path: &Path) -> Result<Vec<ToolInfo>, CatalogFileError> {
    const MAX_CATALOG_BYTES: u64 = 256 << 20;
    let text = crate::base::bounded_read::read_to_string(path, MAX_CATALOG_BYTES, "a catalog file")
        .map_err(|source| CatalogFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    parse_catalog(&text).map_err(|err| CatalogFileError::Parse {
        path: path.to_path_buf(),
        line: err.line(),
        column: err.column(),
        message: err
            .to_string()
            .split(" at line ")
            .next()
            .unwrap_or_default()
            .to_string(),
    })
}

/// Parses catalog text (see [`load_catalog_file`]).
pub fn parse_catalog(text: &str) -> Result<Vec<ToolInfo>, serde_json::Error> {
    // An IndexMap keeps the servers in file order, and parsing straight into the typed
    // shape keeps line and column in errors.
    let servers: IndexMap<String, Vec<RawTool>> = serde_json::from_str(text)?;
    let mut namer = ToolNamer::new();
    let mut tools = Vec::new();
    for (server, list) in servers {
        for raw in list {
            let mut parameters = raw
                .input_schema
                .unwrap_or_else(|| json!({"type": "object"}));
            if parameters.get("type").is_none() {
                parameters["type"] = json!("object");
            }
            let mut metadata = Map::new();
            metadata.insert("mcp".into(), Value::Bool(true));
            metadata.insert("server".into(), Value::String(server.clone()));
            tools.push(ToolInfo {
                name: namer.name(&server, &raw.name, true),
                description: raw.description.unwrap_or_default(),
                parameters,
                source: ToolSource::Mcp {
                    server: server.clone(),
                    original_name: raw.name,
                },
                metadata,
                parallel: false,
            });
        }
    }
    Ok(tools)
}

/// A tool known only from a catalog file: it can be searched and listed, not called.
struct CatalogEntry(ToolInfo);

impl Tool for CatalogEntry {
    fn info(&self) -> &ToolInfo {
        &self.0
    }

    fn call<'a>(&'a self, _ctx: ToolContext<'a>, _arguments: Value) -> ToolFuture<'a> {
        let message = format!(
            "Error: `{}` comes from a catalog file; no server is connected to run it.",
            self.0.name
        );
        Box::pin(async move { ToolOutput::error(message) })
    }
}

/// The tools of a catalog file as [`Tool`]s, for building a searchable catalog.
pub fn catalog_tools(infos: Vec<ToolInfo>) -> Vec<Arc<dyn Tool>> {
    infos
        .into_iter()
        .map(|info| Arc::new(CatalogEntry(info)) as Arc<dyn Tool>)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_live_rules_and_file_order() {
        let tools = parse_catalog(
            r#"{"Ant Design Components": [{"name": "list-components", "description": "d", "inputSchema": {"properties": {"a": {}}}}],
                "b": [{"name": "x"}]}"#,
        )
        .unwrap();
        assert_eq!(tools[0].name, "Ant_Design_Components_list-components");
        assert_eq!(tools[0].parameters["type"], "object");
        assert_eq!(tools[0].parameter_count(), 1);
        assert_eq!(tools[1].name, "b_x");
        assert_eq!(tools[1].description, "");
    }

    #[test]
    fn errors_have_positions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        std::fs::write(&path, "{\"s\": [{\"description\": \"no name\"}]}").unwrap();
        let err = load_catalog_file(&path).unwrap_err().to_string();
        assert!(err.contains("c.json:1:"), "{err}");
        assert!(err.contains("missing field `name`"), "{err}");
    }
}

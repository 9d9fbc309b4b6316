//! The one place the three tiers become a toolset.

use std::collections::HashMap;
use std::sync::Arc;

use super::tool::{Tool, ToolSource};

/// The tools the agent can offer, in assembly order, with unique names.
#[derive(Debug, Clone, Default)]
pub struct Toolset {
    tools: Vec<Arc<dyn Tool>>,
}

impl Toolset {
    /// All tools in assembly order.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }
}

fn describe(source: &ToolSource) -> String {
    match source {
        ToolSource::BuiltIn => String::from("the built-in tool"),
        ToolSource::Configured { use_id, .. } => format!("the configured tool ({use_id})"),
        ToolSource::Mcp { server, .. } => format!("the tool of MCP server `{server}`"),
        ToolSource::McpResources => String::from("the MCP resources tool"),
    }
}

/// Assembles the toolset in DeerFlow's order — configured tools, then built-ins, then MCP
/// tools — keeping the first tool of each name. Every dropped duplicate yields a warning.
pub fn assemble_toolset(
    configured: Vec<Arc<dyn Tool>>,
    builtins: Vec<Arc<dyn Tool>>,
    mcp: Vec<Arc<dyn Tool>>,
) -> (Toolset, Vec<String>) {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    // Name to index: a linear search per tool made 10,000 MCP tools cost ~150 ms here.
    let mut kept: HashMap<String, usize> = HashMap::new();
    let mut warnings = Vec::new();
    for tool in configured.into_iter().chain(builtins).chain(mcp) {
        let info = tool.info();
        match kept.get(&info.name) {
            Some(&index) => warnings.push(format!(
                "duplicate tool name `{}`: {} is dropped; {} keeps the name",
                info.name,
                describe(&info.source),
                describe(&tools[index].info().source)
            )),
            None => {
                kept.insert(info.name.clone(), tools.len());
                tools.push(tool);
            }
        }
    }
    (Toolset { tools }, warnings)
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::*;
    use crate::tools::{ToolContext, ToolFuture, ToolInfo, ToolOutput};

    struct Named(ToolInfo);
    impl Tool for Named {
        fn info(&self) -> &ToolInfo {
            &self.0
        }
        fn call<'a>(&'a self, _ctx: ToolContext<'a>, _: Value) -> ToolFuture<'a> {
            Box::pin(async { ToolOutput::ok("") })
        }
    }

    fn tool(name: &str, source: ToolSource) -> Arc<dyn Tool> {
        Arc::new(Named(ToolInfo {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
            source,
            metadata: Map::new(),
            parallel: false,
        }))
    }

    fn configured() -> ToolSource {
        ToolSource::Configured {
            use_id: "x:y".into(),
            group: None,
        }
    }

    fn mcp(server: &str) -> ToolSource {
        ToolSource::Mcp {
            server: server.into(),
            original_name: "t".into(),
        }
    }

    #[test]
    fn order_is_configured_builtin_mcp_and_first_wins() {
        let (set, warnings) = assemble_toolset(
            vec![tool("ls", configured()), tool("read", configured())],
            vec![
                tool("present_files", ToolSource::BuiltIn),
                tool("ls", ToolSource::BuiltIn),
            ],
            vec![
                tool("gh_issue", mcp("gh")),
                tool("read", mcp("fs")),
                tool("x", mcp("fs")),
            ],
        );
        let names: Vec<_> = set.tools().iter().map(|t| t.info().name.clone()).collect();
        assert_eq!(names, ["ls", "read", "present_files", "gh_issue", "x"]);
        assert_eq!(set.tools()[0].info().source, configured());
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("`ls`: the built-in tool is dropped"));
        assert!(warnings[1].contains("the tool of MCP server `fs` is dropped"));
    }
}

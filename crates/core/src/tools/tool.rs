//! One abstraction for every tool, whatever tier it comes from.

use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ToolContext;
use crate::protocol::{ImagePart, Preview, ToolRole};

/// Where a tool comes from. Assembly order and deferral depend on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "tier", rename_all = "lowercase")]
pub enum ToolSource {
    /// Always present when its condition holds (e.g. `present_files`).
    BuiltIn,
    /// Selected in `config.yaml` `tools:` by its `use` identifier.
    Configured {
        /// The identifier, e.g. `antler.sandbox:ls`.
        use_id: String,
        /// The tool group, if any.
        group: Option<String>,
    },
    /// Listed by an MCP server.
    Mcp {
        /// The server's key in `mcpServers`.
        server: String,
        /// The tool's name on that server, before prefixing and sanitising.
        original_name: String,
    },
    /// antler's tools over the MCP servers' resources (`list_mcp_resources`,
    /// `read_mcp_resource`): of the MCP tier, so deferred like its tools, but of no one
    /// server.
    McpResources,
}

impl ToolSource {
    /// A short name of the tier for listings.
    pub fn tier(&self) -> &'static str {
        match self {
            Self::BuiltIn => "built-in",
            Self::Configured { .. } => "configured",
            Self::Mcp { .. } | Self::McpResources => "mcp",
        }
    }
}

/// What the model is told about a tool, plus where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    /// The name the model calls it by; unique in a toolset.
    pub name: String,
    /// What it does.
    pub description: String,
    /// A JSON Schema object for its arguments.
    pub parameters: Value,
    /// Its tier, which decides where it is assembled and whether it can be deferred.
    pub source: ToolSource,
    /// Free-form tags; MCP tools carry `{"mcp": true, "server": ...}`.
    pub metadata: Map<String, Value>,
    /// Whether the tool may run at the same time as other calls of the same reply (it
    /// only reads, or keeps to itself). A reply whose calls are not all parallel runs them
    /// in order, so that a script is written before it is run.
    pub parallel: bool,
}

impl ToolInfo {
    /// Whether the tool belongs to the MCP tier (the tier that can be deferred).
    pub fn is_mcp(&self) -> bool {
        matches!(
            self.source,
            ToolSource::Mcp { .. } | ToolSource::McpResources
        )
    }

    /// How many top-level parameters the schema declares.
    pub fn parameter_count(&self) -> usize {
        self.parameters
            .get("properties")
            .and_then(Value::as_object)
            .map_or(0, Map::len)
    }
}

/// Promotes deferred tools into the thread state (used by `tool_search`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromotedUpdate {
    /// The catalog the names belong to; a stale hash makes the promotion lapse.
    pub catalog_hash: String,
    /// The promoted tool names, in order.
    pub names: Vec<String>,
}

/// A change to the thread state that a tool result carries, merged by the agent's reducers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StateUpdate {
    /// Deferred tools to make callable: what `tool_search` chose, or what a loaded skill's
    /// `allowed-tools` names.
    pub promoted: Option<PromotedUpdate>,
    /// Workspace files marked as the run's output (`present_files`).
    pub presented_files: Vec<String>,
    /// Images to attach to the next model call (`view_image`).
    pub images: Vec<ImagePart>,
    /// Skills loaded (`load_skill`): active for the rest of the run.
    pub skills_loaded: Vec<String>,
}

/// The result of one tool call, as the model will see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutput {
    /// The text returned to the model.
    pub content: String,
    /// Whether the call failed; the model reads the content either way.
    pub is_error: bool,
    /// An optional thread-state change (boxed: most results carry none).
    pub state_update: Option<Box<StateUpdate>>,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            state_update: None,
        }
    }

    /// A failed result whose message the model can act on.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            state_update: None,
        }
    }
}

/// A tool's arguments as its own type, or the error result that tells the model what was
/// wrong with them.
pub fn parse_args<T: serde::de::DeserializeOwned>(arguments: Value) -> Result<T, ToolOutput> {
    serde_json::from_value(arguments)
        .map_err(|e| ToolOutput::error(format!("Error: invalid arguments: {e}")))
}

/// The future a tool call returns. Boxed so that tools can live behind `Arc<dyn Tool>`.
pub type ToolFuture<'a> = BoxFuture<'a, ToolOutput>;

/// A callable tool. A call never panics and never returns a Rust error: every failure is a
/// [`ToolOutput`] with `is_error`, because the model is the one that has to react to it.
pub trait Tool: Send + Sync {
    /// Name, description, schema and source.
    fn info(&self) -> &ToolInfo;
    /// Runs the tool with JSON arguments, in the context of one call.
    fn call<'a>(&'a self, ctx: ToolContext<'a>, arguments: Value) -> ToolFuture<'a>;

    /// What the tool is, for the events and the chat: by its tier, unless the tool is one
    /// the front-ends show apart (`tool_search`, `task`), which says so itself.
    fn role(&self) -> ToolRole {
        tier_role(self.info())
    }

    /// What a call can do, for the permission policy. Undeclared effects need approval.
    fn effect(&self) -> Effect {
        Effect::Undeclared
    }

    /// What a subject rule (`bash(git status*)`) is matched against for this call: `bash`'s
    /// command. `None`: the tool's calls have no subject.
    fn subject(&self, _arguments: &Value) -> Option<String> {
        None
    }

    /// What the call would do, for the person asked to approve it (a diff of the file it
    /// writes). `None`: its arguments say it.
    fn preview<'a>(&'a self, _arguments: &'a Value) -> BoxFuture<'a, Option<Preview>> {
        Box::pin(async { None })
    }
}

/// A tool's role by its tier.
fn tier_role(info: &ToolInfo) -> ToolRole {
    match &info.source {
        ToolSource::Mcp { .. } | ToolSource::McpResources => ToolRole::Mcp,
        ToolSource::Configured { .. } => ToolRole::Configured,
        ToolSource::BuiltIn => ToolRole::BuiltIn,
    }
}

/// A tool whose arguments are one type, as antler's own tools are: its [`Tool`] impl
/// parses them once per use (a call whose arguments do not parse gets the error back as
/// its result, before the tool runs) and hands them over typed.
pub trait TypedTool: Send + Sync {
    /// What the call's JSON arguments are parsed into (a call they do not fit never runs).
    type Args: DeserializeOwned + Send;

    /// Name, description, schema and source.
    fn info(&self) -> &ToolInfo;

    /// Runs the tool, in the context of one call.
    fn run<'a>(&'a self, ctx: ToolContext<'a>, args: Self::Args) -> ToolFuture<'a>;

    /// As [`Tool::role`].
    fn role(&self) -> ToolRole {
        tier_role(TypedTool::info(self))
    }

    /// As [`Tool::effect`].
    fn effect(&self) -> Effect {
        Effect::Undeclared
    }

    /// As [`Tool::subject`].
    fn subject(&self, _args: &Self::Args) -> Option<String> {
        None
    }

    /// As [`Tool::preview`].
    fn preview(&self, _args: Self::Args) -> BoxFuture<'_, Option<Preview>> {
        Box::pin(async { None })
    }

    /// What a call whose arguments do not parse gets back instead of `parse_error`, for a
    /// tool that words its refusals its own way.
    fn unparsed(&self, parse_error: ToolOutput) -> ToolOutput {
        parse_error
    }
}

impl<T: TypedTool> Tool for T {
    fn info(&self) -> &ToolInfo {
        TypedTool::info(self)
    }

    fn call<'a>(&'a self, ctx: ToolContext<'a>, arguments: Value) -> ToolFuture<'a> {
        match parse_args(arguments) {
            Ok(args) => self.run(ctx, args),
            Err(out) => Box::pin(std::future::ready(self.unparsed(out))),
        }
    }

    fn role(&self) -> ToolRole {
        TypedTool::role(self)
    }

    fn effect(&self) -> Effect {
        TypedTool::effect(self)
    }

    fn subject(&self, arguments: &Value) -> Option<String> {
        let args = T::Args::deserialize(arguments).ok()?;
        TypedTool::subject(self, &args)
    }

    fn preview<'a>(&'a self, arguments: &'a Value) -> BoxFuture<'a, Option<Preview>> {
        match T::Args::deserialize(arguments) {
            Ok(args) => TypedTool::preview(self, args),
            Err(_) => Box::pin(async { None }),
        }
    }
}

/// What a tool's calls can do beyond answering, as the permission policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Reads, searches, shows or asks; changes nothing (`read_file`, `tool_search`).
    ReadOnly,
    /// Creates or changes files in the workspace.
    WritesFiles,
    /// Runs commands on the host.
    RunsCommands,
    /// Fetches from the network.
    Network,
    /// An MCP server's tool: its annotations are the server's word, counted only when the
    /// user marks the server `trusted`.
    Server {
        /// `readOnlyHint`.
        read_only_hint: bool,
        /// `destructiveHint`.
        destructive_hint: bool,
        /// The server's entry says `trusted: true`.
        trusted: bool,
    },
    /// Not declared: treated as needing approval.
    Undeclared,
}

impl std::fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Tool").field(&self.info().name).finish()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Doubles `n`; its subject is `n` as text.
    struct Double(ToolInfo);

    #[derive(Deserialize)]
    struct Args {
        n: u32,
    }

    impl TypedTool for Double {
        type Args = Args;

        fn info(&self) -> &ToolInfo {
            &self.0
        }

        fn run<'a>(&'a self, _ctx: ToolContext<'a>, args: Args) -> ToolFuture<'a> {
            Box::pin(async move { ToolOutput::ok((args.n * 2).to_string()) })
        }

        fn subject(&self, args: &Args) -> Option<String> {
            Some(args.n.to_string())
        }
    }

    fn double() -> Double {
        Double(ToolInfo {
            name: "double".into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
            source: ToolSource::BuiltIn,
            metadata: Map::new(),
            parallel: true,
        })
    }

    #[tokio::test]
    async fn a_typed_tool_gets_its_arguments_parsed_or_the_model_gets_the_error() {
        let tool: &dyn Tool = &double();
        let ok = tool
            .call(ToolContext::standalone("a"), json!({"n": 21}))
            .await;
        assert_eq!((ok.content.as_str(), ok.is_error), ("42", false));
        let bad = tool
            .call(ToolContext::standalone("b"), json!({"n": "x"}))
            .await;
        assert!(bad.is_error && bad.content.starts_with("Error: invalid arguments"));
        assert_eq!(tool.subject(&json!({"n": 7})).as_deref(), Some("7"));
        assert_eq!(tool.subject(&json!({"m": 7})), None);
        assert!(tool.preview(&json!({"n": 7})).await.is_none());
        assert_eq!(tool.role(), ToolRole::BuiltIn);
    }
}

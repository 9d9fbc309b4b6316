//! The MCP server handler shared by every transport.
//!
//! The tool list is dynamic (`change_tools`, `--catalog`), so the handler is
//! written by hand instead of with rmcp's `#[tool_router]` macros.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, DiscoverResult,
    Implementation, InitializeRequestParams, InitializeResult, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};

/// How the server behaves, independent of the transport.
#[derive(Debug, Clone)]
pub(crate) struct Behaviour {
    /// `serverInfo.name` reported by `initialize`.
    pub name: String,
    /// Delay before answering `initialize` (and `server/discover`).
    pub startup_delay: Duration,
    /// Never answer `initialize` (nor `server/discover`).
    pub hang: bool,
    /// Never answer a `tools/list` after the first complete listing.
    pub hang_relist: bool,
    /// Maximum number of tools per `tools/list` page; `None` = one page.
    pub page_size: Option<usize>,
    /// The `instructions` sent with `initialize`.
    pub instructions: Option<String>,
    /// Append the request id of each `notifications/cancelled` to this file.
    pub cancelled_log: Option<std::path::PathBuf>,
    /// Offer resources and the `tiny_image` tool.
    pub resources: bool,
    /// Announce resources, list none.
    pub empty_resources: bool,
    /// Announce resources, never answer their listing.
    pub hang_resources: bool,
    /// Offer prompts.
    pub prompts: bool,
    /// Offer the `ask_user` tool.
    pub elicitation: bool,
    /// Offer the `authorization` tool (with `--oauth`): the `Authorization` header the
    /// call came with, as a server that echoes it would.
    pub authorization: bool,
}

/// Where the tools come from, which decides how a call is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The built-in test tools (`echo`, `add`, ...).
    Builtin,
    /// Tools read from a catalog file; every call is echoed back.
    Catalog,
}

/// The fixture server. Cheap to clone: the tool list is shared, so that a
/// `change_tools` call is visible to every session of the process (the
/// streamable HTTP transport may build one handler per request).
#[derive(Clone)]
pub(crate) struct Fixture {
    behaviour: Arc<Behaviour>,
    mode: Mode,
    tools: Arc<Mutex<Vec<Tool>>>,
    /// Whether the tools were listed to the end once (for `hang_relist`).
    listed: Arc<std::sync::atomic::AtomicBool>,
    /// Whether `change_prompts` added `farewell`.
    prompts_changed: Arc<std::sync::atomic::AtomicBool>,
}

/// Name of the tool that `change_tools` adds and removes.
const ADDED_TOOL: &str = "added_tool";

impl Fixture {
    /// A server with the built-in test tools.
    pub(crate) fn builtin(behaviour: Behaviour, extra: &[String]) -> Self {
        let mut tools = builtin_tools();
        if behaviour.resources {
            tools.push(tool("tiny_image", "Returns a 1x1 PNG image.", no_params()));
        }
        if behaviour.elicitation {
            tools.push(tool("ask_user", "Asks the user who they are.", no_params()));
            tools.push(tool(
                "confirm_settings",
                "Asks the user to confirm settings that all have defaults.",
                no_params(),
            ));
        }
        if behaviour.authorization {
            tools.push(tool(
                "authorization",
                "Says which Authorization header the call came with.",
                no_params(),
            ));
        }
        if behaviour.prompts {
            tools.push(tool(
                "change_prompts",
                "Adds the prompt `farewell`, then notifies prompts/list_changed.",
                no_params(),
            ));
        }
        tools.extend(extra.iter().map(|name| {
            tool(
                name,
                "An extra tool; echoes `text`.",
                params(&[("text", json!({"type": "string"}))]),
            )
        }));
        Self::new(behaviour, Mode::Builtin, tools)
    }

    /// A server with the tools of `catalog` (a JSON file mapping server names
    /// to tool lists): only `server`'s, or every server's with duplicate
    /// names dropped (first wins).
    pub(crate) fn catalog(
        behaviour: Behaviour,
        catalog: &std::path::Path,
        server: Option<&str>,
    ) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(catalog)
            .with_context(|| format!("reading {}", catalog.display()))?;
        // serde_json keeps the file's key order (feature `preserve_order`),
        // which makes "first wins" follow the file.
        let servers: serde_json::Map<String, Value> = serde_json::from_str(&text)
            .with_context(|| format!("parsing {}", catalog.display()))?;
        let mut tools: Vec<Tool> = Vec::new();
        for (name, list) in &servers {
            if server.is_some_and(|wanted| wanted != name) {
                continue;
            }
            let list: Vec<Tool> = serde_json::from_value(list.clone())
                .with_context(|| format!("tools of server {name:?}"))?;
            for tool in list {
                if !tools.iter().any(|known| known.name == tool.name) {
                    tools.push(tool);
                }
            }
        }
        if let Some(wanted) = server
            && !servers.contains_key(wanted)
        {
            anyhow::bail!("server {wanted:?} is not in {}", catalog.display());
        }
        Ok(Self::new(behaviour, Mode::Catalog, tools))
    }

    fn new(behaviour: Behaviour, mode: Mode, tools: Vec<Tool>) -> Self {
        Self {
            behaviour: Arc::new(behaviour),
            mode,
            tools: Arc::new(Mutex::new(tools)),
            listed: Arc::default(),
            prompts_changed: Arc::default(),
        }
    }

    /// A snapshot of the current tool list. A poisoned lock only means another
    /// call panicked; the list itself is still consistent.
    fn tools(&self) -> Vec<Tool> {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Applies `--startup-delay-ms` and `--hang` to the start-up handshake.
    async fn stall_startup(&self) {
        if self.behaviour.hang {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(self.behaviour.startup_delay).await;
    }

    /// Adds `added_tool` if absent, removes it if present.
    fn toggle_added_tool(&self) {
        let mut tools = self.tools.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(index) = tools.iter().position(|tool| tool.name == ADDED_TOOL) {
            tools.remove(index);
        } else {
            tools.push(tool(ADDED_TOOL, "Added by change_tools.", no_params()));
        }
    }

    async fn call_builtin(
        &self,
        name: &str,
        args: &JsonObject,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = match name {
            "echo" => text(str_arg(args, "text")?),
            "add" => text((num_arg(args, "a")? + num_arg(args, "b")?).to_string()),
            "fail" => CallToolResult::error(vec![ContentBlock::text(str_arg(args, "message")?)]),
            "sleep" => {
                let ms = args
                    .get("ms")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| bad_arg("ms", "a non-negative integer"))?;
                // Progress on the call's token, as a long-running server reports it.
                if let Some(token) = context.meta.get_progress_token() {
                    let update = rmcp::model::ProgressNotificationParam::new(token, 0.0)
                        .with_total(ms as f64)
                        .with_message(format!("sleeping {ms} ms"));
                    if let Err(error) = context.peer.notify_progress(update).await {
                        eprintln!("fixture_mcp: sending progress failed: {error}");
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => text("slept"),
                    () = context.ct.cancelled() => text("cancelled"),
                }
            }
            // Simulates a server dying mid-call: no response is ever sent.
            "crash" => std::process::exit(3),
            "pid" => text(std::process::id().to_string()),
            "env" => text(std::env::var(str_arg(args, "name")?).unwrap_or_default()),
            "change_tools" => {
                self.toggle_added_tool();
                if let Err(error) = context.peer.notify_tool_list_changed().await {
                    eprintln!("fixture_mcp: sending tools/list_changed failed: {error}");
                }
                text("changed")
            }
            ADDED_TOOL => text("added"),
            "tiny_image" => CallToolResult::success(vec![
                ContentBlock::text("a dot"),
                ContentBlock::image(crate::features::DOT_PNG, "image/png"),
            ]),
            "ask_user" => text(crate::features::ask_user(&context, false).await?),
            "confirm_settings" => text(crate::features::ask_user(&context, true).await?),
            "authorization" => text(
                context
                    .extensions
                    .get::<axum::http::request::Parts>()
                    .and_then(|parts| parts.headers.get(axum::http::header::AUTHORIZATION))
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or_default()
                    .to_string(),
            ),
            "change_prompts" => {
                self.prompts_changed
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                if let Err(error) = context.peer.notify_prompt_list_changed().await {
                    eprintln!("fixture_mcp: sending prompts/list_changed failed: {error}");
                }
                text("changed")
            }
            WEIRD_TOOL => text("weird"),
            // The tools of --extra-tools-file echo.
            _ if self
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(|t| t.name == name) =>
            {
                text(str_arg(args, "text")?)
            }
            _ => return Err(McpError::invalid_params("tool not found", None)),
        };
        Ok(result)
    }
}

impl ServerHandler for Fixture {
    async fn on_cancelled(
        &self,
        notification: rmcp::model::CancelledNotificationParam,
        _context: rmcp::service::NotificationContext<RoleServer>,
    ) {
        let Some(log) = &self.behaviour.cancelled_log else {
            return;
        };
        let line = format!("{:?} {:?}\n", notification.request_id, notification.reason);
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut file| std::io::Write::write_all(&mut file, line.as_bytes()));
        if let Err(err) = written {
            eprintln!("fixture_mcp: --cancelled-log: {err}");
        }
    }

    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let behaviour = &self.behaviour;
        if behaviour.resources || behaviour.empty_resources || behaviour.hang_resources {
            capabilities.resources = Some(Default::default());
        }
        if self.behaviour.prompts {
            let mut prompts = rmcp::model::PromptsCapability::default();
            prompts.list_changed = Some(true);
            capabilities.prompts = Some(prompts);
        }
        let config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(self.behaviour.name.clone(), "0.1.0"));
        match &self.behaviour.instructions {
            Some(text) => config.with_instructions(text.clone()),
            None => config,
        }
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        self.stall_startup().await;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    /// The 2026-07-28 start-up probe; stalled like `initialize` so that
    /// start-up tests hold whichever lifecycle the client picks.
    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, McpError> {
        self.stall_startup().await;
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        if self.behaviour.hang_relist && self.listed.load(std::sync::atomic::Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        let tools = self.tools();
        // The cursor is the offset of the page's first tool: opaque to clients.
        let start = match request.and_then(|params| params.cursor) {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|offset| *offset <= tools.len())
                .ok_or_else(|| McpError::invalid_params(format!("bad cursor {cursor:?}"), None))?,
        };
        let end = match self.behaviour.page_size {
            Some(size) => start.saturating_add(size).min(tools.len()),
            None => tools.len(),
        };
        let mut result = ListToolsResult::with_all_items(tools[start..end].to_vec());
        if end < tools.len() {
            result.next_cursor = Some(end.to_string());
        } else {
            self.listed.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        Ok(result)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, McpError> {
        if self.behaviour.hang_resources {
            std::future::pending::<()>().await;
        }
        if self.behaviour.empty_resources {
            return Ok(Default::default());
        }
        Ok(crate::features::list_resources())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        if self.behaviour.empty_resources {
            return Ok(Default::default());
        }
        Ok(crate::features::list_templates())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, McpError> {
        crate::features::read_resource(&request.uri).map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        let changed = self
            .prompts_changed
            .load(std::sync::atomic::Ordering::SeqCst);
        Ok(crate::features::list_prompts(changed))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        let arguments = request.arguments.unwrap_or_default();
        crate::features::get_prompt(&request.name, &arguments).map(Into::into)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        // Checked against the live list so that a removed `added_tool` fails.
        if !self.tools().iter().any(|tool| tool.name == name) {
            return Err(McpError::invalid_params(
                format!("tool not found: {name}"),
                None,
            ));
        }
        let args = request.arguments.clone().unwrap_or_default();
        let result = match self.mode {
            Mode::Catalog => text(format!("called {name} with {}", Value::Object(args))),
            Mode::Builtin => self.call_builtin(name, &args, context).await?,
        };
        Ok(result.into())
    }
}

/// A tool whose name a client must sanitise before showing it to a model.
const WEIRD_TOOL: &str = "weird.name/with spaces";

/// The built-in tools, in the order `tools/list` returns them.
fn builtin_tools() -> Vec<Tool> {
    let string = |description: &str| json!({"type": "string", "description": description});
    let number = |description: &str| json!({"type": "number", "description": description});
    vec![
        tool(
            "echo",
            "Returns `text` unchanged.",
            params(&[("text", string("Text to echo."))]),
        ),
        tool(
            "add",
            "Returns the sum of `a` and `b`.",
            params(&[("a", number("First term.")), ("b", number("Second term."))]),
        ),
        tool(
            "fail",
            "Returns a tool error (isError) with `message`.",
            params(&[("message", string("Error message."))]),
        ),
        tool(
            "sleep",
            "Sleeps `ms` milliseconds, then returns \"slept\".",
            params(&[(
                "ms",
                json!({"type": "integer", "minimum": 0, "description": "Milliseconds."}),
            )]),
        ),
        tool(
            "crash",
            "Exits the server process with code 3 without answering.",
            no_params(),
        ),
        tool("pid", "Returns the server's process id.", no_params()),
        tool(
            "env",
            "Returns the value of an environment variable of the server, or \"\".",
            params(&[("name", string("Variable name."))]),
        ),
        tool(
            "change_tools",
            "Adds or removes `added_tool`, then notifies tools/list_changed.",
            no_params(),
        ),
        tool(
            WEIRD_TOOL,
            "A tool whose name needs sanitising.",
            no_params(),
        ),
    ]
}

fn tool(name: &str, description: &str, schema: JsonObject) -> Tool {
    Tool::new(name.to_owned(), description.to_owned(), schema)
}

/// An object schema whose properties are all required.
fn params(properties: &[(&str, Value)]) -> JsonObject {
    let required: Vec<&str> = properties.iter().map(|(name, _)| *name).collect();
    let properties: JsonObject = properties
        .iter()
        .map(|(name, schema)| ((*name).to_owned(), schema.clone()))
        .collect();
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), json!(required));
    }
    schema
}

fn no_params() -> JsonObject {
    params(&[])
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn bad_arg(name: &str, expected: &str) -> McpError {
    McpError::invalid_params(format!("argument `{name}` must be {expected}"), None)
}

fn str_arg<'a>(args: &'a JsonObject, name: &str) -> Result<&'a str, McpError> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| bad_arg(name, "a string"))
}

fn num_arg(args: &JsonObject, name: &str) -> Result<f64, McpError> {
    args.get(name)
        .and_then(Value::as_f64)
        .ok_or_else(|| bad_arg(name, "a number"))
}

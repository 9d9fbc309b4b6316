//! MCP tools as [`Tool`]s.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::elicitation;
use super::server::{McpServer, ToolProgress};
use crate::protocol::{ElicitationAnswer, Event, ServerState};
use crate::tools::Effect;
use crate::tools::{Tool, ToolContext, ToolFuture, ToolInfo, ToolSource};

/// One tool of one MCP server, under its model-facing name.
pub struct McpTool {
    info: ToolInfo,
    server: Arc<McpServer>,
    /// The tool as listed (the model's view), to tell whether the live server still
    /// offers exactly this tool.
    listed: rmcp::model::Tool,
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
                    original_name,
                },
                metadata,
                // The server's word only: a false hint lets its calls run beside the other
                // parallel calls of the same reply (reads, searches, subagents), never
                // beside a call that must run alone.
                parallel: tool
                    .annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false),
            },
            server,
            listed: tool.clone(),
        }
    }
}

impl McpTool {
    /// Answers the server's request for input made during the call of `ctx`: the
    /// front-end is asked (an event announces the request), or, where nobody can answer,
    /// `-p`'s policy answers it; an event says how it ended either way.
    fn elicit<'a>(
        &'a self,
        ctx: &'a ToolContext<'a>,
        params: rmcp::model::ElicitRequestParams,
    ) -> futures::future::BoxFuture<'a, rmcp::model::ElicitResult> {
        Box::pin(async move {
            let server = &self.server.config().name;
            let id = elicitation::next_id();
            let request = match elicitation::request_of(id, server, &params) {
                Ok(request) => request,
                Err(why) => {
                    (ctx.events)(Event::Notice {
                        turn: ctx.turn,
                        message: format!(
                            "MCP server `{server}` asked for input antler cannot ask for ({why}); declined"
                        ),
                    });
                    return elicitation::result_of(ElicitationAnswer::Decline);
                }
            };
            let answered = |answer: &ElicitationAnswer, automatic| {
                (ctx.events)(Event::ElicitationAnswered {
                    turn: ctx.turn,
                    call_id: ctx.call_id.clone(),
                    id,
                    server: server.clone(),
                    message: request.message.clone(),
                    action: answer.action(),
                    automatic,
                })
            };
            let broker = match self.server.elicitations() {
                elicitation::Answerer::Front(broker) => broker,
                elicitation::Answerer::Unattended(policy) => {
                    let answer = policy.answer(&request);
                    answered(&answer, true);
                    return elicitation::result_of(answer);
                }
            };
            let waiter = broker.register(id);
            (ctx.events)(Event::ElicitationRequested {
                turn: ctx.turn,
                call_id: ctx.call_id.clone(),
                request: request.clone(),
            });
            let message = format!(
                "the MCP server `{server}` asks: {}",
                crate::base::text::short_line(&request.message, 200).0
            );
            let answer = ctx
                .scope
                .waiting(ctx.events, "elicitation_dialog", &message, waiter.answer())
                .await
                .unwrap_or(ElicitationAnswer::Cancel);
            answered(&answer, false);
            elicitation::result_of(answer)
        })
    }
}

impl Tool for McpTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn effect(&self) -> Effect {
        let hints = self.listed.annotations.as_ref();
        Effect::Server {
            read_only_hint: hints.and_then(|a| a.read_only_hint).unwrap_or(false),
            destructive_hint: hints.and_then(|a| a.destructive_hint).unwrap_or(false),
            trusted: self.server.config().trusted,
        }
    }

    fn call<'a>(&'a self, ctx: ToolContext<'a>, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let was_idle = self.server.is_idle().await;
            let report = |update: ToolProgress| {
                (ctx.events)(Event::ToolProgress {
                    turn: ctx.turn,
                    call_id: ctx.call_id.clone(),
                    progress: update.progress,
                    total: update.total,
                    message: update.message,
                })
            };
            let elicit = |params| self.elicit(&ctx, params);
            let output = self
                .server
                .call(&self.listed, arguments, &ctx.cancel, &report, &elicit)
                .await;
            if was_idle && output.is_error {
                let status = self.server.status().await;
                if status.status == ServerState::Failed {
                    // The model reads the error; the user learns that a server is down.
                    (ctx.events)(Event::Notice {
                        turn: ctx.turn,
                        message: format!(
                            "MCP server `{}` could not start for its first call: {}",
                            status.name,
                            status.error.unwrap_or_default()
                        ),
                    });
                }
            }
            output
        })
    }
}

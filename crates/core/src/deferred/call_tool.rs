//! `call_tool`, the one door to promoted tools under `tool_search.binding: stable`.
//!
//! With a stable binding the tools array never changes, so a provider's prompt cache
//! survives every promotion. The model calls a promoted tool as
//! `call_tool({"name": ..., "arguments": {...}})`; before anything acts on the reply the
//! call is rewritten into a direct call of the inner tool ([`inner_call`]), so the deferred
//! filter, the events, the cards and the stored thread all see the real tool. Only a call
//! that cannot be rewritten reaches this tool, which explains what was wrong.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::base::describe::json_kind;
use crate::protocol::ToolCall;
use crate::tools::Effect;
use crate::tools::{Tool, ToolContext, ToolFuture, ToolInfo, ToolOutput, ToolSource};

/// One of the [`RESERVED_NAMES`](crate::tools::RESERVED_NAMES): no MCP tool is given it.
pub const CALL_TOOL: &str = "call_tool";

/// The `call_tool` tool.
#[derive(Debug, Clone)]
pub struct CallTool {
    info: Arc<ToolInfo>,
}

impl Default for CallTool {
    fn default() -> Self {
        Self::new()
    }
}

impl CallTool {
    /// The tool, with its fixed schema.
    pub fn new() -> Self {
        let info = ToolInfo {
            name: CALL_TOOL.to_string(),
            description: String::from(
                "Call a deferred tool whose schema tool_search returned. `name` is the tool's \
                 exact name, `arguments` the object its schema describes.",
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's exact name"},
                    "arguments": {"type": "object", "description": "The tool's arguments"}
                },
                "required": ["name", "arguments"]
            }),
            source: ToolSource::BuiltIn,
            metadata: Map::new(),
            // What it stands for is decided per call; the rewritten call runs as its tool.
            parallel: true,
        };
        Self {
            info: Arc::new(info),
        }
    }
}

/// The direct call a `call_tool` call stands for: same id, the inner name, the inner
/// arguments as a JSON object (a string holding one, as some models send, is accepted).
/// The error says what the model should fix.
pub fn inner_call(call: &ToolCall) -> Result<ToolCall, String> {
    let outer = crate::tools::parse_arguments(&call.arguments)?;
    let name = match outer.get("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name.trim(),
        Some(Value::String(_)) => {
            return Err(String::from("`name` is empty: give the tool's exact name"));
        }
        Some(other) => {
            return Err(format!(
                "`name` must be the tool's name as a string, not {}",
                json_kind(other)
            ));
        }
        None => {
            return Err(String::from(
                "`name` is missing: give the tool's exact name",
            ));
        }
    };
    if name == CALL_TOOL {
        return Err(String::from(
            "call_tool cannot call itself: give the name of the tool to run",
        ));
    }
    let arguments = match outer.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(value @ Value::Object(_)) => value.clone(),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Object(_)) => value,
            _ => {
                return Err(String::from(
                    "`arguments` must be a JSON object (the tool's arguments), not a string",
                ));
            }
        },
        Some(other) => {
            return Err(format!(
                "`arguments` must be a JSON object (the tool's arguments), not {}",
                json_kind(other)
            ));
        }
    };
    Ok(ToolCall {
        id: call.id.clone(),
        name: name.to_string(),
        arguments: arguments.to_string(),
    })
}

impl Tool for CallTool {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn call<'a>(&'a self, _ctx: ToolContext<'a>, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let call = ToolCall {
                id: String::new(),
                name: CALL_TOOL.to_string(),
                arguments: arguments.to_string(),
            };
            match inner_call(&call) {
                Err(why) => ToolOutput::error(format!("Error: call_tool: {why}.")),
                // A well-formed call is rewritten before tools run; reaching here means it
                // was not (a chain without the rewrite), and nothing runs unfiltered.
                Ok(inner) => ToolOutput::error(format!(
                    "Error: call_tool could not run `{}` here; call it by its own name.",
                    inner.name
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::CallStandalone;

    fn call(arguments: &str) -> ToolCall {
        ToolCall {
            id: "c7".into(),
            name: CALL_TOOL.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn the_inner_call_keeps_the_id_and_takes_name_and_arguments() {
        let inner = inner_call(&call(
            r#"{"name": "github_get_file", "arguments": {"path": "a"}}"#,
        ))
        .unwrap();
        assert_eq!(inner.id, "c7");
        assert_eq!(inner.name, "github_get_file");
        assert_eq!(inner.arguments, r#"{"path":"a"}"#);
        let encoded = inner_call(&call(r#"{"name": "t", "arguments": "{\"q\": 1}"}"#)).unwrap();
        assert_eq!(
            encoded.arguments, r#"{"q":1}"#,
            "a string holding an object"
        );
        let bare = inner_call(&call(r#"{"name": "t"}"#)).unwrap();
        assert_eq!(bare.arguments, "{}", "no arguments is an empty object");
    }

    #[test]
    fn malformed_calls_say_what_to_fix() {
        for (arguments, says) in [
            ("[1]", "must be a JSON object"),
            ("{}", "`name` is missing"),
            (r#"{"name": 3}"#, "not a number"),
            (r#"{"name": "  "}"#, "`name` is empty"),
            (
                r#"{"name": "call_tool", "arguments": {}}"#,
                "cannot call itself",
            ),
            (r#"{"name": "t", "arguments": [1]}"#, "not an array"),
            (r#"{"name": "t", "arguments": "nope"}"#, "not a string"),
        ] {
            let err = inner_call(&call(arguments)).unwrap_err();
            assert!(err.contains(says), "{arguments}: {err}");
        }
    }

    #[tokio::test]
    async fn the_tool_itself_never_runs_anything() {
        let tool = CallTool::new();
        let out = tool
            .call_standalone(json!({"name": "github_get_file", "arguments": {}}))
            .await;
        assert!(out.is_error);
        assert!(
            out.content.contains("call it by its own name"),
            "{}",
            out.content
        );
        let out = tool.call_standalone(json!({"arguments": {}})).await;
        assert!(out.content.contains("`name` is missing"), "{}", out.content);
    }
}

//! What the fixture offers besides tools, when asked to: resources (`--resources`),
//! prompts (`--prompts`) and a tool that elicits a form from the user (`--elicitation`).

use rmcp::model::{
    ContentBlock, ElicitRequestParams, ElicitationAction, GetPromptResult, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, Prompt, PromptArgument,
    PromptMessage, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};

/// The one text resource.
pub(crate) const NOTE_URI: &str = "fixture://notes/hello.txt";
/// The one image resource (a 1×1 PNG).
pub(crate) const DOT_URI: &str = "fixture://images/dot.png";
/// A 1×1 transparent PNG, base64.
pub(crate) const DOT_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

pub(crate) fn list_resources() -> ListResourcesResult {
    ListResourcesResult::with_all_items(vec![
        Resource::new(NOTE_URI, "hello note")
            .with_mime_type("text/plain")
            .with_description("A short note."),
        Resource::new(DOT_URI, "dot")
            .with_mime_type("image/png")
            .with_size(68),
    ])
}

pub(crate) fn list_templates() -> ListResourceTemplatesResult {
    let template = ResourceTemplate::new("fixture://notes/{name}", "any note");
    ListResourceTemplatesResult::with_all_items(vec![template])
}

pub(crate) fn read_resource(uri: &str) -> Result<ReadResourceResult, McpError> {
    if uri == DOT_URI {
        return Ok(ReadResourceResult::new(vec![
            ResourceContents::blob(DOT_PNG, uri).with_mime_type("image/png"),
        ]));
    }
    match uri.strip_prefix("fixture://notes/") {
        Some("hello.txt") => Ok(ReadResourceResult::new(vec![ResourceContents::text(
            "Hello from the fixture's note.",
            uri,
        )])),
        Some(name) if !name.is_empty() => {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                format!("The note called {name}."),
                uri,
            )]))
        }
        _ => Err(McpError::resource_not_found(
            format!("no resource {uri}"),
            None,
        )),
    }
}

/// `greet`, and `farewell` once `change_prompts` was called.
pub(crate) fn list_prompts(changed: bool) -> ListPromptsResult {
    let mut prompts = vec![Prompt::new(
        "greet",
        Some("Asks the model to greet someone."),
        Some(vec![
            PromptArgument::new("name")
                .with_description("Who to greet.")
                .with_required(true),
            PromptArgument::new("style").with_description("How (optional)."),
        ]),
    )];
    if changed {
        prompts.push(Prompt::new("farewell", Some("Says goodbye."), None));
    }
    ListPromptsResult::with_all_items(prompts)
}

pub(crate) fn get_prompt(name: &str, arguments: &JsonObject) -> Result<GetPromptResult, McpError> {
    if name != "greet" {
        return Err(McpError::invalid_params(format!("no prompt {name}"), None));
    }
    let who = arguments
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::invalid_params("`name` is required", None))?;
    let style = arguments
        .get("style")
        .and_then(Value::as_str)
        .unwrap_or("plainly");
    // `style=pad:N`: N more bytes of text, for the tests of a client's bounds.
    let style = match style
        .strip_prefix("pad:")
        .and_then(|n| n.parse::<usize>().ok())
    {
        Some(bytes) => "x".repeat(bytes),
        None => style.to_string(),
    };
    Ok(GetPromptResult::new(vec![
        PromptMessage::new_text(Role::User, format!("Greet {who} {style}.")),
        PromptMessage::new(Role::User, ContentBlock::text("Keep it to one line.")),
    ]))
}

/// The `ask_user` tool: elicits a name and an age, and says what came back; with
/// `defaults` (`confirm_settings`) every required field has a default (SEP-1034).
pub(crate) async fn ask_user(
    context: &RequestContext<RoleServer>,
    defaults: bool,
) -> Result<String, McpError> {
    let name = match defaults {
        true => json!({"type": "string", "title": "Name", "minLength": 1, "default": "Ada"}),
        false => {
            json!({"type": "string", "title": "Name", "description": "Your name", "minLength": 1})
        }
    };
    let schema: rmcp::model::ElicitationSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "name": name,
            "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
            "colour": {"type": "string", "title": "Colour", "enum": ["red", "green", "blue"], "default": "green"},
            "subscribe": {"type": "boolean", "title": "Subscribe", "default": false}
        },
        "required": ["name"]
    }))
    .map_err(|err| McpError::internal_error(err.to_string(), None))?;
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: String::from("Who are you?"),
        requested_schema: schema,
    };
    let result = context
        .peer
        .create_elicitation(params)
        .await
        .map_err(|err| McpError::internal_error(format!("elicitation failed: {err}"), None))?;
    Ok(match result.action {
        ElicitationAction::Accept => format!(
            "accepted: {}",
            result.content.map_or_else(String::new, |c| c.to_string())
        ),
        ElicitationAction::Decline => String::from("declined"),
        ElicitationAction::Cancel => String::from("cancelled"),
        _ => String::from("unknown"),
    })
}

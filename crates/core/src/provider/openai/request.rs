//! The chat-completions request for one [`ModelRequest`], built from async-openai's types.

use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls,
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestMessage, ChatCompletionRequestMessageContentPartImage,
    ChatCompletionRequestMessageContentPartText, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestToolMessage,
    ChatCompletionRequestToolMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, ChatCompletionRequestUserMessageContentPart,
    ChatCompletionStreamOptions, ChatCompletionTool, ChatCompletionTools,
    CreateChatCompletionRequest, FunctionCall, FunctionObject, ImageUrl,
};

use super::OpenAiSettings;
use crate::config::ToolCallFormat;
use crate::protocol::Message;
use crate::provider::text_calls::{call_as_text, result_as_text, tools_section};
use crate::provider::{ModelRequest, ToolSpec};

/// How a summary message starts, so the model reads it as context rather than a question.
pub(super) const SUMMARY_PREFIX: &str = "Summary of the earlier conversation:\n";

/// The streamed request for `request` under `settings`. With `tool_call_format: text`
/// the tools are described in the system prompt instead of sent, and earlier calls and
/// results are written as text, for servers that know nothing of tools.
pub(super) fn build_request(
    settings: &OpenAiSettings,
    request: &ModelRequest,
) -> CreateChatCompletionRequest {
    let shim = settings.tool_call_format == ToolCallFormat::Text;
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    let mut system = request.system.clone();
    if shim {
        system.push_str(&tools_section(&request.tools));
    }
    if !system.is_empty() {
        messages.push(ChatCompletionRequestMessage::System(
            ChatCompletionRequestSystemMessage {
                content: ChatCompletionRequestSystemMessageContent::Text(system),
                name: None,
            },
        ));
    }
    if shim {
        for next in request.messages.iter().map(message_as_text) {
            push_alternating(&mut messages, next);
        }
    } else {
        messages.extend(request.messages.iter().map(message));
    }
    let tools =
        (!request.tools.is_empty() && !shim).then(|| request.tools.iter().map(tool).collect());
    let mut body = CreateChatCompletionRequest {
        model: settings.model.clone(),
        messages,
        stream: Some(true),
        stream_options: Some(ChatCompletionStreamOptions {
            include_usage: Some(true),
            include_obfuscation: None,
        }),
        tools,
        temperature: settings.temperature,
        ..Default::default()
    };
    set_max_tokens(&mut body, request.max_tokens.or(settings.max_tokens));
    body
}

/// Sets `max_tokens`: deprecated by OpenAI in favour of `max_completion_tokens`, but the
/// one field every OpenAI-compatible server understands.
#[allow(deprecated)]
fn set_max_tokens(body: &mut CreateChatCompletionRequest, max_tokens: Option<u32>) {
    body.max_tokens = max_tokens;
}

fn message(message: &Message) -> ChatCompletionRequestMessage {
    match message {
        Message::User { content } => user(content.clone()),
        Message::Summary { content } => user(format!("{SUMMARY_PREFIX}{content}")),
        Message::Images { content, images } => {
            let text = ChatCompletionRequestUserMessageContentPart::Text(
                ChatCompletionRequestMessageContentPartText {
                    text: content.clone(),
                    prompt_cache_breakpoint: None,
                },
            );
            let parts = std::iter::once(text)
                .chain(images.iter().map(|image| {
                    ChatCompletionRequestUserMessageContentPart::ImageUrl(
                        ChatCompletionRequestMessageContentPartImage {
                            image_url: ImageUrl {
                                url: format!("data:{};base64,{}", image.media_type, image.data),
                                detail: None,
                            },
                            prompt_cache_breakpoint: None,
                        },
                    )
                }))
                .collect();
            ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
                content: ChatCompletionRequestUserMessageContent::Array(parts),
                name: None,
            })
        }
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let calls: Vec<_> = tool_calls
                .iter()
                .map(|call| {
                    let arguments = if call.arguments.trim().is_empty() {
                        String::from("{}")
                    } else {
                        call.arguments.clone()
                    };
                    ChatCompletionMessageToolCalls::Function(ChatCompletionMessageToolCall {
                        id: call.id.clone(),
                        function: FunctionCall {
                            name: call.name.clone(),
                            arguments,
                        },
                    })
                })
                .collect();
            // Some servers reject an assistant message whose `content` is omitted or null,
            // so it is always a string ("" when the model only called tools).
            let content = ChatCompletionRequestAssistantMessageContent::Text(content.clone());
            ChatCompletionRequestMessage::Assistant(ChatCompletionRequestAssistantMessage {
                content: Some(content),
                tool_calls: (!calls.is_empty()).then_some(calls),
                ..Default::default()
            })
        }
        Message::Tool {
            call_id, content, ..
        } => ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
            content: ChatCompletionRequestToolMessageContent::Text(content.clone()),
            tool_call_id: call_id.clone(),
        }),
    }
}

/// Appends `next`, joining it to the previous message when both are plain user text (two
/// results in a row): chat templates for models without tools often require the roles to
/// alternate.
fn push_alternating(
    messages: &mut Vec<ChatCompletionRequestMessage>,
    next: ChatCompletionRequestMessage,
) {
    use ChatCompletionRequestMessage::User;
    use ChatCompletionRequestUserMessageContent::Text;
    if let (
        Some(User(last)),
        User(ChatCompletionRequestUserMessage {
            content: Text(more),
            ..
        }),
    ) = (messages.last_mut(), &next)
        && let Text(text) = &mut last.content
    {
        text.push_str("\n\n");
        text.push_str(more);
        return;
    }
    messages.push(next);
}

/// A message for a server without tools: calls and results as text.
fn message_as_text(sent: &Message) -> ChatCompletionRequestMessage {
    match sent {
        Message::Assistant {
            content,
            tool_calls,
            ..
        } if !tool_calls.is_empty() => {
            let calls = tool_calls
                .iter()
                .map(|call| call_as_text(&call.name, &call.arguments));
            let text: Vec<String> = std::iter::once(content.clone())
                .filter(|c| !c.is_empty())
                .chain(calls)
                .collect();
            ChatCompletionRequestMessage::Assistant(ChatCompletionRequestAssistantMessage {
                content: Some(ChatCompletionRequestAssistantMessageContent::Text(
                    text.join("\n"),
                )),
                ..Default::default()
            })
        }
        Message::Tool { name, content, .. } => user(result_as_text(name, content)),
        other => message(other),
    }
}

fn user(content: String) -> ChatCompletionRequestMessage {
    ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
        content: ChatCompletionRequestUserMessageContent::Text(content),
        name: None,
    })
}

fn tool(spec: &ToolSpec) -> ChatCompletionTools {
    ChatCompletionTools::Function(ChatCompletionTool {
        function: FunctionObject {
            name: spec.name.clone(),
            description: (!spec.description.is_empty()).then(|| spec.description.clone()),
            parameters: Some(spec.parameters.clone()),
            strict: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::ToolCall;

    #[test]
    fn the_request_has_exactly_this_json() {
        let mut settings = OpenAiSettings::new("http://h/v1", "m1");
        settings.max_tokens = Some(100);
        settings.temperature = Some(0.5);
        let request = ModelRequest {
            system: String::from("sys"),
            messages: vec![
                Message::Summary {
                    content: String::from("earlier"),
                },
                Message::User {
                    content: String::from("hi"),
                },
                Message::Assistant {
                    content: String::new(),
                    reasoning: String::from("private"),
                    tool_calls: vec![ToolCall {
                        id: String::from("c1"),
                        name: String::from("ls"),
                        arguments: String::from(r#"{"path":"."}"#),
                    }],
                },
                Message::Tool {
                    call_id: String::from("c1"),
                    name: String::from("ls"),
                    content: String::from("a.txt"),
                    is_error: false,
                },
                Message::Assistant {
                    content: String::from("done"),
                    reasoning: String::new(),
                    tool_calls: vec![],
                },
            ],
            tools: vec![ToolSpec {
                name: String::from("ls"),
                description: String::from("List files"),
                parameters: json!({"type": "object", "properties": {}}),
            }],
            max_tokens: Some(7),
            callable: Default::default(),
        };
        let body = serde_json::to_value(build_request(&settings, &request)).unwrap();
        assert_eq!(
            body,
            json!({
                "model": "m1",
                "messages": [
                    {"role": "system", "content": "sys"},
                    {"role": "user", "content": "Summary of the earlier conversation:\nearlier"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "", "tool_calls": [
                        {"type": "function", "id": "c1",
                         "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}}
                    ]},
                    {"role": "tool", "content": "a.txt", "tool_call_id": "c1"},
                    {"role": "assistant", "content": "done"}
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 7,
                "temperature": 0.5,
                "tools": [{"type": "function", "function": {
                    "name": "ls", "description": "List files",
                    "parameters": {"type": "object", "properties": {}}
                }}]
            })
        );
    }

    #[test]
    fn settings_limits_apply_and_empty_tools_are_omitted() {
        let mut settings = OpenAiSettings::new("http://h/v1", "m1");
        settings.max_tokens = Some(100);
        let request = ModelRequest {
            system: String::new(),
            messages: vec![Message::User {
                content: String::from("hi"),
            }],
            tools: vec![],
            max_tokens: None,
            callable: Default::default(),
        };
        let body = serde_json::to_value(build_request(&settings, &request)).unwrap();
        assert_eq!(body["max_tokens"], 100);
        assert!(body.get("tools").is_none());
        assert!(body.get("temperature").is_none());
        assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
    }

    #[test]
    fn the_text_shim_sends_no_tools_and_keeps_the_roles_alternating() {
        let mut settings = OpenAiSettings::new("http://h/v1", "m");
        settings.tool_call_format = ToolCallFormat::Text;
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "ls".into(),
            arguments: r#"{"path": "."}"#.into(),
        };
        let result = |id: &str, text: &str| Message::Tool {
            call_id: id.into(),
            name: "ls".into(),
            content: text.into(),
            is_error: false,
        };
        let request = ModelRequest {
            system: String::from("sys"),
            messages: vec![
                Message::User {
                    content: "hi".into(),
                },
                Message::Assistant {
                    content: String::new(),
                    reasoning: String::new(),
                    tool_calls: vec![call("a"), call("b")],
                },
                result("a", "one"),
                result("b", "two"),
            ],
            tools: vec![ToolSpec {
                name: "ls".into(),
                description: "lists".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: None,
            callable: Default::default(),
        };
        let body = serde_json::to_value(build_request(&settings, &request)).unwrap();
        assert!(body.get("tools").is_none());
        let messages = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "user"],
            "two results, one message"
        );
        assert!(messages[0]["content"].as_str().unwrap().contains("# Tools"));
        let results = messages[3]["content"].as_str().unwrap();
        assert!(
            results.contains("```\none\n```") && results.contains("```\ntwo\n```"),
            "{results}"
        );
        assert!(messages[2].get("tool_calls").is_none());
    }
}

//! The model's own chat template (Jinja, from the GGUF) rendered with minijinja, bounded:
//! a template is at most [`MAX_TEMPLATE`] bytes and one rendering runs on [`FUEL`] steps, so
//! a hostile file cannot loop or balloon.

use minijinja::{Environment, ErrorKind, Value as Jinja};
use serde_json::{Value, json};

use crate::protocol::Message;
use crate::provider::ToolSpec;

/// The largest template accepted (Qwen2.5's is about 2.5 KB).
pub(super) const MAX_TEMPLATE: usize = 64 * 1024;
/// Steps one rendering may take; Qwen2.5's template with 500 tools and 200 messages takes
/// well under a tenth of this.
const FUEL: u64 = 5_000_000;

/// Why a prompt could not be rendered.
#[derive(Debug, thiserror::Error)]
#[error("the model's chat template: {0}")]
pub(super) struct TemplateError(String);

/// A parsed chat template.
pub(super) struct ChatTemplate {
    env: Environment<'static>,
}

impl ChatTemplate {
    /// Parses `source`.
    pub(super) fn new(source: String) -> Result<Self, TemplateError> {
        if source.len() > MAX_TEMPLATE {
            return Err(TemplateError(format!(
                "{} bytes, more than the {MAX_TEMPLATE} accepted",
                source.len()
            )));
        }
        let mut env = Environment::new();
        env.set_fuel(Some(FUEL));
        env.add_function("raise_exception", |message: String| -> Result<Jinja, _> {
            Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
        });
        env.add_template_owned("chat", source)
            .map_err(|e| TemplateError(e.to_string()))?;
        Ok(Self { env })
    }

    /// The prompt for `system` + `messages` with `tools` bound, ending where the model's
    /// answer starts.
    pub(super) fn render(
        &self,
        system: &str,
        messages: &[Message],
        tools: &[ToolSpec],
    ) -> Result<String, TemplateError> {
        let template = self
            .env
            .get_template("chat")
            .map_err(|e| TemplateError(e.to_string()))?;
        let mut list = vec![json!({"role": "system", "content": system})];
        list.extend(messages.iter().map(message_value));
        let tools: Vec<Value> = tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                }})
            })
            .collect();
        let context = json!({
            "messages": list,
            "tools": if tools.is_empty() { Value::Null } else { Value::Array(tools) },
            "add_generation_prompt": true,
        });
        template
            .render(Jinja::from(minijinja::value::Serde(&context)))
            .map_err(|e| TemplateError(e.to_string()))
    }
}

/// A message in the shape chat templates are written for (OpenAI's).
fn message_value(message: &Message) -> Value {
    match message {
        Message::User { content } | Message::Summary { content } => {
            json!({"role": "user", "content": content})
        }
        Message::Images { content, .. } => json!({
            "role": "user",
            "content": format!("{content}\n[images are not shown to this model]"),
        }),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let calls: Vec<Value> = tool_calls
                .iter()
                .map(|call| {
                    // Templates write the arguments with `tojson`: an object, not a string.
                    let arguments = serde_json::from_str::<Value>(&call.arguments)
                        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                    json!({"id": call.id, "type": "function",
                           "function": {"name": call.name, "arguments": arguments}})
                })
                .collect();
            let mut value = json!({"role": "assistant", "content": content});
            if !calls.is_empty() {
                value["tool_calls"] = Value::Array(calls);
            }
            value
        }
        Message::Tool {
            call_id,
            name,
            content,
            ..
        } => json!({"role": "tool", "tool_call_id": call_id, "name": name, "content": content}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;

    const QWEN_LIKE: &str = concat!(
        "{% for message in messages %}<|im_start|>{{ message.role }}\n",
        "{% if message.tool_calls %}{% for c in message.tool_calls %}<tool_call>",
        "{{ c.function.name }} {{ c.function.arguments | tojson }}</tool_call>{% endfor %}",
        "{% else %}{{ message.content }}{% endif %}<|im_end|>\n{% endfor %}",
        "{% if tools %}[{{ tools | length }} tools]{% endif %}",
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    );

    #[test]
    fn renders_messages_calls_and_tools() -> Result<(), TemplateError> {
        let template = ChatTemplate::new(QWEN_LIKE.into())?;
        let messages = vec![
            Message::User {
                content: "time?".into(),
            },
            Message::Assistant {
                content: String::new(),
                reasoning: String::new(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "now".into(),
                    arguments: r#"{"tz":"UTC"}"#.into(),
                }],
            },
        ];
        let tool = ToolSpec {
            name: "now".into(),
            description: "the time".into(),
            parameters: json!({"type": "object"}),
        };
        let prompt = template.render("be brief", &messages, &[tool])?;
        assert!(prompt.starts_with("<|im_start|>system\nbe brief<|im_end|>"));
        assert!(
            prompt.contains(r#"<tool_call>now {"tz": "UTC"}</tool_call>"#),
            "{prompt}"
        );
        assert!(prompt.ends_with("[1 tools]<|im_start|>assistant\n"));
        Ok(())
    }

    #[test]
    fn a_looping_or_huge_template_is_refused() {
        let huge = "x".repeat(MAX_TEMPLATE + 1);
        assert!(ChatTemplate::new(huge).is_err());
        let looping =
            "{% for i in range(10000) %}{% for j in range(10000) %}.{% endfor %}{% endfor %}";
        let template = ChatTemplate::new(looping.into());
        let rendered = template.and_then(|t| t.render("", &[], &[]));
        let err = rendered.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("fuel"), "{err}");
    }

    #[test]
    fn raise_exception_fails_the_rendering() {
        let template = ChatTemplate::new("{{ raise_exception('no tools here') }}".into());
        let err = template
            .and_then(|t| t.render("", &[], &[]))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("no tools here"), "{err}");
    }
}

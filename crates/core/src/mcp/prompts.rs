//! Server prompts: listed for the chat's slash commands, checked against what the server
//! declared, and fetched as the text of the next user turn (the chat's `/<server>:<name>`,
//! `-p --mcp-prompt`). The user asks for a prompt by name, so its messages are the user's
//! own turn; what the server sends is shown to the user as that turn before it runs.

use std::collections::BTreeMap;

use rmcp::model::{GetPromptResult, Prompt, Role};
use tokio_util::sync::CancellationToken;

use super::McpManager;
use super::content::block_text;
use super::server::Feature;
use crate::protocol::{PromptArgumentInfo, PromptInfo};

/// Longest name (of a server, prompt or argument) a slash command carries.
const MAX_NAME_CHARS: usize = 64;
/// Descriptions are cut to this many characters.
const DESCRIPTION_CHARS: usize = 200;
/// A prompt with more arguments is not offered.
const MAX_ARGUMENTS: usize = 32;

/// Why a prompt could not become a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    /// No such server, or it offers no prompts.
    #[error(
        "no MCP server called `{}` offers prompts{}",
        crate::base::text::quoted(.server),
        known_list(.known)
    )]
    UnknownServer {
        /// The name asked for.
        server: String,
        /// The servers that offer prompts.
        known: Vec<String>,
    },
    /// The server has no prompt of that name.
    #[error(
        "MCP server `{server}` has no prompt `{}`{}",
        crate::base::text::quoted(.name),
        known_list(.known)
    )]
    UnknownPrompt {
        /// The server named in the command.
        server: String,
        /// The name asked for.
        name: String,
        /// The prompts the server offers.
        known: Vec<String>,
    },
    /// An argument the prompt does not declare.
    #[error(
        "the prompt `{prompt}` has no argument `{}`{}",
        crate::base::text::quoted(.argument),
        known_list(.known)
    )]
    UnknownArgument {
        /// `server:name`.
        prompt: String,
        /// The argument given.
        argument: String,
        /// The arguments it declares.
        known: Vec<String>,
    },
    /// Required arguments were not given.
    #[error("the prompt `{prompt}` needs {}", .missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "))]
    MissingArguments {
        /// `server:name`.
        prompt: String,
        /// The missing ones, in the prompt's order.
        missing: Vec<String>,
    },
    /// The server failed or refused.
    #[error("{0}")]
    Failed(String),
    /// The prompt has no text.
    #[error("the prompt `{0}` returned no text")]
    Empty(String),
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        String::new()
    } else {
        format!(
            " (there are: {})",
            crate::base::text::quoted_list(known.iter().map(String::as_str))
        )
    }
}

/// Whether `name` can be part of a slash command: letters, digits, `_`, `-`, `.`.
fn command_safe(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn short(text: Option<&str>) -> String {
    crate::base::text::short_line(text.unwrap_or_default(), DESCRIPTION_CHARS).0
}

/// A server's prompt as front-ends show it, if every name in it is command-safe.
fn info(server: &str, prompt: &Prompt) -> Option<PromptInfo> {
    if !command_safe(server)
        || !command_safe(&prompt.name)
        || prompt
            .arguments
            .as_ref()
            .is_some_and(|a| a.len() > MAX_ARGUMENTS)
    {
        return None;
    }
    let arguments = prompt
        .arguments
        .iter()
        .flatten()
        .map(|a| {
            command_safe(&a.name).then(|| PromptArgumentInfo {
                name: a.name.clone(),
                description: short(a.description.as_deref().or(a.title.as_deref())),
                required: a.required == Some(true),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(PromptInfo {
        server: server.to_string(),
        name: prompt.name.clone(),
        description: short(prompt.description.as_deref().or(prompt.title.as_deref())),
        arguments,
    })
}

impl McpManager {
    /// Every server's prompts whose names a slash command can carry, servers in config
    /// order. Idle servers' come from their manifests (nothing is started).
    pub async fn prompts(&self) -> Vec<PromptInfo> {
        let mut all = Vec::new();
        for server in self.servers() {
            if !server.config().enabled || !server.offers(Feature::Prompts).await {
                continue;
            }
            let name = &server.config().name;
            for prompt in server.prompts().await {
                match info(name, &prompt) {
                    Some(info) => all.push(info),
                    None => {
                        tracing::debug!(server = %name, "a prompt whose name or arguments no slash command can carry is not offered")
                    }
                }
            }
        }
        all
    }

    /// The text of the prompt `name` of `server` with `arguments`, checked first against
    /// what the server declared (unknown and missing arguments are errors, not requests).
    pub async fn prompt_message(
        &self,
        server: &str,
        name: &str,
        arguments: &BTreeMap<String, String>,
        cancel: &CancellationToken,
    ) -> Result<String, PromptError> {
        let prompts = self.prompts().await;
        let offering = |p: &&PromptInfo| p.server == server;
        let Some(prompt) = prompts.iter().filter(offering).find(|p| p.name == name) else {
            let known: Vec<String> = prompts
                .iter()
                .filter(offering)
                .map(|p| p.name.clone())
                .collect();
            if known.is_empty() {
                let mut servers: Vec<String> = prompts.iter().map(|p| p.server.clone()).collect();
                servers.dedup();
                return Err(PromptError::UnknownServer {
                    server: server.to_string(),
                    known: servers,
                });
            }
            return Err(PromptError::UnknownPrompt {
                server: server.to_string(),
                name: name.to_string(),
                known,
            });
        };
        let declared: Vec<String> = prompt.arguments.iter().map(|a| a.name.clone()).collect();
        if let Some(argument) = arguments.keys().find(|k| !declared.contains(k)) {
            return Err(PromptError::UnknownArgument {
                prompt: prompt.command(),
                argument: argument.clone(),
                known: declared,
            });
        }
        let missing: Vec<String> = prompt
            .arguments
            .iter()
            .filter(|a| a.required && arguments.get(&a.name).is_none_or(|v| v.trim().is_empty()))
            .map(|a| a.name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(PromptError::MissingArguments {
                prompt: prompt.command(),
                missing,
            });
        }
        let Some(server_handle) = self.servers().iter().find(|s| s.config().name == server) else {
            return Err(PromptError::Failed(format!("no MCP server `{server}`")));
        };
        let values = arguments
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        let result = server_handle
            .get_prompt(name, values, cancel)
            .await
            .map_err(PromptError::Failed)?;
        let text = message_text(&result);
        if text.trim().is_empty() {
            return Err(PromptError::Empty(prompt.command()));
        }
        // The user's turn, sent whole to the model: bounded like any text from outside.
        let (text, cut) = crate::base::text::cap_turn(&text);
        if cut {
            tracing::warn!(
                "the prompt `{}` was cut at {} KiB",
                prompt.command(),
                crate::base::text::MAX_TURN_BYTES / 1024
            );
        }
        Ok(text)
    }
}

/// A prompt's messages as one user turn: each message's text, separated by blank lines.
/// When the server wrote assistant messages too, every message says whose it is.
fn message_text(result: &GetPromptResult) -> String {
    let labelled = result.messages.iter().any(|m| m.role == Role::Assistant);
    result
        .messages
        .iter()
        .map(|message| {
            let text = block_text(&message.content);
            match (labelled, &message.role) {
                (false, _) => text,
                (true, Role::Assistant) => format!("[assistant]\n{text}"),
                (true, _) => format!("[user]\n{text}"),
            }
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use rmcp::model::{PromptArgument, PromptMessage};

    use super::*;

    #[test]
    fn only_names_a_command_line_can_carry_are_offered() {
        let prompt = |name: &str, argument: &str| {
            Prompt::new(
                name,
                Some("d\u{1b}[2J"),
                Some(vec![PromptArgument::new(argument)]),
            )
        };
        let offered = info("fx", &prompt("greet", "name")).unwrap();
        assert_eq!(offered.command(), "fx:greet");
        assert!(!offered.description.contains('\u{1b}'), "escaped");
        for (server, name, argument) in [
            ("fx", "has space", "a"),
            ("fx", "greet", "a b"),
            ("f:x", "greet", "a"),
            ("fx", "", "a"),
            ("fx", &"x".repeat(65), "a"),
            ("fx", "semi;colon", "a"),
        ] {
            assert!(
                info(server, &prompt(name, argument)).is_none(),
                "{server} {name} {argument}"
            );
        }
    }

    #[test]
    fn messages_become_one_turn_labelled_only_when_the_assistant_speaks() {
        let mut result = GetPromptResult::new(vec![
            PromptMessage::new_text(Role::User, "one"),
            PromptMessage::new_text(Role::User, "two"),
        ]);
        assert_eq!(message_text(&result), "one\n\ntwo");
        result
            .messages
            .push(PromptMessage::new_text(Role::Assistant, "three"));
        assert_eq!(
            message_text(&result),
            "[user]\none\n\n[user]\ntwo\n\n[assistant]\nthree"
        );
    }

    #[test]
    fn errors_say_what_there_is() {
        let err = PromptError::MissingArguments {
            prompt: "fx:greet".into(),
            missing: vec!["name".into(), "day".into()],
        };
        assert_eq!(err.to_string(), "the prompt `fx:greet` needs `name`, `day`");
        let err = PromptError::UnknownPrompt {
            server: "fx".into(),
            name: "nope".into(),
            known: vec!["greet".into()],
        };
        assert_eq!(
            err.to_string(),
            "MCP server `fx` has no prompt `nope` (there are: greet)"
        );
    }
}

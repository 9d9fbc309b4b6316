//! Slash commands: the list, what the popup offers for a typed prefix (antler's commands,
//! then the MCP servers' prompts as `/<server>:<name>`), and parsing a line.

use std::collections::BTreeMap;

use antler_protocol::{PromptInfo, SkillInfo};

/// A slash command the input box understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlashCommand {
    /// Keys and commands.
    Help,
    /// A new thread.
    New,
    /// Continue a stored thread.
    Resume,
    /// Switch the model.
    Model,
    /// Bound, promoted and deferred tools.
    Tools,
    /// The MCP servers' states, to reconnect one or sign in.
    Mcp,
    /// Where the context's tokens go.
    Context,
    /// The skills found; `/NAME` runs a message with one.
    Skills,
    /// Clear the screen.
    Clear,
    /// Leave.
    Quit,
}

/// Every command, in the order the popup lists them.
pub(crate) const COMMANDS: [SlashCommand; 10] = [
    SlashCommand::Help,
    SlashCommand::New,
    SlashCommand::Resume,
    SlashCommand::Model,
    SlashCommand::Tools,
    SlashCommand::Mcp,
    SlashCommand::Context,
    SlashCommand::Skills,
    SlashCommand::Clear,
    SlashCommand::Quit,
];

impl SlashCommand {
    /// Its name, without the slash.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Help => "help",
            Self::New => "new",
            Self::Resume => "resume",
            Self::Model => "model",
            Self::Tools => "tools",
            Self::Mcp => "mcp",
            Self::Context => "context",
            Self::Skills => "skills",
            Self::Clear => "clear",
            Self::Quit => "quit",
        }
    }

    /// Its optional argument, for help.
    pub(crate) fn argument(self) -> &'static str {
        match self {
            Self::Resume => "[id]",
            Self::Model => "[name]",
            _ => "",
        }
    }

    /// Its line in the popup and in `/help`.
    pub(crate) fn help(self) -> &'static str {
        match self {
            Self::Help => "keys and commands",
            Self::New => "start a new thread",
            Self::Resume => "continue a stored thread",
            Self::Model => "switch the model",
            Self::Tools => "bound, promoted and deferred tools",
            Self::Mcp => "MCP servers; reconnect",
            Self::Context => "where the context's tokens go",
            Self::Skills => "the skills; /NAME runs a message with one",
            Self::Clear => "clear the screen (the thread stays)",
            Self::Quit => "leave antler",
        }
    }
}

/// A row of the popup: one of antler's commands or a server's prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// antler's own.
    Builtin(SlashCommand),
    /// `/<server>:<name>`.
    Prompt(PromptInfo),
    /// `/NAME`: a skill.
    Skill(SkillInfo),
}

impl Target {
    /// Its name, without the slash.
    pub(crate) fn name(&self) -> String {
        match self {
            Self::Builtin(command) => command.name().to_string(),
            Self::Prompt(prompt) => prompt.command(),
            Self::Skill(skill) => skill.name.clone(),
        }
    }

    /// Its arguments, for the popup: `<required> [optional]`.
    pub(crate) fn argument(&self) -> String {
        match self {
            Self::Builtin(command) => command.argument().to_string(),
            Self::Prompt(prompt) => prompt
                .arguments
                .iter()
                .map(|a| {
                    if a.required {
                        format!("<{}>", a.name)
                    } else {
                        format!("[{}]", a.name)
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
            Self::Skill(_) => String::from("[message]"),
        }
    }

    /// Its line in the popup: a command's help, a prompt's description (else its server), a
    /// skill's description.
    pub(crate) fn help(&self) -> String {
        match self {
            Self::Builtin(command) => command.help().to_string(),
            Self::Prompt(prompt) if prompt.description.is_empty() => {
                format!("prompt of MCP server `{}`", prompt.server)
            }
            Self::Prompt(prompt) => prompt.description.clone(),
            Self::Skill(skill) => format!("skill · {}", skill.description),
        }
    }
}

/// What the popup offers while `input` is a slash and a name prefix (nothing once a space
/// or a second line is typed): antler's commands, then the servers' prompts.
pub(crate) fn matches(input: &str, prompts: &[PromptInfo], skills: &[SkillInfo]) -> Vec<Target> {
    let Some(prefix) = input.strip_prefix('/') else {
        return Vec::new();
    };
    if prefix.contains(char::is_whitespace) {
        return Vec::new();
    }
    let builtin = COMMANDS
        .iter()
        .copied()
        .filter(|c| c.name().starts_with(prefix))
        .map(Target::Builtin);
    let prompts = prompts
        .iter()
        .filter(|p| p.command().starts_with(prefix) || p.name.starts_with(prefix))
        .cloned()
        .map(Target::Prompt);
    let skills = skills
        .iter()
        .filter(|s| s.usable && s.name.starts_with(prefix))
        .cloned()
        .map(Target::Skill);
    builtin.chain(prompts).chain(skills).collect()
}

/// The arguments of `/<server>:<name> rest`: `name=value` pairs when every word is one of
/// the prompt's arguments so given, else words in the arguments' order, the last argument
/// taking the rest of the line (so a one-argument prompt takes the whole line).
pub(crate) fn prompt_arguments(prompt: &PromptInfo, rest: &str) -> BTreeMap<String, String> {
    let rest = rest.trim();
    let mut arguments = BTreeMap::new();
    if rest.is_empty() || prompt.arguments.is_empty() {
        return arguments;
    }
    let declared = |name: &str| prompt.arguments.iter().any(|a| a.name == name);
    let words: Vec<&str> = rest.split_whitespace().collect();
    let named: Option<Vec<(&str, &str)>> = words
        .iter()
        .map(|w| w.split_once('=').filter(|(k, _)| declared(k)))
        .collect();
    if let Some(named) = named {
        for (name, value) in named {
            arguments.insert(name.to_string(), value.to_string());
        }
        return arguments;
    }
    let mut left = rest;
    let last = prompt.arguments.len() - 1;
    for (index, argument) in prompt.arguments.iter().enumerate() {
        if left.is_empty() {
            break;
        }
        let value = if index == last {
            std::mem::take(&mut left)
        } else {
            let (word, after) = left.split_once(char::is_whitespace).unwrap_or((left, ""));
            left = after.trim_start();
            word
        };
        arguments.insert(argument.name.clone(), value.to_string());
    }
    arguments
}

/// What a submitted line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// A known command and its argument (trimmed, maybe empty).
    Command(SlashCommand, String),
    /// A server's prompt and the rest of the line.
    Prompt(PromptInfo, String),
    /// A skill and the rest of the line.
    Skill(String, String),
    /// `/word` that names no command.
    Unknown(String),
    /// A message for the model (a path like `/etc/hosts …` is one too).
    Message,
}

/// Parses a submitted line.
pub(crate) fn parse(line: &str, prompts: &[PromptInfo], skills: &[SkillInfo]) -> Parsed {
    let Some(rest) = line.trim_start().strip_prefix('/') else {
        return Parsed::Message;
    };
    let (name, argument) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if name.is_empty() || name.contains('/') {
        return Parsed::Message;
    }
    if let Some(command) = COMMANDS.iter().find(|c| c.name() == name) {
        return Parsed::Command(*command, argument.trim().to_string());
    }
    if let Some(prompt) = prompts.iter().find(|p| p.command() == name) {
        return Parsed::Prompt(prompt.clone(), argument.to_string());
    }
    match skills.iter().find(|s| s.usable && s.name == name) {
        Some(skill) => Parsed::Skill(skill.name.clone(), argument.trim().to_string()),
        None => Parsed::Unknown(name.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_and_lines_parse() {
        let names = |i: &str| {
            matches(i, &[], &[])
                .iter()
                .map(|c| c.name())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names("/"),
            COMMANDS.iter().map(|c| c.name()).collect::<Vec<_>>()
        );
        assert_eq!(names("/m"), ["model", "mcp"]);
        assert!(names("/model x").is_empty());
        assert!(names("hello").is_empty());
        assert_eq!(
            parse("/resume 3f9a", &[], &[]),
            Parsed::Command(SlashCommand::Resume, "3f9a".into())
        );
        assert_eq!(parse("/nope", &[], &[]), Parsed::Unknown("nope".into()));
        assert_eq!(parse("/etc/hosts is odd", &[], &[]), Parsed::Message);
        assert_eq!(parse("hi /help", &[], &[]), Parsed::Message);
    }

    fn greet() -> PromptInfo {
        let argument = |name: &str, required| antler_protocol::PromptArgumentInfo {
            name: name.into(),
            description: String::new(),
            required,
        };
        PromptInfo {
            server: "fx".into(),
            name: "greet".into(),
            description: "Greets".into(),
            arguments: vec![argument("name", true), argument("style", false)],
        }
    }

    #[test]
    fn prompts_are_offered_and_their_arguments_parsed() {
        let prompts = [greet()];
        let offered = matches("/g", &prompts, &[]);
        assert_eq!(offered, [Target::Prompt(greet())]);
        assert_eq!(offered[0].argument(), "<name> [style]");
        assert_eq!(matches("/fx:", &prompts, &[]).len(), 1);
        assert_eq!(
            parse("/fx:greet Ada very warmly", &prompts, &[]),
            Parsed::Prompt(greet(), "Ada very warmly".into())
        );
        let args = |rest: &str| prompt_arguments(&greet(), rest);
        assert_eq!(
            args("Ada very warmly"),
            BTreeMap::from([
                ("name".to_string(), "Ada".to_string()),
                ("style".to_string(), "very warmly".to_string())
            ])
        );
        assert_eq!(
            args("style=loud name=Bo"),
            BTreeMap::from([
                ("name".to_string(), "Bo".to_string()),
                ("style".to_string(), "loud".to_string())
            ])
        );
        assert_eq!(args("x=1").get("name").map(String::as_str), Some("x=1"));
        assert!(args("  ").is_empty());
    }

    #[test]
    fn a_skill_is_a_command_after_antlers_own() {
        let skill = |name: &str, usable| SkillInfo {
            name: name.into(),
            description: "Reviews code".into(),
            source: "user".into(),
            usable,
            reason: String::new(),
        };
        let skills = [
            skill("review", true),
            skill("help", true),
            skill("planted", false),
        ];
        let names: Vec<String> = matches("/", &[], &skills)
            .iter()
            .map(Target::name)
            .collect();
        assert!(names.contains(&"review".to_string()));
        assert!(
            !names.contains(&"planted".to_string()),
            "an unusable skill is not offered"
        );
        assert_eq!(
            parse("/review  the diff ", &[], &skills),
            Parsed::Skill("review".into(), "the diff".into())
        );
        assert_eq!(
            parse("/help", &[], &skills),
            Parsed::Command(SlashCommand::Help, String::new()),
            "a skill cannot take antler's own command"
        );
        assert_eq!(
            parse("/planted", &[], &skills),
            Parsed::Unknown("planted".into())
        );
    }
}

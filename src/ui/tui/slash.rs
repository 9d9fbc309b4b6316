//! Slash commands: the list, what the popup offers for a typed prefix, and parsing a line.

/// A slash command the input box understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlashCommand {
    /// Its name, without the slash.
    pub name: &'static str,
    /// Its optional argument, for help.
    pub argument: &'static str,
    /// What it does.
    pub help: &'static str,
}

/// Every command, in the order the popup lists them.
pub const COMMANDS: [SlashCommand; 8] = [
    SlashCommand {
        name: "help",
        argument: "",
        help: "keys and commands",
    },
    SlashCommand {
        name: "new",
        argument: "",
        help: "start a new thread",
    },
    SlashCommand {
        name: "resume",
        argument: "[id]",
        help: "continue a stored thread",
    },
    SlashCommand {
        name: "model",
        argument: "[name]",
        help: "switch the model",
    },
    SlashCommand {
        name: "tools",
        argument: "",
        help: "bound, promoted and deferred tools",
    },
    SlashCommand {
        name: "mcp",
        argument: "",
        help: "MCP servers; reconnect",
    },
    SlashCommand {
        name: "clear",
        argument: "",
        help: "clear the screen (the thread stays)",
    },
    SlashCommand {
        name: "quit",
        argument: "",
        help: "leave antler",
    },
];

/// The commands the popup offers while `input` is a slash and a name prefix (nothing once
/// a space or a second line is typed).
pub fn matches(input: &str) -> Vec<SlashCommand> {
    let Some(prefix) = input.strip_prefix('/') else {
        return Vec::new();
    };
    if prefix.contains(char::is_whitespace) {
        return Vec::new();
    }
    COMMANDS
        .iter()
        .copied()
        .filter(|c| c.name.starts_with(prefix))
        .collect()
}

/// What a submitted line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// A known command and its argument (trimmed, maybe empty).
    Command(SlashCommand, String),
    /// `/word` that names no command.
    Unknown(String),
    /// A message for the model (a path like `/etc/hosts …` is one too).
    Message,
}

/// Parses a submitted line.
pub fn parse(line: &str) -> Parsed {
    let Some(rest) = line.trim_start().strip_prefix('/') else {
        return Parsed::Message;
    };
    let (name, argument) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if name.is_empty() || name.contains('/') {
        return Parsed::Message;
    }
    match COMMANDS.iter().find(|c| c.name == name) {
        Some(command) => Parsed::Command(*command, argument.trim().to_string()),
        None => Parsed::Unknown(name.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_and_lines_parse() {
        let names = |i: &str| matches(i).iter().map(|c| c.name).collect::<Vec<_>>();
        assert_eq!(
            names("/"),
            COMMANDS.iter().map(|c| c.name).collect::<Vec<_>>()
        );
        assert_eq!(names("/m"), ["model", "mcp"]);
        assert!(names("/model x").is_empty());
        assert!(names("hello").is_empty());
        assert_eq!(
            parse("/resume 3f9a"),
            Parsed::Command(COMMANDS[2], "3f9a".into())
        );
        assert_eq!(parse("/nope"), Parsed::Unknown("nope".into()));
        assert_eq!(parse("/etc/hosts is odd"), Parsed::Message);
        assert_eq!(parse("hi /help"), Parsed::Message);
    }
}

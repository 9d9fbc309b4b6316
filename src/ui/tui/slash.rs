//! Slash commands: the list, what the popup offers for a typed prefix, and parsing a line.

/// A slash command the input box understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlashCommand {
    /// Keys and commands.
    Help,
    /// A new thread.
    New,
    /// Continue a stored thread.
    Resume,
    /// Switch the model.
    Model,
    /// The tool view.
    Tools,
    /// The MCP servers.
    Mcp,
    /// Where the context's tokens go.
    Context,
    /// Clear the screen.
    Clear,
    /// Leave.
    Quit,
}

/// Every command, in the order the popup lists them.
pub const COMMANDS: [SlashCommand; 9] = [
    SlashCommand::Help,
    SlashCommand::New,
    SlashCommand::Resume,
    SlashCommand::Model,
    SlashCommand::Tools,
    SlashCommand::Mcp,
    SlashCommand::Context,
    SlashCommand::Clear,
    SlashCommand::Quit,
];

impl SlashCommand {
    /// Its name, without the slash.
    pub fn name(self) -> &'static str {
        match self {
            Self::Help => "help",
            Self::New => "new",
            Self::Resume => "resume",
            Self::Model => "model",
            Self::Tools => "tools",
            Self::Mcp => "mcp",
            Self::Context => "context",
            Self::Clear => "clear",
            Self::Quit => "quit",
        }
    }

    /// Its optional argument, for help.
    pub fn argument(self) -> &'static str {
        match self {
            Self::Resume => "[id]",
            Self::Model => "[name]",
            _ => "",
        }
    }

    /// What it does.
    pub fn help(self) -> &'static str {
        match self {
            Self::Help => "keys and commands",
            Self::New => "start a new thread",
            Self::Resume => "continue a stored thread",
            Self::Model => "switch the model",
            Self::Tools => "bound, promoted and deferred tools",
            Self::Mcp => "MCP servers; reconnect",
            Self::Context => "where the context's tokens go",
            Self::Clear => "clear the screen (the thread stays)",
            Self::Quit => "leave antler",
        }
    }
}

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
        .filter(|c| c.name().starts_with(prefix))
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
    match COMMANDS.iter().find(|c| c.name() == name) {
        Some(command) => Parsed::Command(*command, argument.trim().to_string()),
        None => Parsed::Unknown(name.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_and_lines_parse() {
        let names = |i: &str| matches(i).iter().map(|c| c.name()).collect::<Vec<_>>();
        assert_eq!(
            names("/"),
            COMMANDS.iter().map(|c| c.name()).collect::<Vec<_>>()
        );
        assert_eq!(names("/m"), ["model", "mcp"]);
        assert!(names("/model x").is_empty());
        assert!(names("hello").is_empty());
        assert_eq!(
            parse("/resume 3f9a"),
            Parsed::Command(SlashCommand::Resume, "3f9a".into())
        );
        assert_eq!(parse("/nope"), Parsed::Unknown("nope".into()));
        assert_eq!(parse("/etc/hosts is odd"), Parsed::Message);
        assert_eq!(parse("hi /help"), Parsed::Message);
    }
}

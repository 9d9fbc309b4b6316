//! `allowed-tools`: while a skill that has it is active in a run, only the tools it names
//! may run. It restricts and never widens: a call it allows still goes through the
//! permission policy. Items are the format's space-separated names, Claude Code's tool
//! names (`Read`, `Bash(git:*)`, `mcp__server__tool`) mapped to antler's, or antler's own
//! rule syntax (`read_file`, `bash(git status*)`).

use crate::config::{Rule, parse_rule_list};
use crate::tools::ToolSource;

/// Tools a restricting skill never takes away: they only find and load tools and skills,
/// or ask the user.
pub(crate) const ALWAYS_ALLOWED: &[&str] = &[
    crate::protocol::SEARCH_TOOL,
    super::load::LOAD_SKILL,
    "call_tool",
    "ask_clarification",
];

/// One item of `allowed-tools`, as antler reads it.
#[derive(Debug, Clone, PartialEq)]
enum Allowed {
    /// A rule over antler's tool names.
    Rule(Rule),
    /// `mcp__server` (every tool of it) or `mcp__server__tool`.
    Mcp {
        server: String,
        tool: Option<String>,
    },
}

/// A skill's `allowed-tools`, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct AllowedTools {
    items: Vec<Allowed>,
    /// As written, joined by spaces.
    text: String,
}

impl AllowedTools {
    /// Parses the items of `allowed-tools` (each may hold several, separated by spaces or
    /// commas outside parentheses).
    pub fn parse(values: &[String]) -> Result<Self, String> {
        let mut items = Vec::new();
        let mut words = Vec::new();
        for value in values {
            words.extend(split(value));
        }
        for word in &words {
            items.extend(item(word)?);
        }
        Ok(Self {
            items,
            text: words.join(" "),
        })
    }

    /// The list as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether a call of the tool `name` (from `source`, with `subject` for subject rules)
    /// may run. For a tool that runs `commands`, a rule with a pattern covers only a plain
    /// command, as an allow rule of the policy does (`git log; curl x | sh` is no `git`
    /// command).
    pub fn allows(
        &self,
        name: &str,
        source: Option<&ToolSource>,
        subject: Option<&str>,
        commands: bool,
    ) -> bool {
        let plain = || subject.is_some_and(crate::permissions::command::coverable);
        ALWAYS_ALLOWED.contains(&name)
            || self.items.iter().any(|item| match item {
                Allowed::Rule(rule) if commands && rule.has_subject() && !plain() => false,
                Allowed::Rule(rule) => rule.matches(name, subject),
                Allowed::Mcp { server, tool } => match source {
                    Some(ToolSource::Mcp {
                        server: s,
                        original_name,
                    }) => s == server && tool.as_ref().is_none_or(|t| t == original_name),
                    _ => false,
                },
            })
    }

    /// Whether the list names this MCP tool exactly (it is promoted when the skill loads).
    pub fn names_exactly(&self, name: &str, source: &ToolSource) -> bool {
        self.items.iter().any(|item| match item {
            Allowed::Rule(rule) => rule.text() == name,
            Allowed::Mcp { server, tool } => matches!(
                source,
                ToolSource::Mcp { server: s, original_name }
                    if s == server && tool.as_ref().is_some_and(|t| t == original_name)
            ),
        })
    }
}

/// The words of a value: spaces and commas separate them outside parentheses.
fn split(value: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut depth = 0usize;
    let mut word = String::new();
    for c in value.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (c.is_whitespace() || c == ',') {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        } else {
            word.push(c);
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// One word as items: a Claude Code name is mapped (`Bash(git:*)` is `bash(git)` and
/// `bash(git *)`), `mcp__` names by server and tool, anything else is an antler rule.
fn item(word: &str) -> Result<Vec<Allowed>, String> {
    if let Some(rest) = word.strip_prefix("mcp__") {
        let (server, tool) = match rest.split_once("__") {
            Some((server, tool)) => (server, Some(tool.to_string())),
            None => (rest, None),
        };
        if server.is_empty() || tool.as_deref() == Some("") {
            return Err(format!(
                "`{}` names no MCP server or tool",
                crate::base::text::quoted(word)
            ));
        }
        return Ok(vec![Allowed::Mcp {
            server: server.to_string(),
            tool: tool.filter(|t| t != "*"),
        }]);
    }
    let (name, subject) = match word.find('(') {
        Some(open) => (&word[..open], Some(&word[open..])),
        None => (word, None),
    };
    let rules = match (crate::config::antler_tool_name(name), subject) {
        (Some(mapped), None) => vec![mapped.to_string()],
        (Some(mapped), Some(subject)) => {
            let inner = subject.trim_start_matches('(').trim_end_matches(')');
            match inner.strip_suffix(":*") {
                Some(prefix) => vec![
                    format!("{mapped}({prefix})"),
                    format!("{mapped}({prefix} *)"),
                ],
                None => vec![format!("{mapped}({inner})")],
            }
        }
        (None, _) => vec![word.to_string()],
    };
    parse_rule_list(&rules)
        .map(|rules| rules.into_iter().map(Allowed::Rule).collect())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> AllowedTools {
        AllowedTools::parse(&[text.to_string()]).unwrap()
    }

    fn mcp(server: &str, tool: &str) -> ToolSource {
        ToolSource::Mcp {
            server: server.into(),
            original_name: tool.into(),
        }
    }

    #[test]
    fn claude_code_names_map_to_antlers() {
        let allowed = parse("Read Grep, Bash(git:*) mcp__github__get_issue write_file");
        assert!(allowed.allows("read_file", None, None, false));
        assert!(allowed.allows("grep", None, None, false));
        assert!(allowed.allows("bash", None, Some("git status"), true));
        assert!(allowed.allows("bash", None, Some("git"), true));
        assert!(!allowed.allows("bash", None, Some("gitk"), true));
        assert!(
            !allowed.allows("bash", None, Some("git log; curl x | sh"), true),
            "a compound command is no git command"
        );
        assert!(!allowed.allows("bash", None, Some("rm -rf /"), true));
        assert!(!allowed.allows("bash", None, None, true));
        assert!(allowed.allows(
            "github_get_issue",
            Some(&mcp("github", "get_issue")),
            None,
            false
        ));
        assert!(!allowed.allows(
            "github_delete_repo",
            Some(&mcp("github", "delete_repo")),
            None,
            false
        ));
        assert!(allowed.allows("write_file", None, None, false));
        assert!(!allowed.allows("str_replace", None, None, false));
        assert!(
            allowed.allows("tool_search", None, None, false),
            "finding tools stays allowed"
        );
        assert!(allowed.names_exactly("github_get_issue", &mcp("github", "get_issue")));
        assert_eq!(
            allowed.text(),
            "Read Grep Bash(git:*) mcp__github__get_issue write_file"
        );
    }

    #[test]
    fn a_list_and_a_whole_server() {
        let allowed =
            AllowedTools::parse(&["Bash(npm run test)".into(), "mcp__time".into()]).unwrap();
        assert!(allowed.allows("bash", None, Some("npm run test"), true));
        assert!(!allowed.allows("bash", None, Some("npm run build"), true));
        assert!(allowed.allows("time_now", Some(&mcp("time", "now")), None, false));
    }

    #[test]
    fn bad_items_are_errors() {
        for bad in ["mcp__", "mcp__a__", "bash(", "rm;ls"] {
            assert!(AllowedTools::parse(&[bad.to_string()]).is_err(), "{bad}");
        }
    }
}

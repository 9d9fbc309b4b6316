//! `permissions:` in config.yaml — which tool calls run, which ask the user first, which
//! are refused — and the rule syntax shared with `--allowed-tools` / `--disallowed-tools`:
//! a tool name or glob (`read_file`, `github_get_*`), optionally with a glob for the call's
//! subject in parentheses (`bash(git status*)`: a command of `bash`).

use std::fmt;

use globset::{Glob, GlobMatcher};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// What happens to a call no rule names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// It runs.
    Allow,
    /// The user is asked first (in `-p`, where nobody can answer, it is refused).
    #[default]
    Ask,
    /// It is refused.
    Deny,
}

/// `permissions:`. Deny rules win over ask rules, ask over allow; what no rule names gets
/// the tool's default: read-only built-in tools (and, on servers marked `trusted`, MCP
/// tools annotated `readOnlyHint`) run, everything else gets `default`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct PermissionsConfig {
    /// For calls no rule names that are not read-only (default `ask`).
    pub default: Decision,
    /// Calls that run without asking.
    pub allow: Vec<Rule>,
    /// Calls that ask even when `default` or an earlier "always" allows them.
    pub ask: Vec<Rule>,
    /// Calls that are refused.
    pub deny: Vec<Rule>,
}

/// One rule: a tool name glob and, optionally, a glob for the call's subject.
#[derive(Clone)]
pub struct Rule {
    text: String,
    tool: GlobMatcher,
    subject: Option<GlobMatcher>,
    /// The subject pattern as written, when it has no glob characters.
    literal: Option<String>,
}

/// Why a rule's text is not a rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a permission rule: {why} (expected a tool name or glob such as `read_file` or `github_get_*`, optionally followed by a pattern in parentheses such as `bash(git status*)`)"
)]
pub struct RuleError {
    text: String,
    why: String,
}

impl Rule {
    /// Parses `name` or `name(subject pattern)`.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let error = |why: &str| RuleError {
            text: crate::base::text::quoted(text),
            why: why.to_string(),
        };
        let trimmed = text.trim();
        let (name, subject) = match trimmed.find('(') {
            None => (trimmed, None),
            Some(open) => {
                let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(error("the pattern in parentheses is not closed at the end"));
                };
                if inner.trim().is_empty() {
                    return Err(error("the pattern in parentheses is empty"));
                }
                (&trimmed[..open], Some(inner))
            }
        };
        if name.is_empty() {
            return Err(error("the tool name is empty"));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.*?[]{},".contains(c))
        {
            return Err(error(
                "a tool name has only letters, digits, `_`, `-` and `.` (and glob characters)",
            ));
        }
        let glob = |pattern: &str| {
            Glob::new(pattern)
                .map(|g| g.compile_matcher())
                .map_err(|e| error(&e.kind().to_string()))
        };
        let literal = subject
            .filter(|s| !s.contains(['*', '?', '[', ']', '{', '}', '\\']))
            .map(str::to_string);
        Ok(Self {
            text: trimmed.to_string(),
            tool: glob(name)?,
            subject: subject.map(glob).transpose()?,
            literal,
        })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the rule names the tool `name` (whatever its subject pattern).
    pub fn names_tool(&self, name: &str) -> bool {
        self.tool.is_match(name)
    }

    /// Whether the rule covers a call of `name` whose subject is `subject`. A rule with a
    /// subject pattern covers only calls that have a subject it matches.
    pub fn matches(&self, name: &str, subject: Option<&str>) -> bool {
        self.tool.is_match(name)
            && match (&self.subject, subject) {
                (None, _) => true,
                (Some(pattern), Some(subject)) => pattern.is_match(subject),
                (Some(_), None) => false,
            }
    }

    /// Whether the rule has a subject pattern.
    pub fn has_subject(&self) -> bool {
        self.subject.is_some()
    }

    /// The subject pattern when it is a plain name without glob characters
    /// (`write_file(AGENTS.md)`).
    pub fn literal_subject(&self) -> Option<&str> {
        self.literal.as_deref()
    }
}

impl fmt::Debug for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rule({:?})", self.text)
    }
}

impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Rule::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Rule {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

/// Rules from the command line: each value may hold several, separated by commas or
/// spaces outside parentheses (`--allowed-tools "read_file,bash(git log *)"`).
pub fn parse_rule_list(values: &[String]) -> Result<Vec<Rule>, RuleError> {
    let mut rules = Vec::new();
    for value in values {
        let mut depth = 0usize;
        let mut start = 0;
        for (i, c) in value.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' | ' ' if depth == 0 => {
                    if !value[start..i].trim().is_empty() {
                        rules.push(Rule::parse(&value[start..i])?);
                    }
                    start = i + c.len_utf8();
                }
                _ => {}
            }
        }
        if !value[start..].trim().is_empty() {
            rules.push(Rule::parse(&value[start..])?);
        }
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_name_tools_and_subjects() {
        let plain = Rule::parse("github_get_*").unwrap();
        assert!(plain.matches("github_get_issue", None));
        assert!(plain.matches("github_get_issue", Some("x")));
        assert!(!plain.matches("github_create_issue", None));
        let bash = Rule::parse("bash(git status*)").unwrap();
        assert!(bash.matches("bash", Some("git status --short")));
        assert!(!bash.matches("bash", Some("git push")));
        assert!(
            !bash.matches("bash", None),
            "a subject rule needs a subject"
        );
        assert!(!bash.matches("bash2", Some("git status")));
        assert!(bash.names_tool("bash") && bash.has_subject());
        assert_eq!(bash.text(), "bash(git status*)");
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        for (text, why) in [
            ("", "empty"),
            ("bash(git", "not closed"),
            ("bash()", "empty"),
            ("../etc/passwd", "letters, digits"),
            ("a[", "unclosed"),
            ("(x)", "tool name is empty"),
        ] {
            let err = Rule::parse(text).unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
        }
        let err = Rule::parse("bad\u{1b}[2J").unwrap_err().to_string();
        assert!(!err.contains('\u{1b}'), "{err}");
    }

    #[test]
    fn command_line_lists_split_outside_parentheses() {
        let rules = parse_rule_list(&[
            String::from("read_file,bash(git log *) write_file"),
            String::from(" grep "),
        ])
        .unwrap();
        let texts: Vec<&str> = rules.iter().map(Rule::text).collect();
        assert_eq!(
            texts,
            ["read_file", "bash(git log *)", "write_file", "grep"]
        );
        assert!(parse_rule_list(&[String::from("bash(x")]).is_err());
    }

    #[test]
    fn the_section_parses_with_positions_for_bad_rules() {
        let config: PermissionsConfig =
            yaml_serde::from_str("default: deny\nallow: [read_file, 'bash(ls*)']\n").unwrap();
        assert_eq!(config.default, Decision::Deny);
        assert_eq!(config.allow.len(), 2);
        let err = yaml_serde::from_str::<PermissionsConfig>("deny:\n  - 'x('\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a permission rule") && err.contains("line 2"),
            "{err}"
        );
        assert!(yaml_serde::from_str::<PermissionsConfig>("default: maybe\n").is_err());
    }
}

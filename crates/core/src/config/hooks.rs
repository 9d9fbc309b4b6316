//! `hooks:` in config.yaml, in the structure of Claude Code's `hooks` settings: each event
//! holds a list of `{matcher, hooks: [{type: command, command, timeout}]}`, plus
//! `import_claude`, which also reads Claude Code's own settings files.

use serde::{Deserialize, Serialize};

/// config.yaml's `hooks:`: commands by event, in the shape of Claude Code's.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct HooksConfig {
    /// Also run the hooks of `.claude/settings.json` (a project file: only once trusted)
    /// and `~/.claude/settings.json`.
    pub import_claude: bool,
    /// When a session starts (`startup`) or a thread is resumed (`resume`).
    #[serde(rename = "SessionStart")]
    pub session_start: Vec<HookGroup>,
    /// When a session ends.
    #[serde(rename = "SessionEnd")]
    pub session_end: Vec<HookGroup>,
    /// Before the user's message goes to the model.
    #[serde(rename = "UserPromptSubmit")]
    pub user_prompt_submit: Vec<HookGroup>,
    /// Before a tool call, once the policy let it through.
    #[serde(rename = "PreToolUse")]
    pub pre_tool_use: Vec<HookGroup>,
    /// After a tool call ran.
    #[serde(rename = "PostToolUse")]
    pub post_tool_use: Vec<HookGroup>,
    /// When the model answered and the run would end.
    #[serde(rename = "Stop")]
    pub stop: Vec<HookGroup>,
    /// When a subagent answered.
    #[serde(rename = "SubagentStop")]
    pub subagent_stop: Vec<HookGroup>,
    /// Before older messages are summarised.
    #[serde(rename = "PreCompact")]
    pub pre_compact: Vec<HookGroup>,
    /// When an approval or a server's question waits for the user.
    #[serde(rename = "Notification")]
    pub notification: Vec<HookGroup>,
}

/// One matcher and the commands it runs.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct HookGroup {
    /// Which calls (tool events) or which source (`SessionStart`, `PreCompact`,
    /// `Notification`) the commands run for; none or `*` for all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// All run at the same time when `matcher` matches.
    pub hooks: Vec<HookCommand>,
}

/// One entry of a group's `hooks`: Claude Code's `{type, command, timeout}`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct HookCommand {
    /// `command` (the only type antler runs).
    #[serde(rename = "type")]
    pub kind: String,
    /// A shell command line, run with `bash -c` (or `sh -c`) in the project folder.
    pub command: String,
    /// Seconds before it is ended with its process group (default 60).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// The longest timeout a hook may ask for, in seconds.
pub const MAX_HOOK_TIMEOUT_SECS: u64 = 3_600;

impl HooksConfig {
    /// Every event's groups, with the event's name.
    pub fn events(&self) -> [(&'static str, &[HookGroup]); 9] {
        [
            ("SessionStart", &self.session_start),
            ("SessionEnd", &self.session_end),
            ("UserPromptSubmit", &self.user_prompt_submit),
            ("PreToolUse", &self.pre_tool_use),
            ("PostToolUse", &self.post_tool_use),
            ("Stop", &self.stop),
            ("SubagentStop", &self.subagent_stop),
            ("PreCompact", &self.pre_compact),
            ("Notification", &self.notification),
        ]
    }

    /// Whether no hook is configured (import aside).
    pub fn is_empty(&self) -> bool {
        self.events().iter().all(|(_, groups)| groups.is_empty())
    }

    /// The first problem of the configured hooks: `(key path, what is wrong)`.
    pub fn problem(&self) -> Option<(String, String)> {
        for (event, groups) in self.events() {
            for (g, group) in groups.iter().enumerate() {
                let at = |rest: &str| format!("hooks.{event}[{g}]{rest}");
                if let Err(problem) = matcher_items(group.matcher.as_deref().unwrap_or(""), false) {
                    return Some((at(".matcher"), problem));
                }
                if group.hooks.is_empty() {
                    return Some((at(".hooks"), "expected at least one hook".into()));
                }
                for (h, hook) in group.hooks.iter().enumerate() {
                    let at = |key: &str| at(&format!(".hooks[{h}].{key}"));
                    if let Some(problem) = hook.problem() {
                        let key = if problem.starts_with("the type") {
                            "type"
                        } else if problem.starts_with("the timeout") {
                            "timeout"
                        } else {
                            "command"
                        };
                        return Some((at(key), problem));
                    }
                }
            }
        }
        None
    }
}

impl HookCommand {
    /// What is wrong with this hook, if anything.
    pub fn problem(&self) -> Option<String> {
        if self.kind != "command" {
            return Some(format!(
                "the type `{}` is not one antler runs: expected `command`",
                crate::base::text::printable(&self.kind)
            ));
        }
        if self.command.trim().is_empty() {
            return Some(String::from("expected a command to run, got an empty one"));
        }
        match self.timeout {
            Some(0) => Some(String::from("the timeout must be at least 1 second")),
            Some(secs) if secs > MAX_HOOK_TIMEOUT_SECS => Some(format!(
                "the timeout is at most {MAX_HOOK_TIMEOUT_SECS} seconds, got {secs}"
            )),
            _ => None,
        }
    }
}

/// One alternative of a matcher.
#[derive(Debug, Clone, PartialEq)]
pub enum MatcherItem {
    /// A tool name glob, optionally with a subject pattern (`bash(git push*)`).
    Rule(Box<super::Rule>),
    /// Claude Code's `mcp__SERVER__TOOL`: a server's tool by its own name (globs allowed).
    Mcp {
        /// The server's key.
        server: Box<super::Rule>,
        /// The tool's name on the server.
        tool: Box<super::Rule>,
    },
}

/// Claude Code's name for one of its tools, as antler's.
pub fn antler_tool_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "Read" => "read_file",
        "Write" => "write_file",
        "Edit" | "MultiEdit" => "str_replace",
        "Grep" => "grep",
        "Glob" => "glob",
        "LS" => "ls",
        "Bash" => "bash",
        "WebFetch" => "web_fetch",
        "WebSearch" => "web_search",
        "Task" => "task",
        _ => return None,
    })
}

/// The alternatives of a matcher (`|` separates them); none for one that matches
/// everything (absent, empty or `*`). `claude`: written for Claude Code, whose matchers are
/// regular expressions over its own tool names (`Edit|Write`, `mcp__github__.*`); the
/// common forms are taken (`.*` as `*`), and its tool names mapped to antler's.
pub fn matcher_items(text: &str, claude: bool) -> Result<Vec<MatcherItem>, String> {
    let text = text.trim();
    if text.is_empty() || text == "*" || (claude && text == ".*") {
        return Ok(Vec::new());
    }
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let mut alternatives = Vec::new();
    for (at, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '|' if depth == 0 => {
                alternatives.push(&text[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    alternatives.push(&text[start..]);
    for alternative in alternatives {
        let mut alternative = alternative.trim().to_string();
        if alternative.is_empty() {
            return Err(format!(
                "`{}` has an empty alternative between `|`",
                crate::base::text::printable(text)
            ));
        }
        if claude {
            alternative = alternative.replace(".*", "*");
            if let Some(name) = antler_tool_name(&alternative) {
                alternative = name.to_string();
            }
        }
        let rule = |text: &str| {
            super::Rule::parse(text)
                .map(Box::new)
                .map_err(|e| e.to_string())
        };
        match alternative.strip_prefix("mcp__") {
            Some(rest) => {
                let (server, tool) = rest.split_once("__").unwrap_or((rest, "*"));
                let tool = if tool.is_empty() { "*" } else { tool };
                items.push(MatcherItem::Mcp {
                    server: rule(server)?,
                    tool: rule(tool)?,
                });
            }
            None => items.push(MatcherItem::Rule(rule(&alternative)?)),
        }
    }
    Ok(items)
}

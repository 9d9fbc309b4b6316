//! Claude Code's own hook settings (`hooks` in `.claude/settings.json`,
//! `.claude/settings.local.json` and `~/.claude/settings.json`), read when
//! `hooks.import_claude` is set. Its events antler does not have are skipped with a
//! warning; its matchers are read with Claude Code's tool names mapped to antler's.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{HookGroup, HooksConfig};

/// The project's Claude Code settings files that may hold hooks, by precedence.
pub(crate) const PROJECT_SETTINGS: &[&str] = crate::tools::sandbox::HOOK_SETTINGS;

/// The user's Claude Code settings file.
pub(crate) fn user_settings(home: Option<&Path>) -> Option<PathBuf> {
    home.map(|home| home.join(".claude/settings.json"))
}

/// The hooks of a settings file's text, and warnings about what was skipped. `Err`: the
/// file is not JSON, or its `hooks` do not have Claude Code's shape.
pub(crate) fn parse(text: &str) -> Result<(HooksConfig, Vec<String>), String> {
    let root: Value =
        serde_json::from_str(text).map_err(|err| format!("it is not valid JSON ({err})"))?;
    let mut config = HooksConfig::default();
    let mut warnings = Vec::new();
    let Some(hooks) = root.get("hooks") else {
        return Ok((config, warnings));
    };
    let Some(events) = hooks.as_object() else {
        return Err(String::from("`hooks` must be an object of events"));
    };
    for (name, groups) in events {
        let groups: Vec<HookGroup> = serde_json::from_value(groups.clone())
            .map_err(|err| format!("`hooks.{name}`: {err}"))?;
        let slot = match name.as_str() {
            "SessionStart" => &mut config.session_start,
            "SessionEnd" => &mut config.session_end,
            "UserPromptSubmit" => &mut config.user_prompt_submit,
            "PreToolUse" => &mut config.pre_tool_use,
            "PostToolUse" => &mut config.post_tool_use,
            "Stop" => &mut config.stop,
            "SubagentStop" => &mut config.subagent_stop,
            "PreCompact" => &mut config.pre_compact,
            "Notification" => &mut config.notification,
            other => {
                warnings.push(format!(
                    "the hook event `{}` is not one antler has; its hooks are skipped",
                    crate::base::text::printable(other)
                ));
                continue;
            }
        };
        // Claude Code has hook types antler does not run (`prompt`, `http`, ...).
        for group in groups {
            let (ours, theirs): (Vec<_>, Vec<_>) =
                group.hooks.into_iter().partition(|h| h.kind == "command");
            for hook in theirs {
                warnings.push(format!(
                    "a `{}` hook of `{name}` is skipped: antler runs only `command` hooks",
                    crate::base::text::printable(&hook.kind)
                ));
            }
            if !ours.is_empty() {
                slot.push(HookGroup {
                    matcher: group.matcher,
                    hooks: ours,
                });
            }
        }
    }
    Ok((config, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_codes_settings_shape_is_read_and_foreign_events_are_skipped() {
        let text = r#"{
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {
                "PreToolUse": [{"matcher": "Bash|Edit", "hooks": [
                    {"type": "command", "command": "check.sh", "timeout": 5},
                    {"type": "prompt", "prompt": "is it safe?"}
                ]}],
                "PermissionRequest": [{"hooks": [{"type": "command", "command": "x"}]}]
            }
        }"#;
        let (config, warnings) = parse(text).unwrap();
        assert_eq!(config.pre_tool_use.len(), 1);
        assert_eq!(config.pre_tool_use[0].hooks.len(), 1);
        assert_eq!(config.pre_tool_use[0].hooks[0].timeout, Some(5));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(parse("{").is_err());
        assert!(parse(r#"{"hooks": {"Stop": "x"}}"#).is_err());
        assert!(parse(r#"{"model": "x"}"#).unwrap().0.is_empty());
    }
}

//! What a server entry says about its tools besides how to reach it: when the server
//! starts, whether its tools are deferred, and which of them exist for antler at all.

use std::time::Duration;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Serialize;

/// When a server's process (or connection) is started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StartMode {
    /// On the first call of one of its tools, when a fresh manifest lists them meanwhile
    /// (the default, whether they are deferred or bound).
    #[default]
    Lazy,
    /// At start-up, as before manifests existed.
    Eager,
}

impl StartMode {
    pub(crate) fn parse(value: &str) -> Option<Self> {
        match value {
            "lazy" => Some(Self::Lazy),
            "eager" => Some(Self::Eager),
            _ => None,
        }
    }
}

/// Whether a server's tools are deferred behind `tool_search`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeferMode {
    /// As `tool_search.enabled` decides for all MCP tools.
    #[default]
    Auto,
    /// Deferred whatever `tool_search.enabled` says.
    Always,
    /// Bound on every call: for a small server the model uses every turn.
    Never,
}

impl DeferMode {
    pub(crate) fn parse(value: &str) -> Option<Self> {
        match value {
            "auto" => Some(Self::Auto),
            "always" => Some(Self::Always),
            "never" => Some(Self::Never),
            _ => None,
        }
    }
}

/// `enabled_tools` / `disabled_tools`: exact names or globs, ignoring case, on every name a
/// tool goes by: the server's own and the one antler shows (`srv_danger_wipe` for the
/// server's `danger.wipe`), since the user copies either. A tool filtered out does not
/// exist for antler: not bound, listed, searchable or callable.
#[derive(Debug, Clone, Default)]
pub struct ToolFilter {
    enabled: Option<(Vec<String>, GlobSet)>,
    disabled: Option<(Vec<String>, GlobSet)>,
}

impl PartialEq for ToolFilter {
    fn eq(&self, other: &Self) -> bool {
        let patterns =
            |side: &Option<(Vec<String>, GlobSet)>| side.as_ref().map(|(p, _)| p.clone());
        patterns(&self.enabled) == patterns(&other.enabled)
            && patterns(&self.disabled) == patterns(&other.disabled)
    }
}

impl ToolFilter {
    /// A filter from the two lists; `Err((field, reason))` names the list with a bad glob.
    pub(crate) fn new(
        enabled: Option<Vec<String>>,
        disabled: Option<Vec<String>>,
    ) -> Result<Self, (&'static str, String)> {
        Ok(Self {
            enabled: enabled
                .map(|p| compile(&p).map(|set| (p, set)))
                .transpose()
                .map_err(|reason| ("enabled_tools", reason))?,
            disabled: disabled
                .map(|p| compile(&p).map(|set| (p, set)))
                .transpose()
                .map_err(|reason| ("disabled_tools", reason))?,
        })
    }

    /// Whether the tool that goes by `names` is kept: one of them is listed in
    /// `enabled_tools` (when given) and none in `disabled_tools` (hiding what the user
    /// evidently meant is the safe side).
    pub fn allows(&self, names: &[&str]) -> bool {
        let any = |set: &GlobSet| names.iter().any(|name| set.is_match(name));
        let enabled = self.enabled.as_ref().is_none_or(|(_, set)| any(set));
        let disabled = self.disabled.as_ref().is_some_and(|(_, set)| any(set));
        enabled && !disabled
    }

    /// Whether `disabled_tools` names `name` (the name a tool was finally given, hash
    /// suffix and all, which only naming knows).
    pub fn disables(&self, name: &str) -> bool {
        self.disabled
            .as_ref()
            .is_some_and(|(_, set)| set.is_match(name))
    }

    /// Whether the filter keeps every tool.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.enabled.is_none() && self.disabled.is_none()
    }

    /// The patterns that match none of `names`, with their list: most likely a typo, or a
    /// tool the server renamed (worth a warning: a `disabled_tools` entry that matches
    /// nothing hides nothing).
    pub fn unmatched<'a>(&'a self, names: &[String]) -> Vec<(&'static str, &'a str)> {
        let mut unmatched = Vec::new();
        for (list, side) in [
            ("enabled_tools", &self.enabled),
            ("disabled_tools", &self.disabled),
        ] {
            let Some((patterns, set)) = side else {
                continue;
            };
            let mut hit = vec![false; patterns.len()];
            for name in names {
                for index in set.matches(name) {
                    hit[index] = true;
                }
            }
            unmatched.extend(
                patterns
                    .iter()
                    .zip(hit)
                    .filter(|(_, hit)| !hit)
                    .map(|(pattern, _)| (list, pattern.as_str())),
            );
        }
        unmatched
    }
}

fn compile(patterns: &[String]) -> Result<GlobSet, String> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        // Case does not tell tools apart: `delete_*` must also hide `Delete_Repo`.
        let glob = GlobBuilder::new(pattern)
            .case_insensitive(true)
            .build()
            .map_err(|e| format!("{pattern:?} is not a valid glob: {e}"))?;
        set.add(glob);
    }
    set.build().map_err(|e| e.to_string())
}

/// Keys other clients use for a tool filter (or near misses of ours). An entry with one
/// is skipped rather than loaded with every tool exposed that it meant to hide.
pub(crate) fn foreign_filter_key(key: &str) -> bool {
    let folded: String = key
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let ours = key == "enabled_tools" || key == "disabled_tools";
    !ours
        && matches!(
            folded.as_str(),
            "enabledtools"
                | "disabledtools"
                | "includetools"
                | "excludetools"
                | "allowedtools"
                | "disallowedtools"
                | "blockedtools"
                | "deniedtools"
        )
}

/// The per-server settings of this module, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerPolicy {
    /// `start`: on first use (lazy) or at start-up (eager).
    pub start: StartMode,
    /// `defer`: whether its tools wait for `tool_search`.
    pub defer: DeferMode,
    /// `enabled_tools` / `disabled_tools`.
    pub tools: ToolFilter,
    /// `manifest_max_age_secs`; `None` takes the global setting.
    pub manifest_max_age: Option<Duration>,
}

impl Default for ServerPolicy {
    fn default() -> Self {
        Self {
            start: StartMode::Lazy,
            defer: DeferMode::Auto,
            tools: ToolFilter::default(),
            manifest_max_age: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(enabled: Option<&[&str]>, disabled: Option<&[&str]>) -> ToolFilter {
        let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        ToolFilter::new(enabled.map(list), disabled.map(list)).unwrap()
    }

    #[test]
    fn enabled_then_disabled_by_name_or_glob() {
        let all = filter(None, None);
        assert!(all.is_empty() && all.allows(&["anything"]));
        let f = filter(Some(&["get_*", "echo"]), Some(&["get_secret*"]));
        assert!(f.allows(&["echo"]) && f.allows(&["get_time"]));
        assert!(!f.allows(&["get_secret_key"]), "disabled wins");
        assert!(!f.allows(&["delete_all"]), "not enabled");
        assert!(!f.allows(&["echo2"]), "exact names are exact");
        assert!(
            !f.allows(&["Get_Secret_Key"]),
            "case does not tell tools apart"
        );
        assert!(f.allows(&["ECHO"]));
        let none = filter(Some(&[]), None);
        assert!(
            !none.allows(&["echo"]),
            "an empty enabled list keeps nothing"
        );
    }

    #[test]
    fn any_name_a_tool_goes_by_counts() {
        let f = filter(None, Some(&["danger_*"]));
        assert!(!f.allows(&["danger.wipe", "danger_wipe", "srv_danger_wipe"]));
        assert!(f.allows(&["safe.read", "safe_read", "srv_safe_read"]));
        let shown = filter(Some(&["srv_get_*"]), Some(&["srv_get_secret"]));
        assert!(shown.allows(&["get.time", "get_time", "srv_get_time"]));
        assert!(!shown.allows(&["get secret", "get_secret", "srv_get_secret"]));
    }

    #[test]
    fn other_clients_filter_keys_are_recognised() {
        for key in [
            "disabledTools",
            "excludeTools",
            "includeTools",
            "disabled-tools",
            "allowed_tools",
        ] {
            assert!(foreign_filter_key(key), "{key}");
        }
        for key in [
            "disabled_tools",
            "enabled_tools",
            "autoApprove",
            "timeout",
            "tools",
        ] {
            assert!(!foreign_filter_key(key), "{key}");
        }
    }

    #[test]
    fn patterns_that_match_no_tool_are_found() {
        let f = filter(Some(&["get_*", "typo"]), Some(&["get_secret", "gone_*"]));
        assert_eq!(
            f.unmatched(&["get_time".into(), "get_secret".into()]),
            [("enabled_tools", "typo"), ("disabled_tools", "gone_*")]
        );
        assert!(filter(None, None).unmatched(&[]).is_empty());
    }

    #[test]
    fn a_bad_glob_names_its_list() {
        let err = ToolFilter::new(None, Some(vec!["a[".into()])).unwrap_err();
        assert_eq!(err.0, "disabled_tools");
        assert!(err.1.contains("\"a[\""), "{}", err.1);
    }
}

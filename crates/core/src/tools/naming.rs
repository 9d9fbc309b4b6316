//! Tool names as the model sees them (an MCP server's tools, a catalog file's):
//! `{server}_{tool}`, restricted to `[A-Za-z0-9_-]`, at most 64 characters, unique, never
//! empty.
//!
//! OpenAI-compatible APIs reject other characters and longer names, and a restricted
//! alphabet means a name can never carry markup (`<`, `>`, `&`, quotes) into a prompt.

use std::collections::HashSet;

use sha2::{Digest, Sha256};

/// The longest name OpenAI-compatible APIs accept.
pub(crate) const MAX_TOOL_NAME_LEN: usize = 64;
/// Hex characters of the disambiguating hash suffix.
const HASH_LEN: usize = 8;

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub(crate) fn sanitize(raw: &str) -> String {
    raw.chars().map(safe_char).collect()
}

/// `c` if it may be in a tool name, else `_` (what [`sanitize`] does to each character).
pub(crate) fn safe_char(c: char) -> char {
    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
        c
    } else {
        '_'
    }
}

/// The full name before length limits and collisions: `{server}_{tool}` or just `{tool}`,
/// sanitised; `tool` if that would be empty.
pub(crate) fn base_name(server: &str, tool: &str, prefix: bool) -> String {
    let raw = if prefix {
        format!("{server}_{tool}")
    } else {
        tool.to_string()
    };
    let name = sanitize(&raw);
    if name.is_empty() {
        String::from("tool")
    } else {
        name
    }
}

/// Hands out unique names for the MCP tools of one toolset. Feed it servers in config order
/// and tools in listing order so the names are the same on every run.
#[derive(Debug)]
pub(crate) struct ToolNamer {
    used: HashSet<String>,
}

impl Default for ToolNamer {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolNamer {
    /// A namer with only antler's reserved names ([`crate::tools::RESERVED_NAMES`]) taken.
    pub(crate) fn new() -> Self {
        Self {
            used: crate::tools::RESERVED_NAMES
                .iter()
                .map(|n| n.to_string())
                .collect(),
        }
    }

    /// The name for `tool` of `server`. Too long or already taken: the name is cut and gets
    /// a short hash of the server and tool names, so it stays stable and readable.
    pub(crate) fn name(&mut self, server: &str, tool: &str, prefix: bool) -> String {
        let base = base_name(server, tool, prefix);
        if base.len() <= MAX_TOOL_NAME_LEN && self.used.insert(base.clone()) {
            return base;
        }
        let keep = MAX_TOOL_NAME_LEN - HASH_LEN - 1;
        let head: String = base.chars().take(keep).collect();
        let mut attempt: u64 = 0;
        loop {
            let mut hasher = Sha256::new();
            hasher.update(server.as_bytes());
            hasher.update([0]);
            hasher.update(tool.as_bytes());
            if attempt > 0 {
                hasher.update(attempt.to_le_bytes());
            }
            let digest = crate::base::describe::hex(&hasher.finalize());
            let candidate = format!("{head}_{}", &digest[..HASH_LEN]);
            if self.used.insert(candidate.clone()) {
                return candidate;
            }
            attempt += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_and_sanitise() {
        let mut n = ToolNamer::new();
        assert_eq!(
            n.name("Ant Design Components", "list-components", true),
            "Ant_Design_Components_list-components"
        );
        assert_eq!(n.name("gh", "create_issue", false), "create_issue");
        assert_eq!(n.name("x", "<b>&\"'", true), "x__b____");
        assert_eq!(n.name("s", "", false), "tool");
        assert_eq!(n.name("s", "工具", false), "__");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let tool = "a".repeat(100);
        let first = ToolNamer::new().name("server", &tool, true);
        assert_eq!(first.len(), MAX_TOOL_NAME_LEN);
        assert!(first.starts_with("server_aaaa"));
        assert_eq!(
            first,
            ToolNamer::new().name("server", &tool, true),
            "deterministic"
        );
        assert_ne!(first, ToolNamer::new().name("server2", &tool, true));
    }

    #[test]
    fn reserved_names_are_never_handed_out() {
        let name = ToolNamer::new().name("srv", "tool_search", false);
        assert_ne!(name, "tool_search");
        assert!(name.starts_with("tool_search_"), "{name}");
    }

    #[test]
    fn collisions_get_distinct_names() {
        let mut n = ToolNamer::new();
        let a = n.name("a", "b_c", true);
        let b = n.name("a_b", "c", true);
        let c = n.name("a_b", "c", true);
        assert_eq!(a, "a_b_c");
        assert!(
            b.starts_with("a_b_c_") && b.len() == "a_b_c_".len() + 8,
            "{b}"
        );
        assert_ne!(b, c);
        for name in [&a, &b, &c] {
            assert!(
                name.chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
            );
        }
    }
}

//! Editing an extensions file (`antler mcp add` / `remove`): one entry of `mcpServers` is
//! added, replaced or removed, everything else is kept (other servers, their key order,
//! other top-level keys). The result is checked by parsing it as antler will, so a file
//! antler cannot use is never written.

use std::path::Path;

use serde_json::{Map, Value};

use super::{EnvLookup, parse_extensions_config};
use crate::base::describe::json_kind;

/// Why the file cannot be edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The file is not JSON, or not the shape of an extensions file.
    #[error("{path}: {message}; it was not changed")]
    Unreadable {
        /// The extensions file being edited, as displayed.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A server of that name is there already.
    #[error("{path} already has a server `{name}`; pass --force to replace it")]
    Exists {
        /// The extensions file being edited, as displayed.
        path: String,
        /// Its key in `mcpServers`, as the command gave it.
        name: String,
    },
    /// No server of that name is there.
    #[error("{path} has no server `{name}` (it has: {known})")]
    Missing {
        /// The extensions file being edited, as displayed.
        path: String,
        /// Its key in `mcpServers`, as the command gave it.
        name: String,
        /// The servers it has.
        known: String,
    },
    /// The new entry would not be usable.
    #[error("the server `{name}` would not be usable: {reason}; {path} was not changed")]
    Unusable {
        /// The extensions file being edited, as displayed.
        path: String,
        /// Its key in `mcpServers`, as the command gave it.
        name: String,
        /// What antler's own parse of the edited file found.
        reason: String,
    },
    /// The name cannot be a server's.
    #[error(
        "`{0}` cannot name a server: use 1 to 64 letters, digits, `_` or `-` (it prefixes the server's tool names)"
    )]
    BadName(String),
}

/// `text` (the file's content; `None` when it does not exist yet) with `entry` as the
/// server `name`; `replace` allows replacing one.
pub fn add_server(
    text: Option<&str>,
    path: &Path,
    name: &str,
    entry: Value,
    replace: bool,
    env: EnvLookup<'_>,
) -> Result<String, EditError> {
    check_name(name)?;
    let shown = path.display().to_string();
    let mut root = root_of(text, &shown)?;
    let servers = servers_of(&mut root, &shown)?;
    if servers.contains_key(name) && !replace {
        return Err(EditError::Exists {
            path: shown,
            name: name.to_string(),
        });
    }
    servers.insert(name.to_string(), entry);
    let new = render(&root);
    let parsed = parse_extensions_config(&new, path, env).map_err(|e| EditError::Unusable {
        path: shown.clone(),
        name: name.to_string(),
        reason: e.to_string(),
    })?;
    if let Some(skipped) = parsed.value.skipped.iter().find(|s| s.name == name) {
        return Err(EditError::Unusable {
            path: shown,
            name: name.to_string(),
            reason: skipped.reason.clone(),
        });
    }
    Ok(new)
}

/// `text` without the server `name`.
pub fn remove_server(text: Option<&str>, path: &Path, name: &str) -> Result<String, EditError> {
    let shown = path.display().to_string();
    let mut root = root_of(text, &shown)?;
    let servers = servers_of(&mut root, &shown)?;
    if servers.shift_remove(name).is_none() {
        let known: Vec<&str> = servers.keys().map(String::as_str).collect();
        return Err(EditError::Missing {
            path: shown,
            name: crate::base::text::quoted(name),
            known: if known.is_empty() {
                String::from("none")
            } else {
                crate::base::text::quoted_list(known)
            },
        });
    }
    Ok(render(&root))
}

fn check_name(name: &str) -> Result<(), EditError> {
    let fine = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if fine {
        Ok(())
    } else {
        Err(EditError::BadName(crate::base::text::quoted(name)))
    }
}

fn root_of(text: Option<&str>, path: &str) -> Result<Map<String, Value>, EditError> {
    let unreadable = |message: String| EditError::Unreadable {
        path: path.to_string(),
        message,
    };
    match text {
        None => Ok(Map::new()),
        Some(text) if text.trim().is_empty() => Ok(Map::new()),
        Some(text) => match serde_json::from_str(text) {
            Ok(Value::Object(root)) => Ok(root),
            Ok(other) => Err(unreadable(format!(
                "expected an object with a `mcpServers` key, found {}",
                json_kind(&other)
            ))),
            Err(e) => Err(unreadable(format!("not JSON: {e}"))),
        },
    }
}

fn servers_of<'a>(
    root: &'a mut Map<String, Value>,
    path: &str,
) -> Result<&'a mut Map<String, Value>, EditError> {
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    match servers {
        Value::Object(servers) => Ok(servers),
        other => Err(EditError::Unreadable {
            path: path.to_string(),
            message: format!("`mcpServers` is {}, not an object", json_kind(other)),
        }),
    }
}

fn render(root: &Map<String, Value>) -> String {
    let mut text = serde_json::to_string_pretty(root).unwrap_or_else(|_| String::from("{}"));
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const FILE: &str = r#"{
  "skills": {"keep": true},
  "mcpServers": {
    "zeta": {"command": "z"},
    "alpha": {"command": "a", "args": ["--x"]}
  }
}"#;

    fn path() -> &'static Path {
        Path::new("/u/extensions_config.json")
    }

    #[test]
    fn adding_keeps_everything_else_in_its_order() {
        let new = add_server(
            Some(FILE),
            path(),
            "time",
            json!({"command": "uvx", "args": ["mcp-server-time"]}),
            false,
            &|_| None,
        )
        .unwrap();
        let root: Value = serde_json::from_str(&new).unwrap();
        assert_eq!(root["skills"], json!({"keep": true}));
        let names: Vec<&String> = root["mcpServers"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["zeta", "alpha", "time"]);
        assert_eq!(root["mcpServers"]["alpha"]["args"], json!(["--x"]));
        let err = add_server(
            Some(&new),
            path(),
            "time",
            json!({"command": "x"}),
            false,
            &|_| None,
        )
        .unwrap_err();
        assert!(matches!(err, EditError::Exists { .. }), "{err}");
        let replaced = add_server(
            Some(&new),
            path(),
            "time",
            json!({"command": "x"}),
            true,
            &|_| None,
        )
        .unwrap();
        assert!(replaced.contains(r#""command": "x""#), "{replaced}");
        let created = add_server(
            None,
            path(),
            "fs",
            json!({"command": "npx"}),
            false,
            &|_| None,
        )
        .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&created).unwrap(),
            json!({"mcpServers": {"fs": {"command": "npx"}}})
        );
    }

    #[test]
    fn removing_keeps_the_rest_and_names_what_there_is() {
        let new = remove_server(Some(FILE), path(), "zeta").unwrap();
        let root: Value = serde_json::from_str(&new).unwrap();
        assert_eq!(
            root["mcpServers"],
            json!({"alpha": {"command": "a", "args": ["--x"]}})
        );
        let err = remove_server(Some(&new), path(), "zeta")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no server `zeta`") && err.contains("alpha"),
            "{err}"
        );
    }

    #[test]
    fn nothing_unusable_is_written() {
        for (text, name, entry, says) in [
            (Some("{nope"), "a", json!({"command": "x"}), "not JSON"),
            (Some("[1]"), "a", json!({"command": "x"}), "found an array"),
            (
                Some(r#"{"mcpServers": 3}"#),
                "a",
                json!({"command": "x"}),
                "not an object",
            ),
            (
                None,
                "../evil",
                json!({"command": "x"}),
                "cannot name a server",
            ),
            (None, "", json!({"command": "x"}), "cannot name a server"),
            (
                None,
                "web",
                json!({"type": "http", "url": "ftp://x"}),
                "would not be usable",
            ),
        ] {
            let err = add_server(text, path(), name, entry, false, &|_| None)
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{name}: {err}");
        }
    }
}

//! The catalog hash: which deferred tool set a promotion belongs to.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::tools::ToolInfo;

/// The function schema of a tool as it is sent to the model (OpenAI `tools[]` entry).
pub fn function_schema(info: &ToolInfo) -> Value {
    serde_json::json!({
        "type": "function",
        "function": {
            "name": info.name,
            "description": info.description,
            "parameters": info.parameters,
        }
    })
}

/// SHA-256 of a canonical JSON of every tool (sorted by name; each tool as its name plus
/// its full function schema; object keys sorted at every depth), first 16 hex characters.
/// The same tools in any order give the same hash; any change of membership, description
/// or schema gives another, so promotions made against an older catalog lapse.
pub fn catalog_hash<'a>(tools: impl IntoIterator<Item = &'a ToolInfo>) -> String {
    let mut entries: Vec<(&str, Value)> = tools
        .into_iter()
        .map(|info| (info.name.as_str(), canonical(&function_schema(info))))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut hasher = Sha256::new();
    hasher.update(b"[");
    for (i, (name, schema)) in entries.iter().enumerate() {
        if i > 0 {
            hasher.update(b",");
        }
        let entry = serde_json::json!({"name": name, "schema": schema});
        // Keys of `entry` are already in sorted order ("name" < "schema").
        hasher.update(entry.to_string().as_bytes());
    }
    hasher.update(b"]");
    crate::config::hex(&hasher.finalize())[..16].to_string()
}

/// The same value with the keys of every object sorted. serde_json keeps insertion order
/// (the `preserve_order` feature), so the order has to be made canonical explicitly.
fn canonical(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut sorted = Map::with_capacity(map.len());
            for key in keys {
                sorted.insert(key.clone(), canonical(&map[key.as_str()]));
            }
            Value::Object(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::ToolSource;

    fn tool(name: &str, description: &str, parameters: Value) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: description.into(),
            parameters,
            source: ToolSource::Mcp {
                server: "s".into(),
                original_name: name.into(),
            },
            metadata: Map::new(),
        }
    }

    #[test]
    fn stable_under_reordering_of_tools_and_keys() {
        let a = tool(
            "a",
            "first",
            json!({"type": "object", "properties": {"x": {"type": "string"}}}),
        );
        let b = tool(
            "b",
            "second",
            json!({"properties": {"y": {}}, "type": "object"}),
        );
        let b_reordered = tool(
            "b",
            "second",
            json!({"type": "object", "properties": {"y": {}}}),
        );
        let h1 = catalog_hash([&a, &b]);
        assert_eq!(h1.len(), 16);
        assert!(h1.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(h1, catalog_hash([&b_reordered, &a]));
    }

    #[test]
    fn changed_by_membership_description_and_schema() {
        let a = tool("a", "first", json!({"type": "object"}));
        let b = tool("b", "second", json!({"type": "object"}));
        let base = catalog_hash([&a, &b]);
        assert_ne!(base, catalog_hash([&a]));
        assert_ne!(base, catalog_hash([&a, &b, &tool("c", "", json!({}))]));
        assert_ne!(
            base,
            catalog_hash([&a, &tool("b", "changed", json!({"type": "object"}))])
        );
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        assert_ne!(base, catalog_hash([&a, &tool("b", "second", schema)]));
    }
}

//! The catalog hash: which deferred tool set a promotion belongs to.

use serde_json::Value;
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
///
/// The canonical text is written straight into one buffer (no intermediate JSON values),
/// so hashing 10,000 tools stays well under 50 ms.
pub fn catalog_hash<'a>(tools: impl IntoIterator<Item = &'a ToolInfo>) -> String {
    let mut tools: Vec<&ToolInfo> = tools.into_iter().collect();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    // Each tool is written into a small reused buffer and fed to the hasher, so the data
    // stays in cache instead of building one large text.
    let mut hasher = Sha256::new();
    let mut text = Vec::with_capacity(4096);
    hasher.update(b"[");
    for (i, info) in tools.iter().enumerate() {
        text.clear();
        if i > 0 {
            text.push(b',');
        }
        // {"name":N,"schema":{"function":{"description":D,"name":N,"parameters":P},"type":"function"}}
        text.extend_from_slice(b"{\"name\":");
        write_string(&mut text, &info.name);
        text.extend_from_slice(b",\"schema\":{\"function\":{\"description\":");
        write_string(&mut text, &info.description);
        text.extend_from_slice(b",\"name\":");
        write_string(&mut text, &info.name);
        text.extend_from_slice(b",\"parameters\":");
        write_canonical(&mut text, &info.parameters);
        text.extend_from_slice(b"},\"type\":\"function\"}}");
        hasher.update(&text);
    }
    hasher.update(b"]");
    crate::base::describe::hex(&hasher.finalize())[..16].to_string()
}

/// Appends `value` as JSON with the keys of every object sorted (serde_json keeps
/// insertion order with `preserve_order`, so the order has to be made canonical here).
fn write_canonical(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Object(map) => {
            out.push(b'{');
            let mut write_entry = |i: usize, key: &str, value: &Value| {
                if i > 0 {
                    out.push(b',');
                }
                write_string(out, key);
                out.push(b':');
                write_canonical(out, value);
            };
            if map.keys().is_sorted() {
                for (i, (key, value)) in map.iter().enumerate() {
                    write_entry(i, key, value);
                }
            } else {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                for (i, (key, value)) in entries.into_iter().enumerate() {
                    write_entry(i, key, value);
                }
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(out, item);
            }
            out.push(b']');
        }
        // Writing scalars into a Vec cannot fail.
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

/// Appends `text` as a JSON string literal.
fn write_string(out: &mut Vec<u8>, text: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use serde_json::Map;

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
            parallel: false,
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
    fn is_the_sha256_of_the_documented_canonical_json() {
        let t = tool(
            "a\"b",
            "d",
            json!({"type": "object", "properties": {"z": 1, "a": [true, null]}}),
        );
        let canonical = r#"[{"name":"a\"b","schema":{"function":{"description":"d","name":"a\"b","parameters":{"properties":{"a":[true,null],"z":1},"type":"object"}},"type":"function"}}]"#;
        let expected = crate::base::describe::hex(&Sha256::digest(canonical.as_bytes()));
        assert_eq!(catalog_hash([&t]), expected[..16]);
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

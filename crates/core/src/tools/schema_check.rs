//! Whether arguments fit a tool's JSON Schema, as far as the common keywords go: the type
//! of the whole and of each declared property, `required`, `enum`, and
//! `additionalProperties: false`. Used where arguments come from somewhere other than the
//! model that read the schema (a hook's `updatedInput`), so that a rewrite cannot hand a
//! tool what it never declared.

use serde_json::Value;

/// The first way `value` breaks `schema`, as a sentence.
pub(crate) fn problem(schema: &Value, value: &Value) -> Option<String> {
    at(schema, value, "the arguments", 0)
}

fn at(schema: &Value, value: &Value, place: &str, depth: usize) -> Option<String> {
    // Deeper than any real schema: the rest is the tool's own business.
    if depth > 16 {
        return None;
    }
    if let Some(expected) = schema.get("type")
        && !type_fits(expected, value)
    {
        return Some(format!("{place} must be {}", describe(expected)));
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        return Some(format!("{place} is not one of the allowed values"));
    }
    match value {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            if let Some(Value::Array(required)) = schema.get("required") {
                for key in required.iter().filter_map(Value::as_str) {
                    if !map.contains_key(key) {
                        return Some(format!("`{key}` is required"));
                    }
                }
            }
            for (key, item) in map {
                match properties.and_then(|p| p.get(key)) {
                    Some(property) => {
                        if let Some(problem) = at(property, item, &format!("`{key}`"), depth + 1) {
                            return Some(problem);
                        }
                    }
                    None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        return Some(format!("`{key}` is not a parameter of this tool"));
                    }
                    None => {}
                }
            }
            None
        }
        Value::Array(items) => {
            let item_schema = schema.get("items")?;
            items
                .iter()
                .find_map(|item| at(item_schema, item, &format!("an item of {place}"), depth + 1))
        }
        _ => None,
    }
}

fn type_fits(expected: &Value, value: &Value) -> bool {
    match expected {
        Value::String(name) => one_fits(name, value),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .any(|name| one_fits(name, value)),
        _ => true,
    }
}

fn one_fits(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.as_i64().is_some() || value.as_u64().is_some(),
        _ => true,
    }
}

fn describe(expected: &Value) -> String {
    match expected {
        Value::String(name) => format!("of type {name}"),
        Value::Array(names) => {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            format!("of type {}", names.join(" or "))
        }
        _ => String::from("of the declared type"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn types_required_enums_and_closed_objects_are_checked() {
        let schema = json!({
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "timeout": {"type": "integer"},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["command"],
            "additionalProperties": false
        });
        assert_eq!(
            problem(&schema, &json!({"command": "ls", "timeout": 3})),
            None
        );
        assert_eq!(
            problem(&schema, &json!({})).unwrap(),
            "`command` is required"
        );
        assert!(
            problem(&schema, &json!({"command": 1}))
                .unwrap()
                .contains("type string")
        );
        assert!(problem(&schema, &json!({"command": "x", "timeout": 1.5})).is_some());
        assert!(problem(&schema, &json!({"command": "x", "mode": "c"})).is_some());
        assert!(problem(&schema, &json!({"command": "x", "tags": [1]})).is_some());
        assert!(
            problem(&schema, &json!({"command": "x", "extra": 1}))
                .unwrap()
                .contains("`extra`")
        );
        assert!(problem(&json!({"type": "object"}), &json!([1])).is_some());
    }
}

//! Values as messages name them: a digest in hex, the kind of a JSON value, an error with
//! its causes. Used by every floor above, so they live here rather than in the first
//! module that needed them.

use serde_json::Value;

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// What a JSON value is, with its article, for "expected an object, got a string".
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An error and its sources, joined, each cause once: reqwest's own text alone ("error
/// sending request") hides the cause ("connection refused").
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lower_case_and_two_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xab, 0xff]), "000fabff");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn json_kind_names_every_kind() {
        assert_eq!(json_kind(&serde_json::json!({})), "an object");
        assert_eq!(json_kind(&serde_json::json!([1])), "an array");
        assert_eq!(json_kind(&serde_json::json!(null)), "null");
    }

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);
    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn error_chain_joins_causes_and_skips_repeats() {
        let inner = Layer("connection refused", None);
        let middle = Layer(
            "error sending request: connection refused",
            Some(Box::new(inner)),
        );
        let outer = Layer("model call failed", Some(Box::new(middle)));
        assert_eq!(
            error_chain(&outer),
            "model call failed: error sending request: connection refused"
        );
    }
}

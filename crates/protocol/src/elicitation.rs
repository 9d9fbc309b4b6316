//! An MCP server asking the user for input (elicitation): the request as a front-end
//! shows it, and the user's answer. Built by `mcp::elicitation` from the server's schema,
//! which it has already checked: a front-end only draws the fields and validates values.

use serde::Serialize;
use serde_json::{Map, Value};

/// A server's request for input, waiting for [`super::Command::Elicit`] with its id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElicitationRequest {
    /// Tells the requests of a session apart.
    pub id: u64,
    /// The server's key in `mcpServers`.
    pub server: String,
    /// What the server says it wants (escaped, bounded).
    pub message: String,
    /// What it asks for.
    pub form: ElicitationForm,
}

/// What a server asks for.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum ElicitationForm {
    /// Values for these fields.
    Form {
        /// The fields, in the server's order.
        fields: Vec<FormField>,
    },
    /// That the user opens this `http(s)` URL (to sign in, pay, ...) and says when done.
    Url {
        /// The URL (escaped).
        url: String,
    },
}

/// One field of a form: a property of the server's schema.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FormField {
    /// The key of its value in the answer.
    pub name: String,
    /// Its label (the name when the server gave none).
    pub title: String,
    /// The schema's `description` (one line; empty when the server gave none).
    pub description: String,
    /// Whether it must have a value.
    pub required: bool,
    /// Its type, and the bounds its value must keep.
    pub kind: FieldKind,
    /// The value it starts with, as typed.
    pub default: Option<String>,
}

/// The kind of value a field takes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum FieldKind {
    /// Text, of these lengths in characters.
    Text {
        /// At least.
        min_chars: Option<u32>,
        /// At most.
        max_chars: Option<u32>,
        /// `email`, `uri`, `date` or `date-time`, checked loosely.
        format: Option<String>,
    },
    /// A whole number in a range.
    Integer {
        /// At least.
        min: Option<i64>,
        /// At most.
        max: Option<i64>,
    },
    /// A number in a range.
    Number {
        /// At least.
        min: Option<f64>,
        /// At most.
        max: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One of these values.
    Choice {
        /// The values sent.
        values: Vec<String>,
        /// What is shown for each.
        labels: Vec<String>,
    },
    /// Some of these values, typed separated by commas (values or labels).
    Choices {
        /// The values sent.
        values: Vec<String>,
        /// What is shown for each.
        labels: Vec<String>,
        /// At least this many.
        min_items: Option<u32>,
        /// At most this many.
        max_items: Option<u32>,
    },
}

/// The user's answer to an [`ElicitationRequest`], sent with [`super::Command::Elicit`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", content = "content", rename_all = "lowercase")]
pub enum ElicitationAnswer {
    /// These values (for a URL: the user opened it).
    Accept(Map<String, Value>),
    /// The user said no.
    Decline,
    /// The user dismissed it.
    Cancel,
}

/// What an answer did, without its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitationAction {
    /// Values given.
    Accept,
    /// Said no.
    Decline,
    /// Dismissed.
    Cancel,
}

impl ElicitationRequest {
    /// The answer of a form taken as the server filled it in (SEP-1034): every field that
    /// has a default gets it, the others are left out. `None` when that is no answer: a
    /// URL, a form without one default (a bare "agree?" is consent, not defaults), a
    /// required field without a default, or a default its own field refuses.
    pub fn defaults(&self) -> Option<ElicitationAnswer> {
        let ElicitationForm::Form { fields } = &self.form else {
            return None;
        };
        if !fields.iter().any(|f| f.default.is_some()) {
            return None;
        }
        let defaults: Vec<String> = fields
            .iter()
            .map(|f| f.default.clone().unwrap_or_default())
            .collect();
        form_values(fields, &defaults)
            .ok()
            .map(ElicitationAnswer::Accept)
    }
}

impl ElicitationAnswer {
    /// Its action without the values, as `elicitation_answered` reports it.
    pub fn action(&self) -> ElicitationAction {
        match self {
            Self::Accept(_) => ElicitationAction::Accept,
            Self::Decline => ElicitationAction::Decline,
            Self::Cancel => ElicitationAction::Cancel,
        }
    }
}

impl FormField {
    /// Checks `text` (as typed; empty is no value) and turns it into the value sent, or
    /// says what is wrong.
    pub fn value(&self, text: &str) -> Result<Option<Value>, String> {
        let text = text.trim();
        if text.is_empty() {
            return if self.required {
                Err(format!("{} is required", self.title))
            } else {
                Ok(None)
            };
        }
        self.kind
            .parse(text)
            .map(Some)
            .map_err(|expected| format!("{} must be {expected}", self.title))
    }
}

impl FieldKind {
    /// The value of non-empty `text`, or what was expected instead.
    fn parse(&self, text: &str) -> Result<Value, String> {
        match self {
            FieldKind::Text {
                min_chars,
                max_chars,
                format,
            } => text_value(text, *min_chars, *max_chars, format.as_deref()),
            FieldKind::Integer { min, max } => match text.parse::<i64>() {
                Ok(n) if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) => Err(range(
                    min.map(|m| m.to_string()),
                    max.map(|m| m.to_string()),
                )),
                Ok(n) => Ok(Value::from(n)),
                Err(_) => Err(String::from("a whole number")),
            },
            FieldKind::Number { min, max } => match text.parse::<f64>() {
                Ok(n) if !n.is_finite() => Err(String::from("a number")),
                Ok(n) if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) => Err(range(
                    min.map(|m| m.to_string()),
                    max.map(|m| m.to_string()),
                )),
                Ok(n) => serde_json::Number::from_f64(n)
                    .map(Value::Number)
                    .ok_or_else(|| String::from("a number")),
                Err(_) => Err(String::from("a number")),
            },
            FieldKind::Boolean => match text {
                "true" | "yes" => Ok(Value::Bool(true)),
                "false" | "no" => Ok(Value::Bool(false)),
                _ => Err(String::from("yes or no")),
            },
            FieldKind::Choice { values, labels } => {
                if values.iter().any(|v| v == text) {
                    Ok(Value::String(text.to_string()))
                } else {
                    Err(format!("one of {}", labels.join(", ")))
                }
            }
            FieldKind::Choices {
                values,
                labels,
                min_items,
                max_items,
            } => choices_value(text, values, labels, *min_items, *max_items),
        }
    }
}

fn text_value(
    text: &str,
    min_chars: Option<u32>,
    max_chars: Option<u32>,
    format: Option<&str>,
) -> Result<Value, String> {
    let n = text.chars().count();
    if let Some(m) = min_chars.filter(|&m| n < m as usize) {
        return Err(format!("at least {m} characters"));
    }
    if let Some(m) = max_chars.filter(|&m| n > m as usize) {
        return Err(format!("at most {m} characters"));
    }
    if let Some(expected) = format.and_then(|format| misformatted(format, text)) {
        return Err(expected.to_string());
    }
    Ok(Value::String(text.to_string()))
}

/// A comma-separated list, each item a value or (ignoring case) its label; repeats count once.
fn choices_value(
    text: &str,
    values: &[String],
    labels: &[String],
    min_items: Option<u32>,
    max_items: Option<u32>,
) -> Result<Value, String> {
    let mut chosen: Vec<Value> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let index = values
            .iter()
            .position(|v| v == item)
            .or_else(|| labels.iter().position(|l| l.eq_ignore_ascii_case(item)));
        let Some(value) = index.and_then(|i| values.get(i)) else {
            return Err(format!("some of {}", labels.join(", ")));
        };
        if !chosen.iter().any(|c| c == value.as_str()) {
            chosen.push(Value::String(value.clone()));
        }
    }
    let n = chosen.len();
    if min_items.is_some_and(|m| n < m as usize) || max_items.is_some_and(|m| n > m as usize) {
        return Err(format!(
            "{} of the choices",
            range(
                min_items.map(|m| m.to_string()),
                max_items.map(|m| m.to_string())
            )
        ));
    }
    Ok(Value::Array(chosen))
}

/// What `text` should look like when it is not of `format` (a loose check: the server
/// validates too).
fn misformatted(format: &str, text: &str) -> Option<&'static str> {
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    let date = |s: &str| {
        let parts: Vec<&str> = s.split('-').collect();
        parts.len() == 3 && parts.iter().all(|p| digits(p)) && parts[0].len() == 4
    };
    let ok = match format {
        "email" => text
            .split_once('@')
            .is_some_and(|(user, host)| !user.is_empty() && host.contains('.')),
        "uri" => text
            .split_once(':')
            .is_some_and(|(scheme, rest)| !scheme.is_empty() && !rest.is_empty()),
        "date" => date(text),
        "date-time" => text
            .split_once('T')
            .is_some_and(|(d, t)| date(d) && !t.is_empty()),
        _ => true,
    };
    (!ok).then_some(match format {
        "email" => "an email address",
        "uri" => "a URI (scheme:...)",
        "date" => "a date (YYYY-MM-DD)",
        _ => "a date and time (YYYY-MM-DDTHH:MM:SS)",
    })
}

fn range(min: Option<String>, max: Option<String>) -> String {
    match (min, max) {
        (Some(min), Some(max)) => format!("from {min} to {max}"),
        (Some(min), None) => format!("at least {min}"),
        (None, Some(max)) => format!("at most {max}"),
        (None, None) => String::from("a number"),
    }
}

/// Every field's value from its text, or the first field that is wrong and why.
pub fn form_values(
    fields: &[FormField],
    texts: &[String],
) -> Result<Map<String, Value>, (usize, String)> {
    let mut values = Map::new();
    for (index, field) in fields.iter().enumerate() {
        let text = texts.get(index).map_or("", String::as_str);
        if let Some(value) = field.value(text).map_err(|why| (index, why))? {
            values.insert(field.name.clone(), value);
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field(kind: FieldKind, required: bool) -> FormField {
        FormField {
            name: "f".into(),
            title: "F".into(),
            description: String::new(),
            required,
            kind,
            default: None,
        }
    }

    #[test]
    fn values_are_checked_before_they_are_sent() {
        let age = field(
            FieldKind::Integer {
                min: Some(0),
                max: Some(150),
            },
            true,
        );
        assert_eq!(age.value("42"), Ok(Some(json!(42))));
        assert_eq!(age.value("200"), Err("F must be from 0 to 150".into()));
        assert_eq!(age.value("4.5"), Err("F must be a whole number".into()));
        assert_eq!(age.value(" "), Err("F is required".into()));
        let name = field(
            FieldKind::Text {
                min_chars: Some(2),
                max_chars: Some(3),
                format: None,
            },
            false,
        );
        let email = field(
            FieldKind::Text {
                min_chars: None,
                max_chars: None,
                format: Some("email".into()),
            },
            false,
        );
        assert_eq!(email.value("a@b.c"), Ok(Some(json!("a@b.c"))));
        assert_eq!(
            email.value("ab.c"),
            Err("F must be an email address".into())
        );
        let fish = field(
            FieldKind::Choices {
                values: vec!["f1".into(), "f2".into(), "f3".into()],
                labels: vec!["Tuna".into(), "Salmon".into(), "Trout".into()],
                min_items: Some(1),
                max_items: Some(2),
            },
            false,
        );
        assert_eq!(fish.value("tuna, f3, Tuna"), Ok(Some(json!(["f1", "f3"]))));
        assert!(fish.value("f1,f2,f3").is_err() && fish.value("cod").is_err());
        assert_eq!(name.value(""), Ok(None));
        assert_eq!(
            name.value("a"),
            Err("F must be at least 2 characters".into())
        );
        assert_eq!(
            name.value("abcd"),
            Err("F must be at most 3 characters".into())
        );
        let number = field(
            FieldKind::Number {
                min: None,
                max: Some(1.5),
            },
            false,
        );
        assert_eq!(number.value("1.25"), Ok(Some(json!(1.25))));
        assert!(number.value("NaN").is_err() && number.value("inf").is_err());
        let yes = field(FieldKind::Boolean, false);
        assert_eq!(yes.value("yes"), Ok(Some(json!(true))));
        let choice = field(
            FieldKind::Choice {
                values: vec!["a".into(), "b".into()],
                labels: vec!["A".into(), "B".into()],
            },
            true,
        );
        assert_eq!(choice.value("c"), Err("F must be one of A, B".into()));
        let fields = [age, name];
        assert_eq!(
            form_values(&fields, &["7".into(), String::new()]),
            Ok(json!({"f": 7}).as_object().cloned().unwrap())
        );
        assert_eq!(
            form_values(&fields, &["x".into()]).unwrap_err().0,
            0,
            "the first wrong field"
        );
    }

    #[test]
    fn a_form_is_taken_with_its_defaults_only_when_every_required_field_has_one() {
        let with = |kind, required, default: Option<&str>, name: &str| FormField {
            name: name.into(),
            default: default.map(str::to_string),
            ..field(kind, required)
        };
        let text = || FieldKind::Text {
            min_chars: None,
            max_chars: None,
            format: None,
        };
        let request = |fields| ElicitationRequest {
            id: 1,
            server: "s".into(),
            message: "m".into(),
            form: ElicitationForm::Form { fields },
        };
        let full = request(vec![
            with(text(), true, Some("John Doe"), "name"),
            with(
                FieldKind::Integer {
                    min: None,
                    max: None,
                },
                true,
                Some("30"),
                "age",
            ),
            with(
                FieldKind::Number {
                    min: None,
                    max: None,
                },
                false,
                Some("95.5"),
                "score",
            ),
            with(FieldKind::Boolean, false, Some("true"), "verified"),
            with(
                FieldKind::Choice {
                    values: vec!["a".into(), "b".into()],
                    labels: vec!["A".into(), "B".into()],
                },
                false,
                Some("b"),
                "status",
            ),
            with(text(), false, None, "note"),
        ]);
        assert_eq!(
            full.defaults(),
            Some(ElicitationAnswer::Accept(
                json!({"name": "John Doe", "age": 30, "score": 95.5, "verified": true, "status": "b"})
                    .as_object()
                    .unwrap()
                    .clone()
            )),
            "typed values; a field without a default is left out"
        );
        let missing = request(vec![with(text(), true, None, "name")]);
        assert_eq!(missing.defaults(), None, "a required field has no default");
        assert_eq!(request(Vec::new()).defaults(), None, "a bare confirmation");
        let optional = request(vec![with(text(), false, None, "note")]);
        assert_eq!(optional.defaults(), None, "no default to take");
        let refused = request(vec![with(
            FieldKind::Integer {
                min: Some(0),
                max: Some(9),
            },
            false,
            Some("99"),
            "n",
        )]);
        assert_eq!(refused.defaults(), None, "a default out of its own range");
        let url = ElicitationRequest {
            form: ElicitationForm::Url {
                url: "https://x.example".into(),
            },
            ..request(Vec::new())
        };
        assert_eq!(url.defaults(), None, "a URL is never opened unasked");
    }
}

//! Elicitation: a server asking the user for input while one of its calls runs. The
//! connection's handler hands the request to the call in flight on that connection
//! ([`Route`]), whose tool turns it into a front-end's form (through [`Elicitations`], the
//! session's broker, in the chat) or declines it (`-p`, where nobody can answer), with an
//! event either way. What the server sends is checked and escaped here, before any
//! front-end sees it; a request outside any call is declined.
//!
//! Every connection advertises form and URL elicitation, whatever the front-end: servers
//! list other tools to clients that advertise it (server-everything does), and a tool
//! list that changed with the command would make manifests disagree with the live list.
//! Where nobody can answer, declining is the honest answer the protocol provides.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ElicitRequestParams, ElicitResult};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::protocol::{
    ElicitationAnswer, ElicitationForm, ElicitationRequest, FieldKind, FormField,
};

/// At most this many fields are shown; a larger form is declined.
const MAX_FIELDS: usize = 32;
/// Messages, titles and descriptions are cut to this many characters.
const MAX_TEXT: usize = 500;
/// A longer URL is declined.
const MAX_URL: usize = 2048;
/// At most this many choices per field.
const MAX_CHOICES: usize = 100;

/// A request handed from the connection's handler to the call in flight.
pub(crate) struct HandedRequest {
    /// What the server asks.
    pub params: ElicitRequestParams,
    /// Where the answer goes.
    pub reply: oneshot::Sender<ElicitResult>,
}

/// A call in flight that takes requests: its serial number and where they go.
type Taker = (u64, mpsc::UnboundedSender<HandedRequest>);

/// The calls in flight on one connection that can take a request, oldest first.
#[derive(Clone, Default)]
pub(crate) struct Route {
    calls: Arc<Mutex<Vec<Taker>>>,
}

impl Route {
    fn calls(&self) -> std::sync::MutexGuard<'_, Vec<Taker>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a call; its requests arrive on the guard's receiver until the guard is
    /// dropped (however the call ends: answered, timed out, or dropped with its run).
    pub(crate) fn join(&self) -> Joined {
        static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (sender, receiver) = mpsc::unbounded_channel();
        self.calls().push((serial, sender));
        Joined {
            route: self.clone(),
            serial,
            requests: receiver,
        }
    }

    /// Hands `params` to the oldest call in flight and waits for its answer; declined when
    /// no call is in flight (or it ended first).
    pub(crate) async fn ask(&self, params: ElicitRequestParams) -> ElicitResult {
        let (reply, answer) = oneshot::channel();
        let sent = {
            let mut calls = self.calls();
            calls.retain(|(_, call)| !call.is_closed());
            calls
                .first()
                .is_some_and(|(_, call)| call.send(HandedRequest { params, reply }).is_ok())
        };
        if !sent {
            tracing::info!("an MCP server asked for input outside any call; declined");
            return declined();
        }
        answer.await.unwrap_or_else(|_| declined())
    }
}

/// A call's place in its connection's [`Route`], given up when dropped.
pub(crate) struct Joined {
    route: Route,
    serial: u64,
    /// The server's requests for input during the call.
    pub requests: mpsc::UnboundedReceiver<HandedRequest>,
}

impl Drop for Joined {
    fn drop(&mut self) {
        let serial = self.serial;
        self.route.calls().retain(|(s, _)| *s != serial);
    }
}

fn declined() -> ElicitResult {
    ElicitResult::new(rmcp::model::ElicitationAction::Decline)
}

/// The session's requests waiting for a front-end's answer, by id. Only an interactive
/// session has one.
pub(crate) type Elicitations = crate::base::pending::Pending<ElicitationAnswer>;

/// Who answers a server's requests for input.
#[derive(Debug, Clone)]
pub enum Answerer {
    /// Nobody can: `-p`, by its `--elicitation` policy.
    Unattended(Unattended),
    /// A front-end, through the session's broker (the chat).
    Front(Elicitations),
}

impl Default for Answerer {
    fn default() -> Self {
        Self::Unattended(Unattended::Decline)
    }
}

/// What a run with nobody to ask does with a request for input (`--elicitation`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Unattended {
    /// Every request is declined: nobody agreed to anything.
    #[default]
    Decline,
    /// A form with defaults, every required field among them, is accepted with its
    /// defaults (SEP-1034, [`ElicitationRequest::defaults`]); anything else is declined.
    /// A URL is never opened.
    AcceptDefaults,
}

impl Unattended {
    /// The answer this policy gives `request`.
    pub fn answer(self, request: &ElicitationRequest) -> ElicitationAnswer {
        match self {
            Self::Decline => ElicitationAnswer::Decline,
            Self::AcceptDefaults => request.defaults().unwrap_or(ElicitationAnswer::Decline),
        }
    }
}

pub(crate) use crate::base::pending::next_id;

/// The answer as the server is sent it.
pub(crate) fn result_of(answer: ElicitationAnswer) -> ElicitResult {
    use rmcp::model::ElicitationAction as Action;
    match answer {
        ElicitationAnswer::Accept(values) => {
            ElicitResult::new(Action::Accept).with_content(Value::Object(values))
        }
        ElicitationAnswer::Decline => ElicitResult::new(Action::Decline),
        ElicitationAnswer::Cancel => ElicitResult::new(Action::Cancel),
    }
}

fn text(value: Option<&Value>) -> String {
    crate::base::text::short_line(value.and_then(Value::as_str).unwrap_or_default(), MAX_TEXT).0
}

/// The server's request as a front-end shows it, or why it cannot be shown (then it is
/// declined): a form of the field kinds the protocol allows, or an `http(s)` URL.
pub(crate) fn request_of(
    id: u64,
    server: &str,
    params: &ElicitRequestParams,
) -> Result<ElicitationRequest, String> {
    let (message, form) = match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => {
            let schema = serde_json::to_value(requested_schema).map_err(|e| e.to_string())?;
            (
                message,
                ElicitationForm::Form {
                    fields: fields(&schema)?,
                },
            )
        }
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            let parsed = url::Url::parse(url).map_err(|_| String::from("the URL is not valid"))?;
            if !matches!(parsed.scheme(), "http" | "https") || url.len() > MAX_URL {
                return Err(String::from(
                    "only http(s) URLs of up to 2048 bytes are opened",
                ));
            }
            (
                message,
                ElicitationForm::Url {
                    url: crate::base::text::printable(parsed.as_str()),
                },
            )
        }
        _ => return Err(String::from("an elicitation of an unknown mode")),
    };
    Ok(ElicitationRequest {
        id,
        server: server.to_string(),
        message: crate::base::text::short_line(message, MAX_TEXT).0,
        form,
    })
}

/// The fields of a requested schema, in the server's order.
fn fields(schema: &Value) -> Result<Vec<FormField>, String> {
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .ok_or("the form has no properties")?;
    if properties.len() > MAX_FIELDS {
        return Err(format!("the form has more than {MAX_FIELDS} fields"));
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let order: Vec<&str> = match schema.get("propertyOrder").and_then(Value::as_array) {
        Some(order) => order.iter().filter_map(Value::as_str).collect(),
        None => properties.keys().map(String::as_str).collect(),
    };
    let mut out = Vec::new();
    for name in order
        .into_iter()
        .chain(properties.keys().map(String::as_str))
    {
        if out.iter().any(|f: &FormField| f.name == name) {
            continue;
        }
        let Some(property) = properties.get(name).and_then(Value::as_object) else {
            continue;
        };
        out.push(field(name, property, required.contains(&name))?);
    }
    Ok(out)
}

fn field(name: &str, property: &Map<String, Value>, required: bool) -> Result<FormField, String> {
    let kind = field_kind(name, property)?;
    let title = text(property.get("title"));
    Ok(FormField {
        name: name.to_string(),
        title: if title.is_empty() {
            crate::base::text::short_line(name, 64).0
        } else {
            title
        },
        description: text(property.get("description")),
        required,
        kind,
        default: default_text(property),
    })
}

/// What the user is asked for, by the property's type; a type outside the elicitation
/// schema's flat subset is refused, with the field's name.
fn field_kind(name: &str, property: &Map<String, Value>) -> Result<FieldKind, String> {
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let integer = |key: &str| property.get(key).and_then(Value::as_i64);
    let count = |key: &str| {
        property
            .get(key)
            .and_then(Value::as_u64)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    };
    let kind = match (
        property.get("type").and_then(Value::as_str),
        choices(property),
    ) {
        (Some("string"), Some((values, labels))) => FieldKind::Choice { values, labels },
        (Some("string"), None) => FieldKind::Text {
            min_chars: count("minLength"),
            max_chars: count("maxLength"),
            format: property
                .get("format")
                .and_then(Value::as_str)
                .filter(|f| matches!(*f, "email" | "uri" | "date" | "date-time"))
                .map(str::to_string),
        },
        (Some("array"), _) => match property
            .get("items")
            .and_then(Value::as_object)
            .and_then(choices)
        {
            Some((values, labels)) => FieldKind::Choices {
                values,
                labels,
                min_items: count("minItems"),
                max_items: count("maxItems"),
            },
            None => {
                return Err(format!(
                    "the list field `{}` has no choices",
                    crate::base::text::short_line(name, 64).0
                ));
            }
        },
        (Some("integer"), _) => FieldKind::Integer {
            min: integer("minimum"),
            max: integer("maximum"),
        },
        (Some("number"), _) => FieldKind::Number {
            min: number("minimum"),
            max: number("maximum"),
        },
        (Some("boolean"), _) => FieldKind::Boolean,
        (other, _) => {
            return Err(format!(
                "the field `{}` is of a type antler cannot ask for ({})",
                crate::base::text::short_line(name, 64).0,
                other.unwrap_or("none")
            ));
        }
    };
    Ok(kind)
}

/// A default as the user would type it (a list's items separated by commas), cut short.
fn default_text(property: &Map<String, Value>) -> Option<String> {
    property.get("default").and_then(|d| match d {
        Value::String(s) => Some(crate::base::text::short_line(s, MAX_TEXT).0),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .map(|s| crate::base::text::short_line(s, 120).0)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        _ => None,
    })
}

/// An enum field's values and labels (`enum` with `enumNames`, or `oneOf` / `anyOf` of
/// `const`/`title`).
fn choices(property: &Map<String, Value>) -> Option<(Vec<String>, Vec<String>)> {
    let strings = |v: &Value| -> Option<Vec<String>> {
        v.as_array().map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
    };
    let (values, labels) = if let Some(values) = property.get("enum").and_then(strings) {
        let labels = property
            .get("enumNames")
            .and_then(strings)
            .filter(|l| l.len() == values.len())
            .unwrap_or_else(|| values.clone());
        (values, labels)
    } else {
        let options = property
            .get("oneOf")
            .or_else(|| property.get("anyOf"))
            .and_then(Value::as_array)?;
        let pairs: Vec<(String, String)> = options
            .iter()
            .filter_map(|o| {
                let value = o.get("const")?.as_str()?.to_string();
                let label = o
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or(&value)
                    .to_string();
                Some((value, label))
            })
            .collect();
        pairs.into_iter().unzip()
    };
    let escape = |l: Vec<String>| {
        l.iter()
            .map(|t| crate::base::text::short_line(t, 120).0)
            .collect()
    };
    let values: Vec<String> = values.into_iter().take(MAX_CHOICES).collect();
    let labels: Vec<String> = escape(labels.into_iter().take(MAX_CHOICES).collect());
    (!values.is_empty()).then_some((values, labels))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form(schema: Value) -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form",
            "message": "Who are you?\u{1b}[2J",
            "requestedSchema": schema,
        }))
        .unwrap()
    }

    #[test]
    fn a_form_becomes_checked_escaped_fields() {
        let params = form(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name\u{7}", "minLength": 1},
                "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 42},
                "colour": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
                "ok": {"type": "boolean"},
                "fish": {"type": "array", "items": {"anyOf": [
                    {"const": "f1", "title": "Tuna"}, {"const": "f2", "title": "Salmon"}
                ]}, "maxItems": 2, "default": ["f1"]}
            },
            "required": ["name"]
        }));
        let request = request_of(3, "fx", &params).unwrap();
        assert!(!request.message.contains('\u{1b}'));
        let ElicitationForm::Form { fields } = request.form else {
            panic!("a form");
        };
        let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names.len(), 5);
        let fish = fields.iter().find(|f| f.name == "fish").unwrap();
        assert_eq!(fish.default.as_deref(), Some("f1"));
        assert!(
            matches!(&fish.kind, FieldKind::Choices { labels, max_items: Some(2), .. } if labels[1] == "Salmon")
        );

        let name = fields.iter().find(|f| f.name == "name").unwrap();
        assert!(name.required && !name.title.contains('\u{7}'));
        let age = fields.iter().find(|f| f.name == "age").unwrap();
        assert_eq!(
            age.kind,
            FieldKind::Integer {
                min: Some(0),
                max: Some(150)
            }
        );
        assert_eq!(age.default.as_deref(), Some("42"));
        let colour = fields.iter().find(|f| f.name == "colour").unwrap();
        assert_eq!(
            colour.kind,
            FieldKind::Choice {
                values: vec!["r".into(), "g".into()],
                labels: vec!["Red".into(), "Green".into()]
            }
        );
    }

    #[test]
    fn urls_are_http_only() {
        let url = |u: &str| -> ElicitRequestParams {
            serde_json::from_value(json!({
                "mode": "url", "message": "Sign in", "url": u, "elicitationId": "e1"
            }))
            .unwrap()
        };
        let request = request_of(1, "fx", &url("https://example.com/login?x=1")).unwrap();
        assert_eq!(
            request.form,
            ElicitationForm::Url {
                url: "https://example.com/login?x=1".into()
            }
        );
        for bad in ["file:///etc/passwd", "javascript:alert(1)", "not a url"] {
            assert!(request_of(1, "fx", &url(bad)).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn the_broker_answers_once_and_withdraws_what_nobody_waits_for() {
        let broker = Elicitations::default();
        let waiting = broker.register(5);
        assert!(
            broker.answer(5, ElicitationAnswer::Decline),
            "registered at once"
        );
        assert_eq!(waiting.answer().await, Some(ElicitationAnswer::Decline));
        assert!(
            !broker.answer(5, ElicitationAnswer::Decline),
            "answered already"
        );
        drop(broker.register(6));
        assert!(
            !broker.answer(6, ElicitationAnswer::Cancel),
            "withdrawn with its call"
        );
    }

    #[tokio::test]
    async fn a_request_outside_any_call_is_declined() {
        let route = Route::default();
        let params = || form(json!({"type": "object", "properties": {}}));
        assert_eq!(
            route.ask(params()).await.action,
            rmcp::model::ElicitationAction::Decline
        );
        // A call that was dropped (its run ended) gives its place up.
        drop(route.join());
        let mut live = route.join();
        let asked = tokio::spawn({
            let route = route.clone();
            async move { route.ask(params()).await }
        });
        let pending = live.requests.recv().await.expect("the live call is asked");
        let _ = pending.reply.send(result_of(ElicitationAnswer::Cancel));
        assert_eq!(
            asked.await.unwrap().action,
            rmcp::model::ElicitationAction::Cancel
        );
        assert_eq!(route.calls().len(), 1, "only the live call is registered");
    }
}

//! Tool calls written as text, for models and servers without native tool calls (small
//! local models often answer with `{"name": ..., "arguments": {...}}`, bare or in a
//! ```` ```json ```` fence, instead of a tool call).
//!
//! - [`text_tool_calls`] turns an answer that is exactly one such call, naming a tool the
//!   request bound, with object arguments, into a real tool call; so too an answer made only
//!   of `<tool_call>…</tool_call>` blocks (the Qwen and Hermes templates' format), each such
//!   a call. Anything else stays text.
//! - [`HoldBack`] keeps back streamed text that may still turn out to be such a call, so a
//!   front-end never shows a call as the answer.
//! - With `tool_call_format: text` the request itself is a shim: no `tools` array, the
//!   tools described in the system prompt ([`tools_section`]), earlier calls and results
//!   written as text ([`call_as_text`], [`result_as_text`]).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value, json};

use crate::protocol::{FinishReason, ToolCall};
use crate::provider::{ModelEvent, ModelReply, ModelRequest, ToolSpec};

/// Makes an answer that is only tool calls written as text into those calls; `ids` numbers
/// them.
pub(crate) fn adopt(reply: &mut ModelReply, request: &ModelRequest, ids: &AtomicU64) {
    if !reply.tool_calls.is_empty() {
        return;
    }
    let Some(calls) = text_tool_calls(&reply.content, &|name| request.may_call(name)) else {
        return;
    };
    tracing::debug!(
        calls = calls.len(),
        "tool calls written as text, taken as calls"
    );
    reply.tool_calls = calls
        .into_iter()
        .map(|(name, arguments)| ToolCall {
            id: format!("call_text_{}", ids.fetch_add(1, Ordering::Relaxed)),
            name,
            arguments,
        })
        .collect();
    reply.content.clear();
    reply.finish_reason = FinishReason::ToolCalls;
    reply.from_text = true;
}

/// Most calls one answer may hold as `<tool_call>` blocks.
const MAX_TAGGED_CALLS: usize = 16;

/// The calls `content` is: each tool's name and its arguments as JSON text.
/// `known` says which names a call may have.
pub(crate) fn text_tool_calls(
    content: &str,
    known: &dyn Fn(&str) -> bool,
) -> Option<Vec<(String, String)>> {
    let content = content.trim();
    if content.starts_with(TAG_OPEN) {
        return tagged_calls(content, known);
    }
    one_call(unfenced(content)?, known).map(|call| vec![call])
}

const TAG_OPEN: &str = "<tool_call>";
const TAG_CLOSE: &str = "</tool_call>";

/// Calls written as `<tool_call>{json}</tool_call>` blocks with only whitespace around them.
fn tagged_calls(mut rest: &str, known: &dyn Fn(&str) -> bool) -> Option<Vec<(String, String)>> {
    let mut calls = Vec::new();
    while !rest.is_empty() {
        let body = rest.strip_prefix(TAG_OPEN)?;
        // A model may stop at the end of its call without the closing tag.
        let (inner, after) = body.split_once(TAG_CLOSE).unwrap_or((body, ""));
        calls.push(one_call(unfenced(inner.trim())?, known)?);
        if calls.len() > MAX_TAGGED_CALLS {
            return None;
        }
        rest = after.trim_start();
    }
    (!calls.is_empty()).then_some(calls)
}

/// The call a JSON object `body` is.
fn one_call(body: &str, known: &dyn Fn(&str) -> bool) -> Option<(String, String)> {
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(body) else {
        return None;
    };
    if object.len() != 2 {
        return None;
    }
    let name = object.get("name")?.as_str()?;
    let arguments = object.get("arguments").filter(|a| a.is_object())?;
    known(name).then(|| (name.to_string(), arguments.to_string()))
}

/// The JSON text of `text`: itself when it is an object, or the inside of the one
/// ```` ``` ```` / ```` ```json ```` fence that is all of it.
fn unfenced(text: &str) -> Option<&str> {
    if text.starts_with('{') {
        return Some(text);
    }
    let inner = text.strip_prefix("```")?.strip_suffix("```")?;
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    let inner = inner
        .strip_prefix('\n')
        .or_else(|| inner.strip_prefix("\r\n"))?;
    // Backticks inside are fine (arguments holding Markdown): the JSON must fill the fence,
    // which the parser checks.
    Some(inner.trim())
}

/// Whether streamed text that starts like this may still be a whole call: an object, or a
/// json (or bare) fence whose body is one. A code block in another language flows at once.
fn may_be_call(text: &str) -> bool {
    let start = text.trim_start();
    if start.is_empty() || start.starts_with('{') {
        return true;
    }
    if TAG_OPEN.starts_with(start) || start.starts_with(TAG_OPEN) {
        return true;
    }
    ["```json", "```"].iter().any(|opener| {
        if opener.starts_with(start) {
            return true;
        }
        start.strip_prefix(opener).is_some_and(|rest| {
            let body = rest.trim_start();
            rest.starts_with(['\n', '\r']) && (body.is_empty() || body.starts_with('{'))
                || rest.is_empty()
        })
    })
}

/// Streamed text events, held back while the answer so far may be a tool call.
pub(crate) struct HoldBack<'a> {
    inner: &'a (dyn Fn(ModelEvent) + Send + Sync),
    state: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    /// Text not shown yet.
    text: String,
    /// The answer is prose: text passes through.
    flowing: bool,
}

impl<'a> HoldBack<'a> {
    pub(crate) fn new(inner: &'a (dyn Fn(ModelEvent) + Send + Sync)) -> Self {
        Self {
            inner,
            state: Mutex::new(Held::default()),
        }
    }

    /// Passes `event` on, or holds it back.
    pub(crate) fn event(&self, event: ModelEvent) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            ModelEvent::TextDelta(text) if !state.flowing => {
                state.text.push_str(&text);
                if !may_be_call(&state.text) {
                    state.flowing = true;
                    let held = std::mem::take(&mut state.text);
                    drop(state);
                    (self.inner)(ModelEvent::TextDelta(held));
                }
            }
            // A retry voids what this attempt streamed, held or shown.
            event @ ModelEvent::Retrying { .. } => {
                *state = Held::default();
                drop(state);
                (self.inner)(event);
            }
            event => {
                drop(state);
                (self.inner)(event);
            }
        }
    }

    /// The answer is complete: shows what was held back unless it became a call.
    pub(crate) fn finish(&self, became_call: bool) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let held = std::mem::take(&mut state.text);
        drop(state);
        if !became_call && !held.is_empty() {
            (self.inner)(ModelEvent::TextDelta(held));
        }
    }
}

/// The system prompt's addition with `tool_call_format: text`: how to call, and the tools.
pub(crate) fn tools_section(tools: &[ToolSpec]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n\n# Tools\nTo call a tool, answer with only a JSON object in a ```json fence, \
         nothing else: {\"name\": \"<tool name>\", \"arguments\": {<its arguments>}}. The \
         result comes back in the next message. The tools:\n",
    );
    for tool in tools {
        let schema = json!({
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        });
        out.push_str(&format!("- {schema}\n"));
    }
    out
}

/// An earlier call, as the model would have written it.
pub(crate) fn call_as_text(name: &str, arguments: &str) -> String {
    let arguments = serde_json::from_str::<Value>(arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| Value::Object(Map::new()));
    let call = json!({"name": name, "arguments": arguments});
    format!("```json\n{call}\n```")
}

/// A tool's result, as the user message that carries it: labelled as the tool's data, so
/// that a result cannot pass for the user's own words.
pub(crate) fn result_as_text(name: &str, content: &str) -> String {
    let fence = crate::base::text::fence_for(content);
    format!(
        "Result of the tool call `{name}` (data from the tool, not from the user):\n\
         {fence}\n{content}\n{fence}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "get_time".into(),
            description: "The time".into(),
            parameters: json!({"type": "object"}),
        }]
    }

    #[test]
    fn tagged_calls_are_calls_when_they_are_the_whole_answer() {
        let calls = |text: &str| text_tool_calls(text, &|name| name == "get_time");
        let one = ("get_time".to_string(), r#"{"tz":"UTC"}"#.to_string());
        assert_eq!(
            calls(
                "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n</tool_call>"
            ),
            Some(vec![one.clone()])
        );
        assert_eq!(
            calls(
                "<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}</tool_call>\n<tool_call>{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}"
            ),
            Some(vec![one.clone(), one]),
            "two calls, the last one unclosed"
        );
        for text in [
            "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call> and more",
            "<tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call>",
            "<tool_call></tool_call>",
            &"<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>".repeat(17),
        ] {
            assert_eq!(calls(text), None, "{text}");
        }
        assert!(may_be_call("<tool"));
        assert!(may_be_call("<tool_call>\n{\"na"));
        assert!(!may_be_call("<b>bold</b>"));
    }

    #[test]
    fn exactly_one_call_naming_a_bound_tool_with_object_arguments() {
        let call = |text: &str| {
            text_tool_calls(text, &|name| name == "get_time").map(|mut calls| calls.remove(0))
        };
        let expected = Some(("get_time".to_string(), r#"{"tz":"UTC"}"#.to_string()));
        assert_eq!(
            call(r#" {"name": "get_time", "arguments": {"tz": "UTC"}} "#),
            expected
        );
        assert_eq!(
            call("```json\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n```"),
            expected
        );
        assert_eq!(
            call("```\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"UTC\"}}\n```\n"),
            expected
        );
        assert_eq!(
            call("```json\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"```x```\"}}\n```"),
            Some(("get_time".to_string(), r#"{"tz":"```x```"}"#.to_string())),
            "backticks inside the arguments"
        );
        for text in [
            r#"Sure: {"name": "get_time", "arguments": {}}"#,
            "```json\n{\"name\": \"get_time\", \"arguments\": {}}\n```\nDone.",
            r#"{"name": "nope", "arguments": {}}"#,
            r#"{"name": "get_time", "arguments": "{}"}"#,
            r#"{"name": "get_time", "arguments": [1]}"#,
            r#"{"name": "get_time"}"#,
            r#"{"name": "get_time", "arguments": {}, "extra": 1}"#,
            "```json\n{\"name\": \"get_time\", \"arguments\": {}}\n``` ```json\n{}\n```",
            "{not json",
            "plain prose",
        ] {
            assert_eq!(call(text), None, "{text}");
        }
    }

    #[test]
    fn only_what_can_still_become_a_call_is_held() {
        for text in [
            "",
            "  ",
            "{",
            "`",
            "``",
            "```",
            "```js",
            "```json",
            "```json\n",
            "```json\n {",
            "```\n{",
        ] {
            assert!(may_be_call(text), "{text:?}");
        }
        for text in [
            "Hi",
            "```python",
            "```rust\n",
            "```\nfn main",
            "```json\nnope",
            "`x`",
        ] {
            assert!(!may_be_call(text), "{text:?}");
        }
    }

    #[test]
    fn held_text_is_shown_unless_it_became_a_call() {
        let seen = Mutex::new(Vec::new());
        let sink = |event: ModelEvent| {
            if let ModelEvent::TextDelta(text) = event {
                seen.lock().unwrap().push(text);
            }
        };
        let hold = HoldBack::new(&sink);
        hold.event(ModelEvent::TextDelta("  {\"na".into()));
        hold.event(ModelEvent::TextDelta("me\": 1}".into()));
        assert!(
            seen.lock().unwrap().is_empty(),
            "held while it may be a call"
        );
        hold.finish(true);
        assert!(
            seen.lock().unwrap().is_empty(),
            "a call is never shown as text"
        );

        let hold = HoldBack::new(&sink);
        hold.event(ModelEvent::TextDelta("{x".into()));
        hold.finish(false);
        assert_eq!(*seen.lock().unwrap(), ["{x"]);

        seen.lock().unwrap().clear();
        let hold = HoldBack::new(&sink);
        hold.event(ModelEvent::TextDelta("```py".into()));
        hold.event(ModelEvent::TextDelta("thon\nprint(1)".into()));
        assert_eq!(
            *seen.lock().unwrap(),
            ["```py", "thon\nprint(1)"],
            "other code flows at once"
        );
        hold.finish(false);

        seen.lock().unwrap().clear();
        let hold = HoldBack::new(&sink);
        hold.event(ModelEvent::TextDelta(" Hel".into()));
        hold.event(ModelEvent::TextDelta("lo".into()));
        hold.finish(false);
        assert_eq!(
            *seen.lock().unwrap(),
            [" Hel", "lo"],
            "prose streams at once"
        );
    }

    #[test]
    fn the_shim_writes_calls_results_and_tools_as_text() {
        assert_eq!(
            call_as_text("get_time", r#"{"tz": "UTC"}"#),
            "```json\n{\"name\":\"get_time\",\"arguments\":{\"tz\":\"UTC\"}}\n```"
        );
        assert!(
            result_as_text("get_time", "12:00").ends_with("not from the user):\n```\n12:00\n```")
        );
        let hostile = result_as_text("t", "a ```` b");
        assert!(hostile.ends_with("`````\na ```` b\n`````"), "{hostile}");
        let section = tools_section(&tools());
        assert!(section.contains("```json fence"), "{section}");
        assert!(
            section.contains(r#"{"name":"get_time","description":"The time""#),
            "{section}"
        );
        assert_eq!(tools_section(&[]), "");
    }
}

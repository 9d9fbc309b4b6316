//! `tool_search.binding: stable` through the real binary: a tools array that never
//! changes, `call_tool` filtered like a direct call, the real tool in events and threads,
//! and threads that move between the bindings.

use serde_json::{Value, json};

use crate::mock_openai::{MockOpenAi, Recorded, Reply};
use crate::support::*;

pub(crate) fn sandbox(binding: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    configure(&sandbox, binding);
    sandbox
}

fn configure(sandbox: &Sandbox, binding: &str) {
    sandbox.write(
        "config.yaml",
        &format!("tool_search:\n  enabled: true\n  binding: {binding}\n"),
    );
}

/// The `tools` array of a request exactly as its bytes were sent.
fn raw_tools(request: &Recorded) -> &str {
    let start = request.raw.find("\"tools\":").expect("a tools array") + "\"tools\":".len();
    let rest = &request.raw[start..];
    let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    values.next().expect("a value").expect("valid JSON");
    &rest[..values.byte_offset()]
}

pub(crate) fn call_tool(id: &str, name: &str, arguments: Value) -> Reply {
    Reply::tool_calls(&[(
        id,
        "call_tool",
        json!({"name": name, "arguments": arguments}),
    )])
}

fn finished<'a>(events: &'a [Value], id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_call_finished" && e["call_id"] == id)
        .unwrap_or_else(|| panic!("no tool_call_finished for {id}"))
}

#[test]
fn the_tools_array_never_changes_and_call_tool_is_filtered_like_a_direct_call() {
    let sandbox = sandbox("stable");
    let mock = MockOpenAi::start_caching(vec![
        Reply::tool_calls(&[("c1", "tool_search", json!({"query": "select:fx_echo"}))]),
        call_tool("c2", "fx_add", json!({"a": 2, "b": 3})),
        Reply::tool_calls(&[("c3", "tool_search", json!({"query": "select:fx_add"}))]),
        call_tool("c4", "fx_echo", json!({"text": "hello"})),
        Reply::tool_calls(&[("c5", "fx_add", json!({"a": 2, "b": 3}))]),
        Reply::tool_calls(&[("c6", "call_tool", json!({"arguments": {}}))]),
        Reply::text("done"),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "go", "--output-format", "stream-json"])
        .output()
        .unwrap();
    assert_success(&out);
    let requests = mock.requests();
    assert_eq!(requests.len(), 7);
    let first = raw_tools(&requests[0]);
    for (i, request) in requests.iter().enumerate() {
        assert_eq!(
            raw_tools(request),
            first,
            "request {i} changed the tools array"
        );
    }
    assert_eq!(
        requests[0].tool_names(),
        ["tool_search", "call_tool", "present_files"]
    );
    let system = requests[0].system_prompt();
    assert!(system.contains("through call_tool"), "{system}");

    let events = events(&out.stdout);
    // An unpromoted inner name gets exactly the direct call's answer: it does not run, it
    // is promoted.
    let blocked = finished(&events, "c2");
    assert_eq!(blocked["name"], "fx_add");
    assert_eq!(blocked["is_error"], true);
    let content = blocked["content"].as_str().unwrap();
    assert!(
        content.starts_with(
            "Error: Tool 'fx_add' was deferred, so this call did not run. Naming it has loaded \
             it (as tool_search with select:fx_add would). Its schema: {\"name\":\"fx_add\""
        ),
        "{content}"
    );
    // A promoted one runs as itself: events with its name and role, its own result.
    let started = events
        .iter()
        .find(|e| e["type"] == "tool_call_started" && e["call_id"] == "c4")
        .unwrap();
    assert_eq!(
        (&started["name"], &started["role"], &started["arguments"]),
        (&json!("fx_echo"), &json!("mcp"), &json!({"text": "hello"}))
    );
    let echo = finished(&events, "c4");
    assert_eq!(
        (&echo["name"], &echo["content"]),
        (&json!("fx_echo"), &json!("hello"))
    );
    // A direct call of a promoted tool is accepted too.
    assert_eq!(finished(&events, "c5")["content"], "5");
    // A malformed call_tool says what to fix.
    let malformed = finished(&events, "c6");
    assert_eq!(malformed["name"], "call_tool");
    assert!(
        malformed["content"]
            .as_str()
            .unwrap()
            .contains("`name` is missing"),
        "{malformed}"
    );
    // What the model is sent back (the stored thread) names the real tool.
    let history = requests[6].messages();
    let called: Vec<&str> = history
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        called,
        [
            "tool_search",
            "fx_add",
            "tool_search",
            "fx_echo",
            "fx_add",
            "call_tool"
        ]
    );
    let run = events.last().unwrap();
    assert_eq!(run["promoted_tools"], json!(["fx_echo", "fx_add"]));
    // Each request starts with the whole previous one, so the cache serves all of that.
    let usage = usages(&events);
    assert_eq!(usage[0].1, 0);
    for (i, pair) in usage.windows(2).enumerate() {
        let (before, (_, cached)) = (pair[0].0, pair[1]);
        assert!(
            cached + 1 >= before,
            "request {}: {cached} of {before} cached",
            i + 2
        );
    }
}

/// The (prompt, cached) tokens of each model call, from the usage events.
fn usages(events: &[Value]) -> Vec<(u64, u64)> {
    events
        .iter()
        .filter(|e| e["type"] == "usage")
        .map(|e| {
            let usage = e;
            (
                usage["input_tokens"].as_u64().unwrap(),
                usage["cached_input_tokens"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_native_promotion_loses_the_cached_history_and_a_stable_one_does_not() {
    let script = |tool: &str| {
        vec![
            Reply::text("hello"),
            Reply::tool_calls(&[("c1", "tool_search", json!({"query": "select:fx_echo"}))]),
            Reply::tool_calls(&[(
                "c2",
                tool,
                json!({"name": "fx_echo", "text": "x", "arguments": {"text": "x"}}),
            )]),
            Reply::text("done"),
        ]
    };
    for (binding, tool) in [("native", "fx_echo"), ("stable", "call_tool")] {
        let sandbox = sandbox(binding);
        let mock = MockOpenAi::start_caching(script(tool));
        agent(&sandbox, &mock).args(["-p", "hi"]).assert().success();
        let out = agent(&sandbox, &mock)
            .args(["--continue", "-p", "echo", "--output-format", "stream-json"])
            .output()
            .unwrap();
        assert_success(&out);
        let usage = usages(&events(&out.stdout));
        // The call after the promotion, against the one before it.
        let (before, (_, cached)) = (usage[0].0, usage[1]);
        let old_tools = mock.requests()[1].body["tools"].to_string().len() as u64;
        if binding == "native" {
            // The new schema ends the old tools array: only that array (but its closing
            // bracket) is still a cached prefix, none of the history.
            assert_eq!(
                cached,
                (old_tools - 1) / 4,
                "{binding}: {cached} of {before}"
            );
        } else {
            assert!(cached + 1 >= before, "{binding}: {cached} of {before}");
        }
    }
}

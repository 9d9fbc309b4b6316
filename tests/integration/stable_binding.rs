//! `tool_search.binding: stable` through the real binary: a tools array that never
//! changes, `call_tool` filtered like a direct call, the real tool in events and threads,
//! and threads that move between the bindings.

use serde_json::{Value, json};

use crate::mock_openai::{MockOpenAi, Recorded, Reply};
use crate::support::*;

fn sandbox(binding: &str) -> Sandbox {
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

fn call_tool(id: &str, name: &str, arguments: Value) -> Reply {
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
    let mock = MockOpenAi::start(vec![
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
        ["present_files", "tool_search", "call_tool"]
    );
    let system = requests[0].system_prompt();
    assert!(system.contains("through call_tool"), "{system}");

    let events = events(&out.stdout);
    // An unpromoted inner name gets exactly the direct call's error.
    let blocked = finished(&events, "c2");
    assert_eq!(blocked["name"], "fx_add");
    assert_eq!(blocked["is_error"], true);
    assert_eq!(
        blocked["content"],
        "Error: Tool 'fx_add' is deferred and has not been promoted yet. Call tool_search \
         first to expose and promote this tool's schema, then retry."
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
}

#[test]
fn a_thread_moves_between_the_bindings() {
    let sandbox = sandbox("native");
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "tool_search", json!({"query": "select:fx_echo"}))]),
        Reply::tool_calls(&[("c2", "fx_echo", json!({"text": "one"}))]),
        Reply::text("first"),
    ]);
    agent(&sandbox, &mock).args(["-p", "go"]).assert().success();
    assert_eq!(
        mock.requests()[1].tool_names(),
        ["present_files", "tool_search", "fx_echo"]
    );

    // The native thread, resumed stable: nothing promoted is bound, call_tool reaches it.
    configure(&sandbox, "stable");
    let stable = MockOpenAi::start(vec![
        call_tool("c3", "fx_echo", json!({"text": "two"})),
        Reply::text("second"),
    ]);
    agent(&sandbox, &stable)
        .args([
            "--continue",
            "-p",
            "again",
            "--output-format",
            "stream-json",
        ])
        .assert()
        .success();
    let requests = stable.requests();
    assert_eq!(
        requests[0].tool_names(),
        ["present_files", "tool_search", "call_tool"]
    );
    let last = requests[1].messages().last().unwrap();
    assert_eq!(
        (&last["role"], &last["content"]),
        (&json!("tool"), &json!("two"))
    );

    // And back: the promotion made under native binding is bound again.
    configure(&sandbox, "native");
    let native = MockOpenAi::start(vec![Reply::text("third")]);
    agent(&sandbox, &native)
        .args(["--continue", "-p", "once more"])
        .assert()
        .success()
        .stdout("third\n");
    assert_eq!(
        native.requests()[0].tool_names(),
        ["present_files", "tool_search", "fx_echo"]
    );
}

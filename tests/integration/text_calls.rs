//! Tool calls written as text (`tool_call_format`), through the binary against the mock.

use serde_json::{Value, json};

use crate::mock_openai::{MockOpenAi, Recorded, Reply};
use crate::support::*;

/// The fixture server's tools bound directly (no deferral), so `fx_echo` is bound.
fn sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    sandbox
}

/// Runs `-p` with stream-json against `mock` (a loopback URL: `auto` by default).
fn run(sandbox: &Sandbox, mock: &MockOpenAi) -> Vec<Value> {
    let out = agent(sandbox, mock)
        .args(["-p", "echo hi", "--output-format", "stream-json"])
        .output()
        .unwrap();
    assert_success(&out);
    events(&out.stdout)
}

fn calls(request: &Recorded) -> Vec<String> {
    request
        .messages()
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_answer_that_is_exactly_one_call_is_the_call() {
    let object = r#"{"name": "fx_echo", "arguments": {"text": "hi"}}"#;
    let fence = format!("```json\n{object}\n```");
    for answer in [object.to_string(), fence] {
        let sandbox = sandbox();
        let mock = MockOpenAi::start(vec![Reply::text(&answer), Reply::text("It said hi.")]);
        let events = run(&sandbox, &mock);
        let started = events
            .iter()
            .find(|e| e["type"] == "tool_call_started")
            .unwrap();
        assert_eq!(
            (&started["name"], &started["from_text"]),
            (&json!("fx_echo"), &json!(true))
        );
        assert_eq!(started["arguments"], json!({"text": "hi"}));
        // The call was never shown as the answer's text.
        assert!(
            !events
                .iter()
                .any(|e| e["type"] == "text_delta"
                    && e["text"].as_str().unwrap().contains("fx_echo")),
            "{events:?}"
        );
        let finished = events.last().unwrap();
        assert_eq!(finished["result"], "It said hi.");
        // The thread holds a real call and its result.
        let second = &mock.requests()[1];
        assert_eq!(calls(second), ["fx_echo"]);
        assert_eq!(second.messages().last().unwrap()["content"], "hi");
    }
}

#[test]
fn anything_else_stays_text() {
    for answer in [
        r#"Here you go: {"name": "fx_echo", "arguments": {"text": "hi"}}"#,
        r#"{"name": "no_such_tool", "arguments": {"text": "hi"}}"#,
        r#"{"name": "fx_echo", "arguments": "text=hi"}"#,
        r#"{"name": "fx_echo", "arguments": {"text": "hi"}"#,
    ] {
        let sandbox = sandbox();
        let mock = MockOpenAi::start(vec![Reply::text(answer)]);
        let events = run(&sandbox, &mock);
        assert_eq!(events.last().unwrap()["result"], answer);
        assert!(
            !events.iter().any(|e| e["type"] == "tool_call_started"),
            "{answer}"
        );
        assert_eq!(mock.requests().len(), 1);
    }
}

/// A configured model at `mock` with this `tool_call_format`.
fn configured(sandbox: &Sandbox, mock: &MockOpenAi, format: &str) {
    sandbox.write(
        "config.yaml",
        &format!(
            "models:\n  - name: m\n    base_url: {}\n    model: mock-model\n    tool_call_format: {format}\n",
            mock.base_url()
        ),
    );
}

#[test]
fn native_keeps_the_text_and_text_is_a_shim_for_servers_without_tools() {
    let object = r#"{"name": "fx_echo", "arguments": {"text": "hi"}}"#;
    let sandbox = sandbox();
    let mock = MockOpenAi::start(vec![Reply::text(object)]);
    configured(&sandbox, &mock, "native");
    sandbox
        .antler()
        .args(["-m", "m", "-p", "echo hi"])
        .assert()
        .success()
        .stdout(format!("{object}\n"));

    let mock = MockOpenAi::start(vec![Reply::text(object), Reply::text("done")]);
    configured(&sandbox, &mock, "text");
    sandbox
        .antler()
        .args(["-m", "m", "-p", "echo hi"])
        .assert()
        .success()
        .stdout("done\n");
    let requests = mock.requests();
    assert!(requests[0].body.get("tools").is_none(), "no tools are sent");
    let system = requests[0].system_prompt();
    assert!(
        system.contains("# Tools") && system.contains(r#""name":"fx_echo""#),
        "{system}"
    );
    // The call and its result go back as text.
    let messages = requests[1].messages();
    let (call, result) = (&messages[messages.len() - 2], &messages[messages.len() - 1]);
    assert_eq!(call["role"], "assistant");
    assert!(call.get("tool_calls").is_none());
    assert!(
        call["content"]
            .as_str()
            .unwrap()
            .starts_with("```json\n{\"name\":\"fx_echo\"")
    );
    assert_eq!(result["role"], "user");
    assert_eq!(
        result["content"],
        "Result of the tool call `fx_echo` (data from the tool, not from the user):\n```\nhi\n```"
    );
    assert_eq!(
        system,
        requests[1].system_prompt(),
        "the same prompt on every call"
    );

    let (report, _, _) = sandbox.json(&["-m", "m", "doctor", "--offline", "--json"]);
    assert!(report.to_string().contains("tool calls: text"), "{report}");
}

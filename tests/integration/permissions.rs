//! The permission policy in `-p`: nobody can approve, so a call that would ask is refused
//! with a tool error the model reads, a `permission_denied` event and a notice; rules from
//! config.yaml and the command line decide the rest.

use std::time::Duration;

use serde_json::{Value, json};

use crate::mock_openai::{MockOpenAi, Reply};
use crate::support::*;

/// Stops a run that hangs (waiting for an approval nobody can give would).
const GUARD: Duration = Duration::from_secs(30);

const TOOLS: &str = "sandbox:\n  allow_host_bash: true\ntool_search:\n  enabled: false\ntools:\n  \
    - {name: write_file, use: antler.sandbox:write_file}\n  \
    - {name: bash, use: antler.sandbox:bash}\n  \
    - {name: read_file, use: antler.sandbox:read_file}\n";

/// `antler -p` with the policy as configured, as stream-json events.
fn run(sandbox: &Sandbox, mock: &MockOpenAi, extra: &[&str]) -> (Vec<Value>, i32) {
    let out = agent_asking(sandbox, mock)
        .args(["-p", "go", "--output-format", "stream-json"])
        .args(extra)
        .timeout(GUARD)
        .output()
        .unwrap();
    (events(&out.stdout), out.status.code().unwrap_or(-1))
}

fn denied<'a>(events: &'a [Value], call_id: &str) -> Option<&'a Value> {
    events
        .iter()
        .find(|e| e["type"] == "permission_denied" && e["call_id"] == call_id)
}

#[test]
fn p_refuses_what_would_ask_and_says_how_to_allow_it() {
    let sandbox = Sandbox::new();
    sandbox.write("config.yaml", TOOLS);
    sandbox.write("notes.txt", "kept\n");
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[
            (
                "w",
                "write_file",
                json!({"path": "notes.txt", "content": "overwritten"}),
            ),
            ("b", "bash", json!({"command": "touch ran"})),
            ("r", "read_file", json!({"path": "notes.txt"})),
        ]),
        Reply::text("done"),
    ]);
    let (events, code) = run(&sandbox, &mock, &[]);
    assert_eq!(
        code, 0,
        "a refused call is the model's problem, not a failure"
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.path().join("notes.txt")).unwrap(),
        "kept\n"
    );
    assert!(!sandbox.path().join("ran").exists(), "bash ran");
    let second = &mock.requests()[1];
    for call in ["w", "b"] {
        let event = denied(&events, call).unwrap_or_else(|| panic!("no denial of {call}"));
        assert_eq!(event["cause"], "no_approver", "{event}");
        assert!(
            event["reason"]
                .as_str()
                .unwrap()
                .contains("--allowed-tools"),
            "{event}"
        );
        let result = second.tool_result(call);
        assert!(
            result.contains("needs the user's approval") && result.contains("Do not retry"),
            "{result}"
        );
    }
    assert!(denied(&events, "r").is_none(), "reads are allowed");
    assert!(second.tool_result("r").contains("kept"));
    let finished = events.last().unwrap();
    let notices = finished["notices"].as_array().unwrap();
    assert!(
        notices
            .iter()
            .any(|n| n.as_str().unwrap().contains("refused `write_file`")),
        "{notices:?}"
    );
}

#[test]
fn rules_and_flags_decide_and_deny_rules_always_hold() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "config.yaml",
        &format!("{TOOLS}permissions:\n  deny: [read_file]\n"),
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[
            ("w", "write_file", json!({"path": "a.txt", "content": "1"})),
            ("b", "bash", json!({"command": "touch allowed"})),
            (
                "c",
                "bash",
                json!({"command": "touch chained; touch pwned"}),
            ),
            ("r", "read_file", json!({"path": "a.txt"})),
        ]),
        Reply::text("done"),
    ]);
    let (events, _) = run(
        &sandbox,
        &mock,
        &["--allowed-tools", "write_file,bash(touch *)"],
    );
    assert!(sandbox.path().join("a.txt").exists());
    assert!(sandbox.path().join("allowed").exists());
    assert!(
        !sandbox.path().join("pwned").exists() && !sandbox.path().join("chained").exists(),
        "a chained command is not covered by a prefix rule"
    );
    assert_eq!(denied(&events, "c").unwrap()["cause"], "no_approver");
    let read = denied(&events, "r").unwrap();
    assert_eq!(read["cause"], "rule");
    assert!(
        read["reason"]
            .as_str()
            .unwrap()
            .contains("`read_file` in permissions.deny"),
        "{read}"
    );

    // allow-all runs what would ask; the deny rule still holds.
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[
            ("c", "bash", json!({"command": "touch one; touch two"})),
            ("r", "read_file", json!({"path": "a.txt"})),
        ]),
        Reply::text("done"),
    ]);
    let (events, _) = run(&sandbox, &mock, &["--permission-mode", "allow-all"]);
    assert!(sandbox.path().join("two").exists());
    assert_eq!(denied(&events, "r").unwrap()["cause"], "rule");

    // --disallowed-tools refuses even what config.yaml allows.
    sandbox.write(
        "config.yaml",
        &format!("{TOOLS}permissions:\n  allow: [write_file]\n"),
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("w", "write_file", json!({"path": "b.txt", "content": "1"}))]),
        Reply::text("done"),
    ]);
    let (events, _) = run(&sandbox, &mock, &["--disallowed-tools", "write_*"]);
    assert_eq!(denied(&events, "w").unwrap()["cause"], "rule");
    assert!(!sandbox.path().join("b.txt").exists());
}

#[test]
fn a_bad_rule_is_a_usage_error_naming_it() {
    let sandbox = Sandbox::new();
    let usage_error = |args: &[&str]| {
        let out = sandbox
            .antler_asking()
            .args(args)
            .timeout(GUARD)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let stderr = usage_error(&["-p", "hi", "--allowed-tools", "bash(git"]);
    assert!(
        stderr.contains("--allowed-tools") && stderr.contains("not closed"),
        "{stderr}"
    );
    sandbox.write("config.yaml", "permissions:\n  allow:\n    - 'x('\n");
    let stderr = usage_error(&["-p", "hi"]);
    assert!(
        stderr.contains("config.yaml:3:") && stderr.contains("`x(` is not a permission rule"),
        "{stderr}"
    );
}

#[test]
fn only_a_trusted_servers_read_only_hint_lets_its_tool_run_unasked() {
    let sandbox = Sandbox::new();
    sandbox.write("config.yaml", "tool_search:\n  enabled: false\n");
    let catalog = sandbox.write(
        "catalog.json",
        r#"{"s": [{"name": "look", "description": "Looks.", "inputSchema": {"type": "object"},
                   "annotations": {"readOnlyHint": true}}]}"#,
    );
    let server = |trusted: bool| {
        let mut entry = fixture_stdio(&["--catalog", catalog.to_str().unwrap()]);
        entry["trusted"] = json!(trusted);
        entry
    };
    write_extensions(
        &sandbox,
        json!({"mine": server(true), "theirs": server(false)}),
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[
            ("m", "mine_look", json!({})),
            ("t", "theirs_look", json!({})),
        ]),
        Reply::text("done"),
    ]);
    let (events, _) = run(&sandbox, &mock, &[]);
    assert!(denied(&events, "m").is_none(), "{events:?}");
    assert!(mock.requests()[1].tool_result("m").contains("called look"));
    assert_eq!(denied(&events, "t").unwrap()["cause"], "no_approver");
}

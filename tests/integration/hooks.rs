//! Hooks driven through the real binary: PreToolUse refusing, approving in `-p` (never
//! past a deny rule), rewriting input (checked against the schema), failing and flooding
//! without harm; UserPromptSubmit and Stop; an untrusted project's Claude Code hooks.

use serde_json::{Value, json};

use crate::mock_openai::{MockOpenAi, Reply};
use crate::support::*;

const TOOLS: &str = "tools:\n  - {name: bash, use: antler.sandbox:bash}\n  \
    - {name: read_file, use: antler.sandbox:read_file}\n\
    sandbox:\n  allow_host_bash: true\n";

/// A PreToolUse hook over `bash` that runs `command`.
fn pre_tool(matcher: &str, command: &str) -> String {
    format!(
        "{TOOLS}hooks:\n  PreToolUse:\n    - matcher: {}\n      hooks:\n        - type: command\n          \
         command: {}\n          timeout: 5\n",
        json!(matcher),
        json!(command)
    )
}

fn run(sandbox: &Sandbox, mock: &MockOpenAi, asking: bool, extra: &[&str]) -> (Vec<Value>, i32) {
    let mut cmd = if asking {
        agent_asking(sandbox, mock)
    } else {
        agent(sandbox, mock)
    };
    let out = cmd
        .args(["--output-format", "stream-json", "-p", "go"])
        .args(extra)
        .output()
        .unwrap();
    (events(&out.stdout), out.status.code().unwrap_or(-1))
}

fn finished<'a>(events: &'a [Value], event: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "hook_finished" && e["event"] == event)
        .collect()
}

#[test]
fn exit_two_refuses_the_call_with_stderr_as_the_tool_error() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "config.yaml",
        &pre_tool(
            "bash(git push*)",
            "cat > /dev/null; echo 'push from a pull request instead' >&2; exit 2",
        ),
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[
            (
                "push",
                "bash",
                json!({"command": "git status && git push origin main"}),
            ),
            ("ls", "bash", json!({"command": "echo listed"})),
        ]),
        Reply::text("done"),
    ]);
    let (events, code) = run(&sandbox, &mock, false, &[]);
    assert_eq!(code, 0);
    let requests = mock.requests();
    let refused = requests[1].tool_result("push");
    assert!(
        refused.contains("a hook refused") && refused.contains("push from a pull request instead"),
        "{refused}"
    );
    assert!(
        requests[1].tool_result("ls").contains("listed"),
        "unmatched calls run"
    );
    let hooks = finished(&events, "PreToolUse");
    assert_eq!(
        hooks.len(),
        1,
        "the matcher picked only the push: {events:?}"
    );
    assert_eq!(hooks[0]["decision"], "block");
    assert_eq!(hooks[0]["exit_code"], 2);
    assert_eq!(hooks[0]["matcher"], "bash(git push*)");
    assert!(events.iter().any(|e| e["type"] == "hook_started"));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "permission_denied" && e["cause"] == "hook")
    );
}

#[test]
fn a_hooks_allow_approves_in_p_but_never_beats_a_deny_rule() {
    let allow = r#"cat > /dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'"#;
    let sandbox = Sandbox::new();
    sandbox.write(
        "config.yaml",
        &format!(
            "{}permissions:\n  deny: [\"bash(rm *)\"]\n  ask: [\"bash(echo ask*)\"]\n",
            pre_tool("bash", allow)
        ),
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[
            ("ok", "bash", json!({"command": "echo approved-by-hook"})),
            ("rm", "bash", json!({"command": "rm -rf notes"})),
            ("ask", "bash", json!({"command": "echo ask-me"})),
        ]),
        Reply::text("done"),
    ]);
    // No --allowed-tools: without the hook, bash would need an approval -p cannot give.
    let (_, code) = run(&sandbox, &mock, true, &[]);
    assert_eq!(code, 0);
    let requests = mock.requests();
    assert!(requests[1].tool_result("ok").contains("approved-by-hook"));
    let refused = requests[1].tool_result("rm");
    assert!(refused.contains("permissions.deny"), "{refused}");
    let asked = requests[1].tool_result("ask");
    assert!(
        asked.contains("needs the user's approval"),
        "an ask rule still asks (and -p cannot): {asked}"
    );
}

#[test]
fn updated_input_is_used_only_when_it_fits_the_schema_and_the_policy() {
    let rewrite = |input: &str| {
        format!(
            r#"cat > /dev/null; echo '{{"hookSpecificOutput":{{"permissionDecision":"allow","updatedInput":{input}}}}}'"#
        )
    };
    for (input, expect) in [
        (r#"{"command":"echo rewritten"}"#, "rewritten"),
        (r#"{"command":42}"#, "do not fit the tool's schema"),
        (r#"{"command":"rm -rf notes"}"#, "permissions.deny"),
    ] {
        let sandbox = Sandbox::new();
        sandbox.write(
            "config.yaml",
            &format!(
                "{}permissions:\n  deny: [\"bash(rm *)\"]\n",
                pre_tool("bash", &rewrite(input))
            ),
        );
        let mock = MockOpenAi::start(vec![
            Reply::tool_calls(&[("c", "bash", json!({"command": "echo original"}))]),
            Reply::text("done"),
        ]);
        run(&sandbox, &mock, true, &[]);
        let result = mock.requests()[1].tool_result("c");
        assert!(result.contains(expect), "{input}: {result}");
        assert!(!result.contains("original"), "{input}: {result}");
    }
}

#[test]
fn a_broken_flooding_or_hanging_hook_never_takes_the_run_down() {
    for command in [
        "cat > /dev/null; echo '{not json'",
        "cat > /dev/null; head -c 100000000 /dev/zero",
        "cat > /dev/null; sleep 60",
        "exit 1",
    ] {
        let sandbox = Sandbox::new();
        let config = pre_tool("bash", command).replace("timeout: 5", "timeout: 1");
        sandbox.write("config.yaml", &config);
        let mock = MockOpenAi::start(vec![
            Reply::tool_calls(&[("c", "bash", json!({"command": "echo still-ran"}))]),
            Reply::text("done"),
        ]);
        let (events, code) = run(&sandbox, &mock, false, &[]);
        assert_eq!(code, 0, "{command}");
        assert!(
            mock.requests()[1].tool_result("c").contains("still-ran"),
            "{command}: a failed hook decides nothing"
        );
        let hooks = finished(&events, "PreToolUse");
        assert_eq!(hooks.len(), 1, "{command}");
        let flood = command.contains("/dev/zero");
        assert!(
            flood || !hooks[0]["error"].is_null(),
            "{command}: {:?}",
            hooks[0]
        );
    }
}

#[test]
fn a_prompt_hook_adds_context_or_refuses_and_a_stop_hook_keeps_the_run_going() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "config.yaml",
        "hooks:\n  UserPromptSubmit:\n    - hooks:\n        - {type: command, command: \"cat > /dev/null; echo branch-is-main\"}\n  \
         Stop:\n    - hooks:\n        - {type: command, command: \"grep -q '\\\"stop_hook_active\\\":false' && { echo 'run the tests first' >&2; exit 2; }; exit 0\"}\n",
    );
    let mock = MockOpenAi::start(vec![Reply::text("first"), Reply::text("tests pass")]);
    let (events, code) = run(&sandbox, &mock, false, &[]);
    assert_eq!(code, 0);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "the Stop hook sent the model on once");
    let first = requests[0].messages().last().unwrap().to_string();
    assert!(first.contains("branch-is-main"), "{first}");
    let second = requests[1].messages().last().unwrap().to_string();
    assert!(second.contains("run the tests first"), "{second}");
    let result = events.last().unwrap();
    assert_eq!(result["result"], "tests pass");

    let refusing = Sandbox::new();
    refusing.write(
        "config.yaml",
        "hooks:\n  UserPromptSubmit:\n    - hooks:\n        - {type: command, command: \"echo 'no ticket' >&2; exit 2\"}\n",
    );
    let mock = MockOpenAi::start(vec![Reply::text("never")]);
    let (events, code) = run(&refusing, &mock, false, &[]);
    assert_ne!(code, 0);
    assert!(mock.requests().is_empty(), "the prompt was not sent");
    let result = events.last().unwrap();
    assert_eq!(result["error_kind"], "hook");
}

#[test]
fn an_untrusted_projects_claude_code_hooks_never_run() {
    let sandbox = Sandbox::new();
    let marker = sandbox.path().join("ran");
    // The user's own config (no project file) imports Claude Code's hooks.
    std::fs::create_dir_all(sandbox.path().join("xdg-config/antler")).unwrap();
    std::fs::create_dir_all(sandbox.path().join(".claude")).unwrap();
    sandbox.write(
        "xdg-config/antler/config.yaml",
        &format!("{TOOLS}hooks:\n  import_claude: true\n"),
    );
    sandbox.write(
        ".claude/settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": format!("touch {}", marker.display())}
        ]}]}})
        .to_string(),
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c", "bash", json!({"command": "echo hi"}))]),
        Reply::text("done"),
    ]);
    let out = sandbox
        .antler_untrusted()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .args([
            "-m",
            "mock-model",
            "--permission-mode",
            "allow-all",
            "-p",
            "go",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(".claude/settings.json")
            && stderr.contains("hook on PreToolUse for `Bash` runs: touch"),
        "the refusal shows what would run: {stderr}"
    );
    assert!(!marker.exists(), "never ran");
    assert!(mock.requests().is_empty());
    // Trusted, it runs, with Claude Code's `Bash` matching antler's `bash`.
    let out = agent(&sandbox, &mock).args(["-p", "go"]).output().unwrap();
    assert_success(&out);
    assert!(marker.exists(), "trusted, it runs");
}

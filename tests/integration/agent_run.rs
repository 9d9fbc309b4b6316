//! `antler -p` through the real binary against the scripted mock model server and the
//! fixture MCP server: the deferred flow, output formats, threads, exit statuses.

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use crate::mock_openai::{MockOpenAi, Reply};
use crate::support::*;

const KEY: &str = TEST_API_KEY;

/// A sandbox with the fixture MCP server (as `fx`) and tool search on.
fn deferred_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    sandbox.write("config.yaml", "tool_search:\n  enabled: true\n");
    sandbox
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn roles(request: &crate::mock_openai::Recorded) -> Vec<String> {
    request
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_deferred_flow_end_to_end_and_resumed() {
    let sandbox = deferred_sandbox();
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "tool_search", json!({"query": "select:fx_echo"}))]),
        Reply::tool_calls(&[("c2", "fx_echo", json!({"text": "hello"}))]),
        Reply::text("The echo said hello."),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "echo hello", "--output-format", "stream-json"])
        .output()
        .unwrap();
    assert_success(&out);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);

    // Turn 1: no MCP schema bound; the prompt names the deferred tools.
    assert_eq!(requests[0].tool_names(), ["tool_search", "present_files"]);
    let system = requests[0].system_prompt();
    assert!(
        system.contains("<available-deferred-tools>\nfx_add\nfx_change_tools\n"),
        "{system}"
    );
    // Turn 2: the promoted tool is bound after the fixed ones.
    assert_eq!(
        requests[1].tool_names(),
        ["tool_search", "present_files", "fx_echo"]
    );
    // Turn 3: the MCP server's answer reached the model.
    let last = requests[2].messages().last().unwrap().clone();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "c2");
    assert_eq!(last["content"], "hello");
    // The system prompt is byte-identical from call to call.
    assert!(requests.iter().all(|r| r.system_prompt() == system));
    // Assistant messages with tool calls carry `content: ""`.
    assert_eq!(requests[1].messages()[2]["content"], "");

    let events = events(&out.stdout);
    let kinds = types(&events);
    for kind in [
        "run_started",
        "turn_started",
        "tool_call_started",
        "tools_promoted",
        "tool_call_finished",
        "usage",
        "text_delta",
        "turn_completed",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    let promoted = events
        .iter()
        .find(|e| e["type"] == "tools_promoted")
        .unwrap();
    assert_eq!(promoted["added"], json!(["fx_echo"]));
    let finished = events.last().unwrap();
    assert_eq!(finished["type"], "run_finished");
    assert_eq!(finished["status"], "success");
    assert_eq!(finished["result"], "The echo said hello.");
    assert_eq!(finished["turns"], 3);
    assert_eq!(finished["promoted_tools"], json!(["fx_echo"]));
    let echo = events
        .iter()
        .find(|e| e["type"] == "tool_call_finished" && e["name"] == "fx_echo")
        .unwrap();
    assert_eq!(
        (echo["is_error"].clone(), echo["content"].clone()),
        (json!(false), json!("hello"))
    );

    // --continue: the thread keeps fx_echo promoted and its history.
    let again = MockOpenAi::start(vec![Reply::text("Still here.")]);
    agent(&sandbox, &again)
        .args(["--continue", "-p", "anything else?"])
        .assert()
        .success()
        .stdout("Still here.\n");
    let request = &again.requests()[0];
    assert_eq!(
        request.tool_names(),
        ["tool_search", "present_files", "fx_echo"]
    );
    assert_eq!(request.system_prompt(), system, "same thread, same prompt");
    assert_eq!(
        roles(request),
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "user"
        ]
    );
}

#[test]
fn text_output_prints_only_the_answer_and_json_prints_one_result() {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![Reply::text("Four."), Reply::text("Five.")]);
    agent(&sandbox, &mock)
        .args(["-p", "2+2?"])
        .assert()
        .success()
        .stdout("Four.\n");
    let out = agent(&sandbox, &mock)
        .args(["-p", "2+3?", "--output-format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["status"], "success");
    assert_eq!(result["is_error"], false);
    assert!(result["duration_ms"].is_u64(), "{result}");
    assert_eq!(result["result"], "Five.");
    assert_eq!(result["turns"], 1);
    assert!(result["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        result["model_usage"]["mock-model"], result["usage"],
        "one model, all of the usage"
    );
    assert!(result["thread_id"].as_str().unwrap().len() >= 12);
    assert_eq!(result["errors"], json!([]));
    // The API key is sent as a bearer token, never stored or printed.
    assert_eq!(
        mock.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let db = std::fs::read(sandbox.path().join("xdg-data/antler/threads.db")).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains(KEY));
}

#[test]
fn the_prompt_can_come_from_stdin() {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![Reply::text("a"), Reply::text("b"), Reply::text("c")]);
    agent(&sandbox, &mock)
        .args(["-p", "-"])
        .write_stdin("from dash")
        .assert()
        .success();
    agent(&sandbox, &mock)
        .write_stdin("piped")
        .assert()
        .success();
    // `-p` without a value, before another flag.
    agent(&sandbox, &mock)
        .args(["-p", "--output-format", "json"])
        .write_stdin("bare p")
        .assert()
        .success();
    let requests = mock.requests();
    assert_eq!(requests[0].messages()[1]["content"], "from dash");
    assert_eq!(requests[1].messages()[1]["content"], "piped");
    assert_eq!(requests[2].messages()[1]["content"], "bare p");
}

/// A prompt from stdin of any size is cut like piped input after a prompt: at 512 KiB,
/// marked for the model, with a notice (read no further than that).
#[test]
fn a_huge_prompt_on_stdin_is_capped_like_piped_input() {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![Reply::text("a"), Reply::text("b"), Reply::text("c")]);
    let huge = "y".repeat(5 * 1024 * 1024);
    for args in [&["-p", "-"][..], &[], &["-p", "review"]] {
        let out = agent(&sandbox, &mock)
            .args(args)
            .write_stdin(huge.clone())
            .output()
            .unwrap();
        assert_success(&out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("was cut at 512 KiB"), "{args:?}: {stderr}");
    }
    for request in mock.requests() {
        assert!(request.raw.len() < 600 * 1024, "{}", request.raw.len());
        let sent = request.messages()[1]["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            sent.contains("[cut at 524288 bytes]"),
            "{}",
            &sent[sent.len() - 60..]
        );
    }
}

#[test]
fn usage_and_configuration_errors_exit_2_with_what_to_do() {
    let sandbox = Sandbox::new();
    sandbox
        .antler()
        .args(["-p", "hi"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("set OPENAI_API_KEY"));
    let mock = MockOpenAi::start(Vec::new());
    agent(&sandbox, &mock)
        .write_stdin("  \n")
        .assert()
        .code(2)
        .stderr(predicates::str::contains("the prompt is empty"));
    agent(&sandbox, &mock)
        .args(["--continue", "-p", "hi"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("no thread to continue"));
    agent(&sandbox, &mock)
        .args(["--resume", "ffffffffffff", "-p", "hi"])
        .assert()
        .code(2);
    assert!(
        mock.requests().is_empty(),
        "no model call for a usage error"
    );
}

#[test]
fn a_provider_error_exits_1_naming_the_endpoint_without_the_key() {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![Reply::error(400, "model `mock-model` does not exist")]);
    let out = agent(&sandbox, &mock).args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&mock.base_url()), "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(!stderr.contains(KEY));
    let log = std::fs::read_to_string(sandbox.log_file()).unwrap_or_default();
    assert!(!log.contains(KEY), "the key is not logged");
}

#[test]
fn rate_limits_server_errors_and_cut_streams_are_retried() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "config.yaml",
        "models:\n  - name: m\n    model: mock-model\n    base_url: $MOCK_URL\n    api_key: $KEY\n    max_retries: 3\n    retry_base_delay_ms: 1\n",
    );
    let text = Reply::text("recovered");
    let Reply::Stream(chunks) = &text else {
        unreachable!()
    };
    let mock = MockOpenAi::start(vec![
        Reply::Status {
            status: 429,
            body: r#"{"error":{"message":"slow down"}}"#.into(),
            retry_after: Some("0".into()),
        },
        Reply::error(500, "boom"),
        Reply::Cut(chunks[..2].to_vec()),
        text.clone(),
    ]);
    let out = sandbox
        .antler()
        .env("MOCK_URL", mock.base_url())
        .env("KEY", KEY)
        .args(["-p", "hi", "--output-format", "stream-json"])
        .output()
        .unwrap();
    assert_success(&out);
    let events = events(&out.stdout);
    let retries: Vec<&Value> = events.iter().filter(|e| e["type"] == "retrying").collect();
    assert_eq!(retries.len(), 3, "{events:?}");
    assert_eq!(events.last().unwrap()["result"], "recovered");
    assert_eq!(mock.requests().len(), 4);
}

#[test]
fn max_turns_and_loops_end_the_run_with_status_1() {
    let sandbox = deferred_sandbox();
    let search = || Reply::tool_calls(&[("c", "tool_search", json!({"query": "echo"}))]);
    let mock = MockOpenAi::start(vec![search(), search()]);
    agent(&sandbox, &mock)
        .args(["-p", "go", "--max-turns", "2"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("--max-turns (2)"));
    let mock = MockOpenAi::start(vec![search(), search()]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "go", "--max-turns", "2", "--output-format", "json"])
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["error_kind"], "turn_limit", "{result}");
    assert_eq!(result["is_error"], true);

    let mock = MockOpenAi::start((0..5).map(|_| search()).collect());
    let out = agent(&sandbox, &mock)
        .args(["-p", "go", "--output-format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["status"], "failed");
    assert_eq!(result["error_kind"], "loop");
    assert!(
        result["errors"][0]
            .as_str()
            .unwrap()
            .contains("loop detected"),
        "{result}"
    );
    // The third identical call ran with a warning for the model.
    let third = &mock.requests()[3];
    let warned = third.messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        warned.contains("3 times with the same arguments"),
        "{warned}"
    );

    // Text output says what the model kept calling; stream-json writes the error to
    // stderr too.
    for format in ["text", "stream-json"] {
        let mock = MockOpenAi::start((0..5).map(|_| search()).collect());
        let out = agent(&sandbox, &mock)
            .args(["-p", "go", "--output-format", format])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(
                "error: loop detected: the model called 'tool_search' 5 times with the same \
                 arguments ({\"query\":\"echo\"})"
            ),
            "{format}: {stderr}"
        );
    }
}

#[test]
fn long_histories_are_summarised_keeping_promotions() {
    let sandbox = deferred_sandbox();
    sandbox.write(
        "config.yaml",
        "tool_search:\n  enabled: true\nsummarization:\n  trigger_tokens: 1\n  keep_messages: 2\n",
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "tool_search", json!({"query": "select:fx_echo"}))]),
        Reply::text("first"),
        Reply::text("SUMMARY OF EARLIER WORK"),
        Reply::text("second"),
    ]);
    agent(&sandbox, &mock)
        .args(["-p", "one"])
        .assert()
        .success();
    agent(&sandbox, &mock)
        .args(["--continue", "-p", "two"])
        .assert()
        .success()
        .stdout("second\n");
    let requests = mock.requests();
    assert!(
        requests[2].tool_names().is_empty(),
        "the summary call binds no tools"
    );
    let after = &requests[3];
    assert_eq!(after.messages()[1]["role"], "user");
    assert!(
        after.messages()[1]["content"]
            .as_str()
            .unwrap()
            .contains("SUMMARY OF EARLIER WORK")
    );
    assert_eq!(
        after.tool_names(),
        ["tool_search", "present_files", "fx_echo"],
        "promotions survive"
    );
}

#[test]
fn threads_are_listed_and_shown() {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![Reply::text("Paris.")]);
    agent(&sandbox, &mock)
        .args(["-p", "Capital of France?"])
        .assert()
        .success();
    let (list, code, _) = sandbox.json(&["threads", "list", "--json"]);
    assert_eq!(code, 0);
    let thread = &list[0];
    assert_eq!(thread["title"], "Capital of France?");
    assert_eq!(thread["message_count"], 2);
    let id = thread["id"].as_str().unwrap();
    sandbox
        .antler()
        .args(["threads", "show", &id[..6]])
        .assert()
        .success()
        .stdout(predicates::str::contains("Capital of France?"))
        .stdout(predicates::str::contains("Paris."));
    sandbox
        .antler()
        .args(["threads", "show", "zzzz"])
        .assert()
        .code(2);
}

#[test]
fn ctrl_c_cancels_saves_and_exits_130() {
    interrupt_saves_and_exits_130(nix::sys::signal::Signal::SIGINT);
}

#[test]
fn sigterm_cancels_saves_and_exits_130_like_ctrl_c() {
    interrupt_saves_and_exits_130(nix::sys::signal::Signal::SIGTERM);
}

fn interrupt_saves_and_exits_130(signal: nix::sys::signal::Signal) {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![Reply::Stall(Vec::new())]);
    let mut child = agent_command(&sandbox, &mock)
        .args(["-p", "wait for it"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    mock.wait_for_requests(1, Duration::from_secs(10));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let status = wait_with_timeout(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(130));
    let (list, _, _) = sandbox.json(&["threads", "list", "--json"]);
    assert_eq!(list[0]["message_count"], 1, "the user message was saved");
}

#[test]
fn a_run_killed_during_a_tool_call_resumes_with_the_call_patched() {
    let sandbox = deferred_sandbox();
    sandbox.write("config.yaml", "tool_search:\n  enabled: false\n");
    let mock = MockOpenAi::start(Vec::new());
    let mut child = sleeping_run(&sandbox, &mock);
    child.kill().unwrap();
    child.wait().unwrap();

    let again = MockOpenAi::start(vec![Reply::text("Recovered.")]);
    agent(&sandbox, &again)
        .args(["--continue", "-p", "go on"])
        .assert()
        .success()
        .stdout("Recovered.\n");
    let request = &again.requests()[0];
    assert_eq!(
        roles(request),
        ["system", "user", "assistant", "tool", "user"]
    );
    let patched = &request.messages()[3];
    assert_eq!(patched["tool_call_id"], "slow");
    assert!(patched["content"].as_str().unwrap().contains("interrupted"));
}

#[test]
fn replay_runs_without_a_model_and_record_writes_what_replay_plays() {
    let sandbox = deferred_sandbox();
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "tool_search", json!({"query": "select:fx_add"}))]),
        Reply::tool_calls(&[("c2", "fx_add", json!({"a": 2, "b": 3}))]),
        Reply::text("2 + 3 = 5"),
    ]);
    agent(&sandbox, &mock)
        .args(["-p", "add 2 and 3", "--record", "turns.jsonl"])
        .assert()
        .success()
        .stdout("2 + 3 = 5\n");
    let recorded = std::fs::read_to_string(sandbox.path().join("turns.jsonl")).unwrap();
    assert_eq!(recorded.lines().count(), 3);

    // No endpoint at all: the replay stands in for the model; tools run for real.
    let out = sandbox
        .antler()
        .args([
            "-p",
            "add 2 and 3",
            "--replay",
            "turns.jsonl",
            "--output-format",
            "json",
        ])
        .output()
        .unwrap();
    assert_success(&out);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["result"], "2 + 3 = 5");
    assert_eq!(result["promoted_tools"], json!(["fx_add"]));
    let (shown, _, _) = sandbox.json(&[
        "threads",
        "show",
        result["thread_id"].as_str().unwrap(),
        "--json",
    ]);
    let tool_result = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["name"] == "fx_add")
        .unwrap()
        .clone();
    assert_eq!(tool_result["content"], "5", "the fixture really ran");
}

#[test]
fn doctor_checks_everything_and_fails_without_a_model() {
    let sandbox = deferred_sandbox();
    let mock = MockOpenAi::start(vec![Reply::text("OK")]);
    let out = agent(&sandbox, &mock)
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{report}");
    let checks: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    let trust = |name: &str| format!("trust: {}", sandbox.path().join(name).display());
    assert_eq!(
        checks,
        [
            trust("config.yaml").as_str(),
            trust("extensions_config.json").as_str(),
            "config.yaml",
            "mcp: fx",
            "tool search",
            "sentence encoder",
            "embedded model",
            "model: mock-model",
            "threads"
        ]
    );
    assert_eq!(mock.requests()[0].body["max_tokens"], 1);
    let search = &report["checks"][4]["detail"];
    assert!(
        search
            .as_str()
            .unwrap()
            .starts_with("tool_search is enabled"),
        "{search}"
    );

    // With no `tool_search` section the doctor says what the default decided and why.
    std::fs::remove_file(sandbox.path().join("config.yaml")).unwrap();
    let (report, _, _) = sandbox.json(&["doctor", "--offline", "--json"]);
    let search = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "tool search")
        .unwrap();
    let detail = search["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("tool_search.enabled is not set (the default is auto); auto: ")
            && detail.contains("MCP tools take about")
            && detail.ends_with("bound"),
        "{detail}"
    );

    let out = sandbox.antler().args(["doctor"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("FAIL") && table.contains("set OPENAI_API_KEY"),
        "{table}"
    );
}

/// `antler -p ... | cat` ends when the output is complete: stdout reaches end of file while
/// antler is still shutting down an MCP server that is slow to exit. The server waits until
/// the test lets it go, which the test does only after end of file, so the order is certain.
#[test]
fn stdout_ends_before_the_mcp_servers_are_shut_down() {
    for format in ["text", "stream-json"] {
        let sandbox = Sandbox::new();
        let release = sandbox.path().join("release");
        let server = fixture_stdio(&[
            "--exit-delay-ms",
            "30000",
            "--exit-release",
            release.to_str().unwrap(),
        ]);
        write_extensions(&sandbox, json!({"fx": server}));
        // The call makes sure the server was started, however lazily.
        let mock = MockOpenAi::start(vec![
            Reply::tool_calls(&[("c1", "fx_echo", json!({"text": "hi"}))]),
            Reply::text("Done."),
        ]);
        let stderr = sandbox.path().join("stderr.txt");
        let mut child = agent_command(&sandbox, &mock)
            .args(["-p", "echo hi", "--output-format", format])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let mut stdout = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        let running = child.try_wait().unwrap().is_none();
        std::fs::write(&release, "").unwrap();
        let status = wait_with_timeout(&mut child, Duration::from_secs(20));
        let stderr = std::fs::read_to_string(&stderr).unwrap();
        assert!(running, "{format}: antler exited before its stdout ended");
        assert_eq!(status.code(), Some(0), "{format}: {stderr}");
        assert!(
            sandbox.path().join("release.seen").exists(),
            "{format}: the server was killed before the test let it go, so stdout ended \
             only when antler gave up waiting for it"
        );
        match format {
            "text" => assert_eq!(stdout, "Done.\n"),
            _ => assert_eq!(
                events(stdout.as_bytes()).last().unwrap()["type"],
                "run_finished"
            ),
        }
    }
}

fn wait_with_timeout(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let guard = std::thread::spawn(move || {
        if rx.recv_timeout(limit).is_err() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    });
    let status = child.wait().unwrap();
    let _ = tx.send(());
    guard.join().unwrap();
    status
}

#[test]
fn a_quirky_local_server_stream_works_end_to_end() {
    // What llama.cpp / Ollama / vLLM style servers send: no ids, no object, float created,
    // reasoning_content, a tool call without arguments, an empty finish_reason, empty usage.
    let sandbox = deferred_sandbox();
    sandbox.write("config.yaml", "tool_search:\n  enabled: false\n");
    let mock = MockOpenAi::start(vec![
        Reply::Stream(vec![
            r#"{"created":1.7e9,"choices":[{"delta":{"reasoning_content":"think "}}]}"#.into(),
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"p1","type":"function","function":{"name":"fx_pid"}}]},"finish_reason":""}]}"#.into(),
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}],"usage":{}}"#.into(),
        ]),
        Reply::Stream(vec![
            r#"{"choices":[{"delta":{"content":"done"},"finish_reason":"stop"}]}"#.into(),
        ]),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "pid?", "--output-format", "stream-json"])
        .output()
        .unwrap();
    assert_success(&out);
    let events = events(&out.stdout);
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "reasoning_delta" && e["text"] == "think ")
    );
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_call_finished")
        .unwrap();
    assert_eq!(finished["name"], "fx_pid");
    assert_eq!(finished["is_error"], false, "{finished}");
    assert_eq!(events.last().unwrap()["result"], "done");
    // The reasoning is not sent back; the call is, with `{}` for its missing arguments.
    let second = &mock.requests()[1];
    let assistant = &second.messages()[2];
    assert!(assistant.get("reasoning_content").is_none());
    assert_eq!(assistant["tool_calls"][0]["function"]["arguments"], "{}");
}

#[test]
fn a_run_that_cannot_start_leaves_no_empty_thread() {
    let sandbox = Sandbox::new();
    sandbox.write("extensions_config.json", "{not json");
    let mock = MockOpenAi::start(Vec::new());
    agent(&sandbox, &mock)
        .args(["-p", "hi"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("extensions_config.json"));
    let (list, code, _) = sandbox.json(&["threads", "list", "--json"]);
    assert_eq!((list, code), (json!([]), 0));
}

#[test]
fn a_tool_list_changed_mid_run_is_bound_before_the_next_model_call() {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    let mock = MockOpenAi::start(vec![
        // Adds `fx_added_tool`; the next model call binds it.
        Reply::tool_calls(&[("c1", "fx_change_tools", json!({}))]),
        // Removes it again, then calls it in the same reply: the second call was made
        // against a tool that is gone by the time it would run.
        Reply::tool_calls(&[
            ("c2", "fx_change_tools", json!({})),
            ("c3", "fx_added_tool", json!({})),
        ]),
        Reply::text("done"),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "change the tools", "--output-format", "stream-json"])
        .output()
        .unwrap();
    assert_success(&out);
    let requests = mock.requests();
    let bound = |i: usize| {
        requests[i]
            .tool_names()
            .contains(&"fx_added_tool".to_string())
    };
    assert!(!bound(0));
    assert!(bound(1), "{:?}", requests[1].tool_names());
    assert!(!bound(2), "{:?}", requests[2].tool_names());
    let results: Vec<Value> = requests[2]
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect();
    assert_eq!(results[1]["content"], "changed");
    let refused = results[2]["content"].as_str().unwrap();
    assert!(
        refused.contains("changed while you were working")
            && refused.contains("`fx_added_tool` is gone")
            && refused.contains("tool_search"),
        "{refused}"
    );
    let events = events(&out.stdout);
    let refused_event = events
        .iter()
        .find(|e| e["type"] == "tool_call_finished" && e["call_id"] == "c3")
        .unwrap();
    assert_eq!(refused_event["is_error"], true);
}

#[test]
fn a_tool_list_changed_mid_run_lapses_the_promotions_of_the_old_catalog() {
    let sandbox = deferred_sandbox();
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[(
            "c1",
            "tool_search",
            json!({"query": "select:fx_change_tools,fx_echo"}),
        )]),
        Reply::tool_calls(&[("c2", "fx_change_tools", json!({}))]),
        Reply::tool_calls(&[("c3", "fx_echo", json!({"text": "x"}))]),
        Reply::text("done"),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "change the tools", "--output-format", "stream-json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let requests = mock.requests();
    assert!(requests[1].tool_names().contains(&"fx_echo".to_string()));
    // The catalog changed: the prompt lists the new tool, the old promotions lapsed.
    assert!(requests[2].system_prompt().contains("fx_added_tool"));
    assert!(!requests[1].system_prompt().contains("fx_added_tool"));
    assert_eq!(
        requests[2].tool_names(),
        ["tool_search", "present_files"],
        "promotions of the old catalog lapse within the run"
    );
    let last = requests[3].messages().last().unwrap().clone();
    assert_eq!(last["tool_call_id"], "c3");
    assert!(
        last["content"].as_str().unwrap().contains("tool_search"),
        "a lapsed tool must be searched again: {last}"
    );
}

/// `listing: servers`: the prompt names the server, not its tools, with its description
/// from the extensions file; a name it never listed is still found by `select:` and runs.
#[test]
fn the_servers_listing_names_servers_and_select_still_finds_every_tool() {
    let sandbox = Sandbox::new();
    let mut fx = fixture_stdio(&[]);
    fx["description"] = json!("Echoes and adds, for tests");
    write_extensions(&sandbox, json!({"fx": fx}));
    sandbox.write(
        "config.yaml",
        "tool_search:\n  enabled: true\n  listing: servers\n",
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "tool_search", json!({"query": "select:fx_echo"}))]),
        Reply::tool_calls(&[("c2", "fx_echo", json!({"text": "hi"}))]),
        Reply::text("done"),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "echo hi"])
        .output()
        .unwrap();
    assert_success(&out);
    let requests = mock.requests();
    let system = requests[0].system_prompt();
    let section = &system[system.find("<available-deferred-tools>").unwrap()..];
    assert!(section.contains("\n- fx ("), "{section}");
    assert!(
        section.contains("tools): Echoes and adds, for tests\n"),
        "{section}"
    );
    assert!(!section.contains("fx_echo"), "no tool names: {section}");
    assert_eq!(requests[2].messages().last().unwrap()["content"], "hi");
}

/// Waits (10 s at most) until `path` has a line; returns its lines.
fn lines_of(path: &std::path::Path) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if !text.is_empty() || std::time::Instant::now() > deadline {
            return text.lines().map(str::to_string).collect();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_interrupted_or_timed_out_mcp_call_is_cancelled_at_the_server() {
    // Ctrl-C during the call.
    let sandbox = Sandbox::new();
    let log = sandbox.path().join("cancelled.log");
    let log_arg = log.display().to_string();
    write_extensions(
        &sandbox,
        json!({"fx": fixture_stdio(&["--cancelled-log", &log_arg])}),
    );
    let mock = MockOpenAi::start(Vec::new());
    let mut child = sleeping_run(&sandbox, &mock);
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    assert_eq!(
        wait_with_timeout(&mut child, Duration::from_secs(10)).code(),
        Some(130)
    );
    let cancelled = lines_of(&log);
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");

    // The call's own timeout.
    let sandbox = Sandbox::new();
    let log = sandbox.path().join("cancelled.log");
    let mut server = fixture_stdio(&["--cancelled-log", &log.display().to_string()]);
    server["tool_timeout_secs"] = json!(1);
    write_extensions(&sandbox, json!({"fx": server}));
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("slow", "fx_sleep", json!({"ms": 60_000}))]),
        Reply::text("gave up"),
    ]);
    agent(&sandbox, &mock)
        .args(["-p", "sleep"])
        .assert()
        .success();
    assert_eq!(lines_of(&log).len(), 1);
    let result = mock.requests()[1].messages().last().unwrap()["content"].clone();
    assert!(
        result.as_str().unwrap().contains("did not answer within"),
        "{result}"
    );
}

#[test]
fn an_mcp_servers_progress_reaches_the_events_of_its_call() {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("nap", "fx_sleep", json!({"ms": 20}))]),
        Reply::text("rested"),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "rest", "--output-format", "stream-json"])
        .output()
        .unwrap();
    assert_success(&out);
    let events = events(&out.stdout);
    let kinds = types(&events);
    let progress = events
        .iter()
        .position(|e| e["type"] == "tool_progress")
        .unwrap_or_else(|| panic!("no tool_progress in {kinds:?}"));
    let update = &events[progress];
    assert_eq!(update["call_id"], "nap");
    assert_eq!(
        (&update["progress"], &update["total"]),
        (&json!(0.0), &json!(20.0))
    );
    assert_eq!(update["message"], "sleeping 20 ms");
    let started = kinds
        .iter()
        .position(|k| *k == "tool_call_started")
        .unwrap();
    let finished = kinds
        .iter()
        .position(|k| *k == "tool_call_finished")
        .unwrap();
    assert!(started < progress && progress < finished, "{kinds:?}");
}

/// `-p` whose model calls `fx_sleep` for a minute, returned once the call has started (the
/// assistant's call is stored before the tool starts).
fn sleeping_run(sandbox: &Sandbox, mock: &MockOpenAi) -> std::process::Child {
    mock.push(Reply::tool_calls(&[(
        "slow",
        "fx_sleep",
        json!({"ms": 60_000}),
    )]));
    let mut child = agent_command(sandbox, mock)
        .args(["-p", "sleep", "--output-format", "stream-json"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let started = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("\"tool_call_started\""));
    assert!(started);
    child
}

#[test]
fn piped_input_follows_a_prompt_and_a_bare_prompt_runs_like_p() {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![Reply::text("a"), Reply::text("b"), Reply::text("c")]);
    agent(&sandbox, &mock)
        .args(["-p", "review this"])
        .write_stdin("diff --git a/x b/x\n+hello\n")
        .assert()
        .success();
    agent(&sandbox, &mock)
        .arg("fix the tests")
        .assert()
        .success()
        .stdout("b\n");
    // A word that names a subcommand is the subcommand.
    sandbox
        .antler()
        .args(["tools", "list", "--json"])
        .assert()
        .success();
    let requests = mock.requests();
    assert_eq!(
        requests[0].messages()[1]["content"],
        "review this\n\n[piped input]\n```\ndiff --git a/x b/x\n+hello\n```"
    );
    assert_eq!(requests[1].messages()[1]["content"], "fix the tests");
}

#[test]
fn cd_runs_as_if_started_in_the_folder() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.path().join("sub")).unwrap();
    sandbox.write(
        "sub/extensions_config.json",
        &json!({"mcpServers": {"fx": fixture_stdio(&[])}}).to_string(),
    );
    let (here, _, _) = sandbox.json(&["tools", "list", "--json"]);
    assert!(!here.to_string().contains("fx_echo"));
    let (there, _, _) = sandbox.json(&["-C", "sub", "tools", "list", "--json"]);
    assert!(there.to_string().contains("fx_echo"), "{there}");
    sandbox
        .antler()
        .args(["-C", "no/such/dir", "tools", "list"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("error: -C no/such/dir:"));
}

#[test]
fn output_last_message_writes_the_final_answer() {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![Reply::text("The answer.")]);
    let file = sandbox.path().join("answer.txt");
    agent(&sandbox, &mock)
        .args([
            "-p",
            "q",
            "--output-format",
            "json",
            "--output-last-message",
        ])
        .arg(&file)
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "The answer.");
    // A folder that is not there is found before the run, not after it.
    agent(&sandbox, &mock)
        .args(["-p", "q", "--output-last-message", "no/such/dir/a.txt"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--output-last-message no/such/dir/a.txt",
        ));
    assert_eq!(mock.requests().len(), 1);
}

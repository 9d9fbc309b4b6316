//! Hostile input through the real binary: a scripted model (standing in for a prompt
//! injection) and hostile MCP servers try what the README's security model says they
//! cannot do.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::mock_openai::{MockOpenAi, Reply};
use crate::support::*;

/// A run is never allowed to hang: this is a guard, not a synchronisation.
const GUARD: Duration = Duration::from_secs(30);

/// The file tools, by name, as config.yaml lines.
fn file_tools(names: &[&str]) -> String {
    let mut text = String::from("tools:\n");
    for name in names {
        text.push_str(&format!(
            "  - {{name: {name}, use: antler.sandbox:{name}}}\n"
        ));
    }
    text
}

/// Runs `-p` with `--output-format json` and returns the result (the run must succeed).
fn run_json(sandbox: &Sandbox, mock: &MockOpenAi, prompt: &str) -> Value {
    let out = agent(sandbox, mock)
        .args(["-p", prompt, "--output-format", "json"])
        .timeout(GUARD)
        .output()
        .unwrap();
    assert_success(&out);
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The tool results the model was sent in request `n`, in order.
fn tool_results(mock: &MockOpenAi, n: usize) -> Vec<String> {
    mock.requests()[n]
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn outputs_of(sandbox: &Sandbox, thread: &str) -> PathBuf {
    sandbox.path().join("xdg-data/antler/outputs").join(thread)
}

#[test]
fn a_hostile_tool_name_never_becomes_a_path() {
    let sandbox = Sandbox::new();
    sandbox.write("config.yaml", "tool_output:\n  max_chars: 40\n");
    let target = sandbox.path().join("planted");
    std::fs::create_dir(&target).unwrap();
    let hostile = format!("/./././{}/PWNED", target.display());
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("../../x", &hostile, json!({}))]),
        Reply::text("done"),
    ]);
    let result = run_json(&sandbox, &mock, "go");
    assert_eq!(
        std::fs::read_dir(&target).unwrap().count(),
        0,
        "nothing was written where the name pointed"
    );
    let thread = result["thread_id"].as_str().unwrap();
    let saved: Vec<String> = std::fs::read_dir(outputs_of(&sandbox, thread))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert!(
        saved[0].ends_with("_PWNED-______x.txt") && !saved[0].contains('/'),
        "{saved:?}"
    );
    let seen = &tool_results(&mock, 1)[0];
    assert!(
        seen.contains(&outputs_of(&sandbox, thread).display().to_string()),
        "{seen}"
    );
}

#[test]
fn a_thread_reads_only_its_own_saved_outputs() {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    sandbox.write(
        "config.yaml",
        &format!(
            "tool_output:\n  max_chars: 250\n{}",
            file_tools(&["read_file"])
        ),
    );
    let long = "secret-of-thread-one ".repeat(20);
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("e", "fx_echo", json!({"text": long}))]),
        Reply::text("saved"),
    ]);
    let first = run_json(&sandbox, &mock, "one");
    let theirs = outputs_of(&sandbox, first["thread_id"].as_str().unwrap()).join("fx_echo-e.txt");
    assert!(theirs.is_file());

    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("e", "fx_echo", json!({"text": "x".repeat(300)}))]),
        Reply::tool_calls(&[
            ("a", "read_file", json!({"path": theirs})),
            (
                "b",
                "read_file",
                json!({"path": "xdg-data/antler/threads.db"}),
            ),
        ]),
        Reply::text("done"),
    ]);
    let second = run_json(&sandbox, &mock, "two");
    let mine = outputs_of(&sandbox, second["thread_id"].as_str().unwrap()).join("fx_echo-e.txt");
    let mock_own = MockOpenAi::start(vec![
        Reply::tool_calls(&[("r", "read_file", json!({"path": mine}))]),
        Reply::text("read"),
    ]);
    let results = tool_results(&mock, 2);
    let results = &results[1..];
    assert!(
        results[0].contains("belongs to antler itself") && !results[0].contains("thread-one"),
        "another thread's output: {}",
        results[0]
    );
    assert!(
        results[1].contains("belongs to antler itself"),
        "{}",
        results[1]
    );

    let out = agent(&sandbox, &mock_own)
        .args([
            "--resume",
            second["thread_id"].as_str().unwrap(),
            "-p",
            "again",
        ])
        .timeout(GUARD)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let own = &tool_results(&mock_own, 1).last().cloned().unwrap();
    assert!(
        own.starts_with("     1\tx") && own.contains(&"x".repeat(150)),
        "its own output is readable: {own}"
    );
}

#[test]
fn secret_files_are_refused_and_hidden_from_listings() {
    let sandbox = Sandbox::new();
    sandbox.write(".env", &format!("OPENAI_API_KEY={TEST_API_KEY}\n"));
    std::fs::create_dir_all(sandbox.path().join("keys")).unwrap();
    sandbox.write("keys/deploy.pem", "-----BEGIN PRIVATE KEY-----\n");
    sandbox.write("app.py", "API_KEY = os.environ['API_KEY']\n");
    sandbox.write(
        "config.yaml",
        &file_tools(&[
            "read_file",
            "grep",
            "glob",
            "ls",
            "write_file",
            "str_replace",
        ]),
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[
            ("r", "read_file", json!({"path": ".env"})),
            ("g", "grep", json!({"pattern": "API_KEY"})),
            ("l", "glob", json!({"pattern": "**/*"})),
            ("s", "ls", json!({})),
            ("p", "read_file", json!({"path": "keys/../keys/deploy.pem"})),
            (
                "w",
                "str_replace",
                json!({"path": ".env", "old_str": "sk", "new_str": "x"}),
            ),
        ]),
        Reply::text("done"),
    ]);
    let result = run_json(&sandbox, &mock, "find the key");
    let results = tool_results(&mock, 1);
    let all = results.join("\n");
    assert!(!all.contains(TEST_API_KEY), "{all}");
    assert!(!all.contains("BEGIN PRIVATE KEY"), "{all}");
    assert!(results[0].contains("secret file"), "{}", results[0]);
    assert_eq!(
        results[1], "app.py:1:API_KEY = os.environ['API_KEY']\n(2 files hidden: secret)",
        "antler's own data (the log, the data folder) is left out silently"
    );
    assert!(
        results[2].contains("app.py") && results[2].contains("hidden: secret"),
        "{}",
        results[2]
    );
    assert!(
        results[3].contains(".env  (hidden: secret)"),
        "{}",
        results[3]
    );
    assert!(results[4].contains("secret file"), "{}", results[4]);
    assert!(
        results[5].contains("secret file") || results[5].contains("configures antler itself"),
        "{}",
        results[5]
    );
    let shown = sandbox.json(&[
        "threads",
        "show",
        result["thread_id"].as_str().unwrap(),
        "--json",
    ]);
    assert!(!shown.0.to_string().contains(TEST_API_KEY));
}

#[test]
fn secret_values_are_redacted_from_results_events_and_the_store() {
    let sandbox = Sandbox::new();
    let mut fx = fixture_stdio(&[]);
    fx["env"] = json!({
        "GITHUB_TOKEN": "${GITHUB_TOKEN}",
        "COPY_OF_MODEL_KEY": TEST_API_KEY,
    });
    write_extensions(&sandbox, json!({"fx": fx}));
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[
            ("a", "fx_env", json!({"name": "GITHUB_TOKEN"})),
            ("b", "fx_env", json!({"name": "COPY_OF_MODEL_KEY"})),
            ("c", "fx_env", json!({"name": "UNRELATED_API_KEY"})),
            ("d", "fx_env", json!({"name": "PATH"})),
        ]),
        Reply::text("done"),
    ]);
    let out = agent(&sandbox, &mock)
        .env("GITHUB_TOKEN", "ghp_live_0123456789")
        .env("UNRELATED_API_KEY", "sk-unrelated-0123456789")
        .args(["-p", "leak", "--output-format", "stream-json"])
        .timeout(GUARD)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let results = tool_results(&mock, 1);
    assert_eq!(results[..2], ["[redacted]", "[redacted]"]);
    assert_eq!(
        results[2], "",
        "a server inherits no secrets it was not given"
    );
    assert!(!results[3].is_empty(), "it inherits PATH");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[redacted]"), "{stdout}");
    for secret in ["ghp_live_0123456789", TEST_API_KEY] {
        assert!(!stdout.contains(secret), "events: {stdout}");
        let events = events(&out.stdout);
        let thread = events.last().unwrap()["thread_id"]
            .as_str()
            .unwrap()
            .to_string();
        let shown = sandbox.json(&["threads", "show", &thread, "--json"]);
        assert!(!shown.0.to_string().contains(secret), "store: {}", shown.0);
    }
}

#[test]
fn web_fetch_refuses_private_addresses_unless_allowed() {
    let sandbox = Sandbox::new();
    sandbox.write("config.yaml", &file_tools(&["web_fetch"]));
    let mock = MockOpenAi::start(Vec::new());
    let local = mock.base_url().replace("/v1", "/");
    let port = local
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let by_name = format!("http://localhost:{port}/");
    for reply in [
        Reply::tool_calls(&[
            ("a", "web_fetch", json!({"url": local})),
            ("b", "web_fetch", json!({"url": by_name})),
            (
                "c",
                "web_fetch",
                json!({"url": "http://169.254.169.254/latest/meta-data/"}),
            ),
            (
                "d",
                "web_fetch",
                json!({"url": "http://[::ffff:127.0.0.1]:1/"}),
            ),
        ]),
        Reply::text("done"),
    ] {
        mock.push(reply);
    }
    run_json(&sandbox, &mock, "fetch");
    let results = tool_results(&mock, 1);
    for (result, kind) in results
        .iter()
        .zip(["loopback", "loopback", "link-local", "loopback"])
    {
        assert!(
            result.starts_with("Error: refused to fetch")
                && result.contains(kind)
                && result.contains("sandbox.web_fetch.allow_private_networks: true"),
            "{result}"
        );
    }

    sandbox.write(
        "config.yaml",
        &format!(
            "sandbox:\n  web_fetch:\n    allow_private_networks: true\n{}",
            file_tools(&["web_fetch"])
        ),
    );
    let mock_allowed = MockOpenAi::start(Vec::new());
    let local = mock_allowed.base_url().replace("/v1", "/");
    mock_allowed.push(Reply::tool_calls(&[(
        "a",
        "web_fetch",
        json!({"url": local}),
    )]));
    mock_allowed.push(Reply::text("done"));
    run_json(&sandbox, &mock_allowed, "fetch");
    let result = &tool_results(&mock_allowed, 1)[0];
    assert!(
        !result.contains("refused"),
        "reached with the opt-in: {result}"
    );
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn named_pipes_are_refused_at_once_by_every_file_tool() {
    let sandbox = Sandbox::new();
    mkfifo(&sandbox.path().join("pipe"));
    sandbox.write(
        "config.yaml",
        &file_tools(&["read_file", "write_file", "str_replace", "grep"]),
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[
            ("r", "read_file", json!({"path": "pipe"})),
            ("w", "write_file", json!({"path": "pipe", "content": "x"})),
            (
                "s",
                "str_replace",
                json!({"path": "pipe", "old_str": "a", "new_str": "b"}),
            ),
            ("g", "grep", json!({"pattern": "a", "path": "pipe"})),
            ("h", "grep", json!({"pattern": "nothing-matches-this"})),
        ]),
        Reply::text("done"),
    ]);
    run_json(&sandbox, &mock, "read the pipe");
    let results = tool_results(&mock, 1);
    for result in &results[..4] {
        assert!(
            result.contains("a named pipe, not a regular file"),
            "{result}"
        );
    }
    assert!(results[4].starts_with("No matches"), "{}", results[4]);
}

/// A stdio server started through a wrapper that leaves a helper in its process group;
/// the helper's pid lands in `helper.pid`.
fn wrapped_fixture(sandbox: &Sandbox) -> Value {
    let script = format!(
        "sleep 300 & echo $! > '{}'; exec '{}'",
        sandbox.path().join("helper.pid").display(),
        fixture_bin().display()
    );
    json!({"command": "sh", "args": ["-c", script]})
}

fn helper_running(sandbox: &Sandbox) -> bool {
    let pid = std::fs::read_to_string(sandbox.path().join("helper.pid")).unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
    stat.ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next().map(String::from))
        })
        .is_some_and(|state| state != "Z" && state != "X")
}

#[test]
fn an_mcp_servers_whole_process_group_ends_with_the_run() {
    for last_call in ["fx_echo", "fx_crash"] {
        let sandbox = Sandbox::new();
        write_extensions(&sandbox, json!({"fx": wrapped_fixture(&sandbox)}));
        let args = if last_call == "fx_echo" {
            json!({"text": "hi"})
        } else {
            json!({})
        };
        let mock = MockOpenAi::start(vec![
            Reply::tool_calls(&[("a", last_call, args)]),
            Reply::text("done"),
        ]);
        run_json(&sandbox, &mock, "call");
        assert!(
            !helper_running(&sandbox),
            "after {last_call}: the helper outlived the run"
        );
    }
}

#[test]
fn unreadable_mcp_answers_fail_their_call_at_once() {
    for (mode, expected) in [
        (
            "invalid-utf8",
            "answered the call to `echo`, but its answer cannot be read: it is not valid UTF-8",
        ),
        (
            "wrong-id",
            "broke the protocol during the call to `echo` (it answered request 987654, which antler never sent",
        ),
        ("deep-json", "recursion limit exceeded"),
    ] {
        let sandbox = Sandbox::new();
        let mut server = fixture_stdio(&["--hostile", mode]);
        server["tool_timeout_secs"] = json!(600);
        write_extensions(&sandbox, json!({"bad": server}));
        let mock = MockOpenAi::start(vec![
            Reply::tool_calls(&[("a", "bad_echo", json!({}))]),
            Reply::text("done"),
        ]);
        let started = std::time::Instant::now();
        run_json(&sandbox, &mock, "call it");
        assert!(started.elapsed() < GUARD);
        let result = &tool_results(&mock, 1)[0];
        assert!(
            result.starts_with("Error: MCP server `bad`") && result.contains(expected),
            "{mode}: {result}"
        );
    }
    // `{}` is an empty result, not a broken call.
    let sandbox = Sandbox::new();
    write_extensions(
        &sandbox,
        json!({"bad": fixture_stdio(&["--hostile", "empty-result"])}),
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("a", "bad_echo", json!({}))]),
        Reply::text("done"),
    ]);
    run_json(&sandbox, &mock, "call it");
    assert_eq!(tool_results(&mock, 1)[0], "");
}

#[test]
fn bad_config_values_are_reported_with_file_line_and_key() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "config.yaml",
        "models:\n  - name: m\n    model: mock-model\n    temprature: 0.2\n    max_retires: 3\ntools:\n  - {name: grep, use: antler.sandbox:grep, max_reslts: 5}\n",
    );
    sandbox.write(
        "extensions_config.json",
        "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\", \"args\": \"x\"},\n    \"b\": {\"command\": \"x\", \"startup_timeout_secs\": \"ten\"},\n    \"c\": {\"command\": \"x\", \"env\": {\"N\": 5}}\n  }\n}\n",
    );
    let out = sandbox
        .antler()
        .args(["mcp", "list", "--json"])
        .timeout(GUARD)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let config = sandbox.path().join("config.yaml").display().to_string();
    let extensions = sandbox
        .path()
        .join("extensions_config.json")
        .display()
        .to_string();
    for expected in [
        format!(
            "{config}:4:5: unknown key `models[0].temprature` is ignored; did you mean `temperature`?"
        ),
        format!(
            "{config}:5:5: unknown key `models[0].max_retires` is ignored; did you mean `max_retries`?"
        ),
        format!("{config}:7:44: tools[0].max_reslts: `antler.sandbox:grep` has no such setting"),
        format!(
            "{extensions}:3:32: mcpServers.a.args: invalid type: string \"x\", expected a sequence"
        ),
        format!(
            "{extensions}:4:48: mcpServers.b.startup_timeout_secs: invalid type: string \"ten\""
        ),
        format!(
            "{extensions}:5:37: mcpServers.c.env.N: invalid type: integer `5`, expected a string"
        ),
    ] {
        assert!(
            stderr.contains(&expected),
            "missing {expected:?} in:\n{stderr}"
        );
    }

    sandbox.write("extensions_config.json", "{\n  \"mcpServers\": [\n  ]\n}\n");
    let out = sandbox.antler().args(["mcp", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{extensions}:2:14: mcpServers: expected an object mapping server names to settings, found an array"
        )),
        "{stderr}"
    );
}

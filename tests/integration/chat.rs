//! The chat end to end: the real binary in a pseudo-terminal (util-linux `script`), a
//! prompt typed on its keyboard, the answer read off its screen (a `vt100` emulator).

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use crate::mock_openai::{MockOpenAi, Reply};
use crate::support::*;

/// A running chat: its keyboard, its screen, and the process.
struct Terminal {
    child: Child,
    keys: ChildStdin,
    output: Receiver<Vec<u8>>,
    screen: vt100::Parser,
}

impl Terminal {
    fn start(sandbox: &Sandbox, mock: &MockOpenAi) -> Self {
        Self::start_with(sandbox, mock, "")
    }

    /// The chat with more arguments (already quoted for `sh`).
    fn start_with(sandbox: &Sandbox, mock: &MockOpenAi, args: &str) -> Self {
        let antler = env!("CARGO_BIN_EXE_antler");
        let mut child = sandbox
            .command_for("script")
            .args([
                "-qfec",
                &format!("stty cols 80 rows 24; exec '{antler}' -m mock-model {args}"),
                "/dev/null",
            ])
            .env("OPENAI_BASE_URL", mock.base_url())
            .env("OPENAI_API_KEY", "sk-test")
            .env("TERM", "xterm-256color")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("util-linux `script` runs antler in a pseudo-terminal");
        let keys = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (tx, output) = channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            keys,
            output,
            screen: vt100::Parser::new(
                std::num::NonZeroU16::new(24).unwrap(),
                std::num::NonZeroU16::new(80).unwrap(),
                0,
            ),
        }
    }

    fn contents(&self) -> String {
        self.screen.screen().contents()
    }

    /// Feeds output to the screen until `text` is on it (10 s at most).
    fn wait_for(&mut self, text: &str) {
        self.wait_until(&format!("`{text}` to appear"), |screen| {
            screen.contains(text)
        });
    }

    /// Feeds output to the screen until `text` is no longer on it (10 s at most).
    fn wait_gone(&mut self, text: &str) {
        self.wait_until(&format!("`{text}` to go"), |screen| !screen.contains(text));
    }

    fn wait_until(&mut self, what: &str, done: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done(&self.contents()) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.feed(&bytes),
                Err(_) => panic!(
                    "waited in vain for {what}; the screen:\n{}",
                    self.contents()
                ),
            }
        }
    }

    /// Shows `bytes` on the screen and answers the queries a real terminal answers: the
    /// cursor position (`CSI 6n`) and the device attributes (`CSI c`, which also tells
    /// crossterm there is no kitty keyboard protocol).
    fn feed(&mut self, bytes: &[u8]) {
        self.screen.process(bytes);
        let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        if has(b"\x1b[6n") {
            let (row, col) = self.screen.screen().cursor_position();
            self.type_keys(&format!("\x1b[{};{}R", row + 1, col + 1));
        }
        if has(b"\x1b[c") {
            self.type_keys("\x1b[?62;22c");
        }
    }

    fn type_keys(&mut self, keys: &str) {
        self.keys.write_all(keys.as_bytes()).unwrap();
        self.keys.flush().unwrap();
    }

    /// Types `/quit` and waits until the process has ended; returns its status.
    fn quit(mut self) -> std::process::ExitStatus {
        self.type_keys("/quit\r");
        self.wait_exit()
    }

    /// Waits until the process has ended, showing what it wrote; returns its status.
    fn wait_exit(&mut self) -> std::process::ExitStatus {
        // The output ends when the process does.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.feed(&bytes),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("the chat did not quit"),
            }
        }
        self.child.wait().unwrap()
    }
}

#[test]
fn a_prompt_typed_in_the_chat_is_answered_on_screen() {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![Reply::text("The answer is **42**.")]);
    let mut term = Terminal::start(&sandbox, &mock);
    term.wait_for("mock-model");
    term.type_keys("what is the answer?");
    term.wait_for("what is the answer?");
    term.type_keys("\r");
    term.wait_for("The answer is 42.");
    // The run is over (and its thread saved) once the status line stops saying so.
    term.wait_gone("esc cancels");
    let request = &mock.requests()[0];
    assert_eq!(
        request.messages().last().unwrap()["content"],
        "what is the answer?"
    );
    let status = term.quit();
    assert!(status.success(), "{status:?}");
    let (list, _, _) = sandbox.json(&["threads", "list", "--json"]);
    assert_eq!(list[0]["message_count"], 2, "the thread was saved");
}

#[test]
fn the_chat_asks_before_using_untrusted_project_files() {
    let sandbox = Sandbox::new();
    let marker = sandbox.path().join("planted-ran");
    write_extensions(
        &sandbox,
        serde_json::json!({
            "planted": {"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())]}
        }),
    );
    let trust_store = sandbox.path().join("xdg-data/antler/trust.json");
    let mock = MockOpenAi::start(Vec::new());

    // No: the chat starts without the file, and nothing it names runs.
    let mut term = Terminal::start(&sandbox, &mock);
    term.wait_for("Trust them?");
    assert!(
        term.contents()
            .contains("MCP server `planted`: runs `sh -c")
    );
    term.type_keys("n\r");
    term.wait_for("mock-model");
    assert!(term.quit().success());
    assert!(!marker.exists(), "the untrusted server was started");
    assert!(!trust_store.exists());

    // Yes: the content is trusted from now on, and the next start does not ask.
    let mut term = Terminal::start(&sandbox, &mock);
    term.wait_for("Trust them?");
    term.type_keys("y\r");
    term.wait_for("mock-model");
    assert!(term.quit().success());
    let stored = std::fs::read_to_string(&trust_store).unwrap();
    assert!(stored.contains("extensions_config.json"), "{stored}");
    let out = sandbox
        .antler_untrusted()
        .args(["doctor", "--offline", "--json"])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let trust = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"].as_str().unwrap().starts_with("trust: "))
        .unwrap()
        .clone();
    assert_eq!(
        (trust["status"].as_str(), trust["detail"].as_str()),
        (Some("ok"), Some("trusted")),
        "{report}"
    );
}

/// A stdio server that starts only once the test writes a line to its fifo (so the test
/// decides when start-up ends, without sleeping), and one that cannot start.
fn late_and_broken(sandbox: &Sandbox) -> std::path::PathBuf {
    let fifo = sandbox.path().join("go");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let script = format!(
        "read line < '{}'; exec '{}'",
        fifo.display(),
        fixture_bin().display()
    );
    let servers = serde_json::json!({"mcpServers": {
        "late": {"command": "sh", "args": ["-c", script]},
        "broken": {"command": "/nonexistent/antler-test-no-such-server"}
    }});
    sandbox.write("servers.json", &servers.to_string());
    fifo
}

#[test]
fn the_screen_shows_start_up_and_a_message_typed_meanwhile_is_sent_when_ready() {
    let sandbox = Sandbox::new();
    let fifo = late_and_broken(&sandbox);
    let mock = MockOpenAi::start(vec![Reply::text("Started and answered.")]);
    let mut term = Terminal::start_with(&sandbox, &mock, "--extensions servers.json");
    term.wait_for("MCP server `broken` failed to start");
    term.wait_for("starting MCP servers: 0 ready, 1 failed");
    term.type_keys("early question\r");
    term.wait_for("queued  early question");
    assert!(
        mock.requests().is_empty(),
        "nothing was sent before the session was ready"
    );
    // Blocks until the server's shell opens the fifo: then `late` starts.
    std::fs::write(&fifo, "go\n").unwrap();
    term.wait_for("Started and answered.");
    assert!(!term.contents().contains("starting MCP servers"));
    assert_eq!(
        mock.requests()[0].messages().last().unwrap()["content"],
        "early question"
    );
    let status = term.quit();
    assert!(status.success(), "{status:?}");
}

#[test]
fn ctrl_c_while_servers_start_exits_130_and_gives_the_terminal_back() {
    let sandbox = Sandbox::new();
    let _fifo = late_and_broken(&sandbox);
    let mock = MockOpenAi::start(Vec::new());
    let mut term = Terminal::start_with(&sandbox, &mock, "--extensions servers.json");
    term.wait_for("starting MCP servers");
    term.type_keys("\x03");
    let status = term.wait_exit();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(
        !term.screen.screen().alternate_screen(),
        "the screen was given back"
    );
}

#[test]
fn an_unusable_extensions_file_is_reported_with_exit_2_and_the_terminal_back() {
    let sandbox = Sandbox::new();
    sandbox.write("servers.json", "{ not json");
    let mock = MockOpenAi::start(Vec::new());
    let mut term = Terminal::start_with(&sandbox, &mock, "--extensions servers.json");
    let status = term.wait_exit();
    assert_eq!(status.code(), Some(2), "a configuration error, as before");
    assert!(!term.screen.screen().alternate_screen());
    assert!(term.contents().contains("error: "), "{}", term.contents());
}

#[test]
fn a_stale_manifest_that_cannot_be_refreshed_is_a_notice() {
    let sandbox = Sandbox::new();
    // The entry stays the same (so does its manifest); whether it can start does not.
    let gate = sandbox.write("ok", "");
    let script = format!("test -f ok && exec '{}'", fixture_bin().display());
    let servers = serde_json::json!({"mcpServers": {
        "gated": {"command": "sh", "args": ["-c", script], "start": "lazy", "manifest_max_age_secs": 0}
    }});
    sandbox.write("servers.json", &servers.to_string());
    let out = sandbox
        .antler()
        .args(["--extensions", "servers.json", "mcp", "refresh"])
        .output()
        .unwrap();
    assert_success(&out);
    std::fs::remove_file(gate).unwrap();
    let mock = MockOpenAi::start(Vec::new());
    let mut term = Terminal::start_with(&sandbox, &mock, "--extensions servers.json");
    term.wait_for("could not be started to refresh its cached tool list");
    assert!(
        term.contents().contains("MCP server `gated`"),
        "{}",
        term.contents()
    );
    assert!(term.quit().success());
}

/// A sandbox whose fixture server offers prompts and the eliciting `ask_user` tool, with
/// tool search off (the tool is bound).
fn features_sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    write_extensions(
        &sandbox,
        serde_json::json!({"fx": fixture_stdio(&["--prompts", "--elicitation"])}),
    );
    sandbox.write("config.yaml", "tool_search:\n  enabled: false\n");
    sandbox
}

#[test]
fn a_server_prompt_runs_as_a_slash_command_and_asks_for_missing_arguments() {
    let sandbox = features_sandbox();
    let mock = MockOpenAi::start(vec![Reply::text("Hello, Ada!"), Reply::text("Hi Bo.")]);
    let mut term = Terminal::start_with(&sandbox, &mock, "--trust-project");
    term.wait_for("mock-model");
    // The popup offers it with its arguments.
    term.type_keys("/fx:g");
    term.wait_for("/fx:greet <name> [style]");
    term.type_keys("reet Ada warmly\r");
    term.wait_for("Hello, Ada!");
    term.wait_gone("esc cancels");
    assert_eq!(
        mock.requests()[0].messages().last().unwrap()["content"],
        "Greet Ada warmly.\n\nKeep it to one line."
    );
    // Without its required argument, a form asks for it.
    term.type_keys("/fx:greet\r");
    term.wait_for("/fx:greet");
    term.wait_for("name *:");
    term.type_keys("Bo\r");
    term.wait_for("Hi Bo.");
    term.wait_gone("esc cancels");
    assert_eq!(
        mock.requests()[1].messages().last().unwrap()["content"],
        "Greet Bo plainly.\n\nKeep it to one line."
    );
    let status = term.quit();
    assert!(status.success(), "{status:?}");
}

#[test]
fn an_elicitation_is_answered_in_a_form_and_its_values_reach_the_server() {
    let sandbox = features_sandbox();
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "fx_ask_user", serde_json::json!({}))]),
        Reply::text("Nice to meet you."),
    ]);
    let mut term = Terminal::start_with(
        &sandbox,
        &mock,
        "--trust-project --permission-mode allow-all",
    );
    term.wait_for("mock-model");
    term.type_keys("who am I?\r");
    term.wait_for("MCP server `fx` asks");
    term.wait_for("Who are you?");
    // The form takes keys after a pause (typed-ahead keys do not answer a server).
    term.wait_for("Enter send");
    // Enter with the required name empty is refused, in words.
    term.type_keys("\r");
    term.wait_for("Name is required");
    term.type_keys("Ada\t42\r");
    term.wait_for("Nice to meet you.");
    term.wait_gone("esc cancels");
    let result = mock.requests()[1].tool_result("c1");
    assert_eq!(
        result,
        r#"accepted: {"name":"Ada","age":42,"colour":"green","subscribe":false}"#
    );
    let status = term.quit();
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_call_that_needs_approval_waits_for_the_dialog_and_always_is_kept() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "config.yaml",
        "sandbox:\n  allow_host_bash: true\ntools:\n  - {name: bash, use: antler.sandbox:bash}\n",
    );
    let touch = |id: &str, file: &str| {
        Reply::tool_calls(&[(
            id,
            "bash",
            serde_json::json!({"command": format!("touch {file}")}),
        )])
    };
    let mock = MockOpenAi::start(vec![
        touch("c1", "first"),
        Reply::text("Touched once."),
        touch("c2", "second"),
        Reply::text("Touched twice."),
    ]);
    let mut term = Terminal::start_with(&sandbox, &mock, "--trust-project");
    term.wait_for("mock-model");
    term.type_keys("touch it\r");
    term.wait_for("Allow this call?");
    term.wait_for("touch first");
    assert!(
        !sandbox.path().join("first").exists(),
        "ran before the answer"
    );
    // The dialog takes keys once it says which (keys typed ahead are not answers).
    term.wait_for("y once · a always");
    term.type_keys("a");
    term.wait_for("Touched once.");
    assert!(sandbox.path().join("first").exists());
    // `touch` commands are allowed from now on in this project: no dialog.
    term.type_keys("again\r");
    term.wait_for("Touched twice.");
    assert!(sandbox.path().join("second").exists());
    let approvals =
        std::fs::read_to_string(sandbox.path().join("xdg-data/antler/approvals.json")).unwrap();
    assert!(approvals.contains("\"touch\""), "{approvals}");
    let status = term.quit();
    assert!(status.success(), "{status:?}");
}

#[test]
fn resume_without_an_id_opens_the_thread_picker() {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![Reply::text("Stored answer."), Reply::text("Again.")]);
    agent(&sandbox, &mock)
        .args(["-p", "remember the lighthouse"])
        .assert()
        .success();
    let mut term = Terminal::start_with(&sandbox, &mock, "--resume");
    term.wait_for("Resume a thread");
    term.wait_for("remember the lighthouse");
    term.type_keys("\r");
    term.wait_for("Stored answer.");
    term.type_keys("and now?\r");
    term.wait_for("Again.");
    let sent = mock.requests()[1].messages().len();
    assert!(sent >= 3, "the resumed history was sent ({sent} messages)");
    let status = term.quit();
    assert!(status.success(), "{status:?}");
    // With a prompt, an id is needed.
    agent(&sandbox, &mock)
        .args(["--resume", "-p", "hi"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--resume without an id"));
}

#[test]
fn at_attaches_a_workspace_file_and_an_mcp_resource_to_the_message() {
    let sandbox = Sandbox::new();
    write_extensions(
        &sandbox,
        serde_json::json!({"fx": fixture_stdio(&["--resources"])}),
    );
    sandbox.write("notes.md", "Remember the milk.");
    sandbox.write(".env", "SECRET=1");
    let mock = MockOpenAi::start(vec![Reply::text("Both read.")]);
    let mut term = Terminal::start_with(&sandbox, &mock, "--trust-project");
    term.wait_for("mock-model");
    term.type_keys("see @");
    term.wait_for("Attach a file or an MCP resource");
    term.wait_for("@fx:fixture://notes/hello.txt");
    assert!(
        !term.contents().contains("@.env"),
        "secret files are not offered"
    );
    term.type_keys("notes.md\r");
    term.wait_for("see @notes.md");
    term.type_keys("and @");
    term.wait_for("@fx:fixture://notes/hello.txt");
    term.type_keys("hello\r");
    term.wait_for("and @fx:fixture://notes/hello.txt");
    term.type_keys("\r");
    term.wait_for("Both read.");
    term.wait_gone("esc cancels");
    let sent = mock.requests()[0].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        sent.starts_with("see @notes.md and @fx:fixture://notes/hello.txt"),
        "{sent}"
    );
    assert!(
        sent.contains("[attached: file \"notes.md\"]\n```\nRemember the milk.\n```"),
        "{sent}"
    );
    assert!(
        sent.contains("of server `fx`]\n```\nHello from the fixture's note.\n```"),
        "{sent}"
    );
    let status = term.quit();
    assert!(status.success(), "{status:?}");
}

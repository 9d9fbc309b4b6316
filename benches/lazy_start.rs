//! The figures of issue 12 (servers that start on first use), printed as a table and one
//! JSON line:
//!
//! 1. `antler -p` from just before `spawn()` to the first chat-completions request, with
//!    (a) no MCP server, (b) ten stdio servers that take 2 s to answer `initialize` (the
//!    fixture with `--startup-delay-ms 2000`) and warm manifests, deferred, and (c) the
//!    same ten servers without manifests, for reference. Goal: (b) within 2× of (a).
//! 2. Peak RSS of run (b): `getrusage(RUSAGE_CHILDREN)` read in a small copy of this
//!    process that spawns antler and waits for nothing else (a child's `ru_maxrss` starts
//!    at its spawner's resident set).
//! 3. The first call of an idle server's tool, per transport (stdio, streamable HTTP,
//!    SSE): from the model's tool call leaving the mock to the next request arriving,
//!    which includes starting (or connecting to) the server, the handshake, the listing
//!    and the call itself.
//!
//! Run by `cargo test` (no `--bench` argument) it takes one sample each, as a smoke check.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mock_openai/mod.rs"]
mod mock_openai;
mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use mock_openai::{MockOpenAi, Reply};
use serde_json::{Value, json};
use support::{Stats, antler_in, fixture_bin, round3, spawner_rss_kb, stats};

/// Set (to the sandbox directory) in the copy of this process that spawns the measured
/// run; the mock's URL comes in [`SPAWN_BASE_URL`].
const SPAWN_DIR: &str = "ANTLER_LAZY_SPAWN_DIR";
const SPAWN_BASE_URL: &str = "ANTLER_LAZY_SPAWN_BASE_URL";
/// The line prefix by which that copy reports its result.
const SPAWN_LINE: &str = "lazy_start spawner: ";
/// The stand-in servers and how long each takes to start.
const SERVERS: usize = 10;
const STARTUP_DELAY_MS: u64 = 2_000;

fn main() {
    if let Some(dir) = std::env::var_os(SPAWN_DIR) {
        spawner(Path::new(&dir));
        return;
    }
    let full = std::env::args().any(|a| a == "--bench");
    let (runs, cold_runs, call_runs) = if full { (15, 3, 10) } else { (1, 0, 1) };
    if !full {
        println!("not run by `cargo bench`: one sample per figure, as a smoke check");
    }
    let fixture = fixture_bin();

    let bare = tempfile::tempdir().unwrap();
    let none = first_request(bare.path(), runs);

    let warm = tempfile::tempdir().unwrap();
    ten_servers(warm.path(), &fixture);
    succeed(antler_in(warm.path(), "http://127.0.0.1:9/v1").args(["mcp", "refresh"]));
    let lazy = first_request(warm.path(), runs);
    let rss_kb = peak_rss_kb(warm.path());

    let cold = (cold_runs > 0).then(|| {
        let samples = (0..cold_runs)
            .map(|_| {
                let dir = tempfile::tempdir().unwrap();
                ten_servers(dir.path(), &fixture);
                first_request(dir.path(), 1).median
            })
            .collect();
        stats(samples)
    });

    let calls: Vec<(&str, Stats)> = ["stdio", "http", "sse"]
        .into_iter()
        .map(|transport| (transport, first_call(&fixture, transport, call_runs)))
        .collect();

    let ratio = lazy.median / none.median;
    println!("\nfigure                                              median ms   p90 ms   n");
    let row = |name: &str, s: &Stats| {
        println!("{name:<50} {:>9.1} {:>8.1} {:>3}", s.median, s.p90, s.n);
    };
    row("-p start -> first request, no MCP server", &none);
    row("  10 slow stdio servers, warm manifests", &lazy);
    if let Some(cold) = &cold {
        row("  10 slow stdio servers, no manifests", cold);
    }
    for (transport, s) in &calls {
        row(
            &format!("first call of an idle server's tool ({transport})"),
            s,
        );
    }
    println!(
        "warm / none: {ratio:.2}x (goal <= 2x); peak RSS of the warm run: {:.1} MB",
        rss_kb as f64 * 1024.0 / 1e6
    );
    let mut line = json!({
        "no_mcp_ms": round3(none.median),
        "warm_manifests_ms": round3(lazy.median),
        "warm_over_none": round3(ratio),
        "warm_peak_rss_kb": rss_kb,
    });
    if let Some(cold) = cold {
        line["no_manifests_ms"] = json!(round3(cold.median));
    }
    for (transport, s) in &calls {
        line[format!("first_call_{transport}_ms")] = json!(round3(s.median));
    }
    println!("{line}");
}

/// Runs `command` and asserts that it succeeded, showing its stderr when it did not.
fn succeed(command: &mut Command) -> std::process::Output {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Ten slow fixture servers over stdio, tool search on.
fn ten_servers(dir: &Path, fixture: &Path) {
    let delay = STARTUP_DELAY_MS.to_string();
    let servers: serde_json::Map<String, Value> = (0..SERVERS)
        .map(|i| {
            let entry = json!({"command": fixture, "args": ["--startup-delay-ms", delay]});
            (format!("s{i}"), entry)
        })
        .collect();
    let text = json!({"mcpServers": servers}).to_string();
    std::fs::write(dir.join("extensions_config.json"), text).unwrap();
    std::fs::write(dir.join("config.yaml"), "tool_search:\n  enabled: true\n").unwrap();
}

/// Spawn to first chat-completions request of `antler -p` in `dir`, `runs` times.
fn first_request(dir: &Path, runs: usize) -> Stats {
    let mock = MockOpenAi::start(Vec::new());
    let mut samples = Vec::new();
    for run in 0..runs {
        mock.push(Reply::text("ok"));
        let before = Instant::now();
        succeed(antler_in(dir, &mock.base_url()).args(["-p", "say ok"]));
        let requests = mock.requests();
        assert_eq!(requests.len(), run + 1);
        samples.push(requests[run].at.duration_since(before).as_secs_f64() * 1e3);
    }
    stats(samples)
}

/// The copy of this process that runs `antler -p` once and reports
/// `<antler's max RSS> <its own VmHWM before the spawn> <exit code>` (KiB).
fn spawner(dir: &Path) {
    let base_url = std::env::var(SPAWN_BASE_URL).unwrap();
    let mut command = antler_in(dir, &base_url);
    command.args(["-p", "say ok"]);
    support::spawn_and_report(command, SPAWN_LINE);
}

/// Peak RSS (KiB) of one warm `antler -p` run in `dir`.
fn peak_rss_kb(dir: &Path) -> i64 {
    let mock = MockOpenAi::start(vec![Reply::text("ok")]);
    let out = Command::new(std::env::current_exe().unwrap())
        .env(SPAWN_DIR, dir)
        .env(SPAWN_BASE_URL, mock.base_url())
        .output()
        .unwrap();
    spawner_rss_kb(&out.stdout, SPAWN_LINE, "the warm run")
}

/// A fixture over `transport` (`http`, `sse`) and its URL; killed by the caller.
fn network_fixture(fixture: &Path, transport: &str) -> (Child, String) {
    let mut child = Command::new(fixture)
        .args(["--transport", transport])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line.trim().strip_prefix("LISTENING ").unwrap().to_string();
    let path = if transport == "http" { "mcp" } else { "sse" };
    (child, format!("{base}/{path}"))
}

/// The first call of an idle server's tool over `transport`: the time from the mock
/// answering with the call to the request that carries its result, `runs` times, each in
/// a run of its own (so the server is idle at its start).
fn first_call(fixture: &Path, transport: &str, runs: usize) -> Stats {
    let dir = tempfile::tempdir().unwrap();
    let network = (transport != "stdio").then(|| network_fixture(fixture, transport));
    let entry = match &network {
        None => json!({"command": fixture}),
        Some((_, url)) => json!({"type": transport, "url": url}),
    };
    std::fs::write(
        dir.path().join("extensions_config.json"),
        json!({"mcpServers": {"fx": entry}}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("config.yaml"),
        "tool_search:\n  enabled: true\n",
    )
    .unwrap();
    succeed(antler_in(dir.path(), "http://127.0.0.1:9/v1").args(["mcp", "refresh"]));
    let mut samples = Vec::new();
    for _ in 0..runs {
        let mock = MockOpenAi::start(vec![
            Reply::tool_calls(&[("c1", "tool_search", json!({"query": "select:fx_echo"}))]),
            Reply::tool_calls(&[("c2", "fx_echo", json!({"text": "hi"}))]),
            Reply::text("done"),
        ]);
        succeed(antler_in(dir.path(), &mock.base_url()).args(["-p", "echo"]));
        let requests = mock.requests();
        assert_eq!(requests.len(), 3);
        let result = requests[2].messages().last().unwrap();
        assert_eq!(result["content"], "hi", "{result}");
        // The call left with the second reply (answered at once) and came back with the
        // third request: start-up, handshake, listing and the call, plus one short step.
        samples.push(requests[2].at.duration_since(requests[1].at).as_secs_f64() * 1e3);
    }
    if let Some((mut child, _)) = network {
        let _ = child.kill();
        let _ = child.wait();
    }
    stats(samples)
}

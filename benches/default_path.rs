//! The default path end to end (issue 26): what a run pays for tools it does not use.
//! Every figure is the release `antler -p` against the mock model (which answers at once),
//! with warm manifests, its runs alternating with those of the figure it is compared with,
//! so that each ratio comes from one run of this bench:
//!
//! 1. `listing: auto` against `listing: names` (tool search on), at the 527 tools of
//!    LiveMCPBench (70 stdio servers) and at 10,000 (200 servers; the synthetic catalog of
//!    `listing_tokens`): spawn to exit, and peak RSS. Goal: within 1.15x and 8 MB.
//! 2. No `tool_search` section (the default, `enabled: auto`, which defers these 527 tools)
//!    against `enabled: false` (every schema bound): spawn to the first request, and peak
//!    RSS. Goal: within 1.2x, and never more memory.
//! 3. One idle server and no `tool_search` section against no server at all: spawn to
//!    exit; the server must not start (its start log is checked). Goal: within 1.3x.
//! 4. `config.example.yaml` with `extensions_config.example.json` (its servers played by
//!    the fixture, every other setting as shipped): spawn to the first request. Goal:
//!    at most 50 ms.
//! 5. A run that calls a stdio server, from the answer's first byte on stdout to the
//!    process's exit (stopping the server): the fixture taking 500 ms to exit once its
//!    stdin closes (SIGTERM ends it at once, as it does a Python server), and, when
//!    installed (`.ci/interop-deps`), the real `mcp-server-time`.
//!
//! Peak RSS is `getrusage(RUSAGE_CHILDREN)` read in a small copy of this process that
//! spawns antler and waits for nothing else (see `agent_overhead`). `ANTLER_BENCH_BASE` may
//! name another antler binary: every figure is then also taken with it, alternating, for a
//! before/after in one run. The LiveMCPBench data is `../shared/bench/livemcp` or
//! `ANTLER_BENCH_DIR`. Run by `cargo test` (no `--bench` argument), one sample each.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mock_openai/mod.rs"]
mod mock_openai;
mod support;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use antler::deferred::catalog_file::load_catalog_file;
use antler::tools::{ToolInfo, ToolSource};
use mock_openai::{MockOpenAi, Reply};
use serde_json::{Value, json};
use support::{Stats, antler_at, fixture_bin, round3, spawner_rss_kb, stats};

/// Set in the copy of this process that spawns one measured run: the sandbox, the binary
/// and the mock's URL.
const SPAWN_DIR: &str = "ANTLER_DEFAULT_SPAWN_DIR";
const SPAWN_BIN: &str = "ANTLER_DEFAULT_SPAWN_BIN";
const SPAWN_BASE_URL: &str = "ANTLER_DEFAULT_SPAWN_BASE_URL";
const SPAWN_LINE: &str = "default_path spawner: ";

/// What one figure measures of a run.
#[derive(Clone, Copy)]
enum Until {
    /// Spawn to the first chat-completions request.
    FirstRequest,
    /// Spawn to the process's exit.
    Exit,
}

/// One row: a setup measured with one binary.
struct Row {
    name: String,
    time: Stats,
    rss_kb: Option<i64>,
}

fn main() {
    if let Some(dir) = std::env::var_os(SPAWN_DIR) {
        spawner(Path::new(&dir));
        return;
    }
    let full = std::env::args().any(|a| a == "--bench");
    let runs = if full { 15 } else { 1 };
    if !full {
        println!("not run by `cargo bench`: one sample per figure, as a smoke check");
    }
    let mut bins = vec![("", PathBuf::from(env!("CARGO_BIN_EXE_antler")))];
    if let Some(base) = std::env::var_os("ANTLER_BENCH_BASE") {
        bins.push((" [base]", PathBuf::from(base)));
    }
    let fixture = fixture_bin();
    let mut rows: Vec<Row> = Vec::new();
    let mut line = json!({});

    if let Some(dir) = support::bench_data() {
        let real = load_catalog_file(&dir.join("catalog.json")).unwrap();
        let synthetic = support::synthetic_catalog(&real);
        for (label, tools) in [("527", &real), ("10000", &synthetic)] {
            let sandboxes = [
                catalog_sandbox(
                    &fixture,
                    tools,
                    "tool_search:\n  enabled: true\n  listing: names\n",
                ),
                catalog_sandbox(
                    &fixture,
                    tools,
                    "tool_search:\n  enabled: true\n  listing: auto\n",
                ),
            ];
            let names = [
                format!("{label} tools, listing: names"),
                format!("{label} tools, listing: auto"),
            ];
            let dirs = [sandboxes[0].path(), sandboxes[1].path()];
            let got = compare(&bins, dirs, &names, Until::Exit, runs, true);
            ratio(&mut line, &format!("auto_over_names_{label}"), &got, &bins);
            rows.extend(got);
        }
        let sandboxes = [
            catalog_sandbox(&fixture, &real, "tool_search:\n  enabled: false\n"),
            catalog_sandbox(&fixture, &real, ""),
        ];
        let names = [
            String::from("527 tools, enabled: false (bound)"),
            String::from("527 tools, no tool_search section (deferred)"),
        ];
        let dirs = [sandboxes[0].path(), sandboxes[1].path()];
        let got = compare(&bins, dirs, &names, Until::FirstRequest, runs, true);
        ratio(&mut line, "deferred_over_bound_527", &got, &bins);
        rows.extend(got);
    }

    let none = tempfile::tempdir().unwrap();
    let idle = tempfile::tempdir().unwrap();
    let starts = idle.path().join("fx.starts");
    let entry = json!({"command": fixture, "args": ["--starts-log", starts]});
    write_extensions(idle.path(), &json!({"fx": entry}));
    refresh(idle.path());
    let names = [
        String::from("no MCP server"),
        String::from("one idle server, no tool_search section"),
    ];
    let got = compare(
        &bins,
        [none.path(), idle.path()],
        &names,
        Until::Exit,
        runs,
        false,
    );
    let started = || std::fs::read_to_string(&starts).unwrap().lines().count();
    let before = started();
    let mock = MockOpenAi::start(Vec::new());
    run_once(&mock, &bins[0].1, idle.path(), Until::Exit);
    assert_eq!(
        started(),
        before,
        "the idle server started for a run that did not call it"
    );
    ratio(&mut line, "idle_server_over_none", &got, &bins);
    rows.extend(got);

    let example = example_sandbox(&fixture);
    for (suffix, bin) in &bins {
        let time = timed(bin, example.path(), Until::FirstRequest, runs);
        line[format!("example_config_first_request_ms{}", key(suffix))] =
            json!(round3(time.median));
        rows.push(Row {
            name: format!("config.example.yaml, to the first request{suffix}"),
            time,
            rss_kb: None,
        });
    }

    let slow = json!({"command": fixture, "args": ["--exit-delay-ms", "500"]});
    let mut servers = vec![("slow_exit", "a server 500 ms slow to exit", slow, "fx_echo")];
    if let Some(time_server) = mcp_server_time() {
        let entry = json!({"command": time_server});
        servers.push((
            "mcp_server_time",
            "mcp-server-time",
            entry,
            "fx_get_current_time",
        ));
    }
    for (id, what, entry, tool) in servers {
        for (suffix, bin) in &bins {
            let time = answer_to_exit(bin, &entry, tool, runs);
            line[format!("{id}_answer_to_exit_ms{}", key(suffix))] = json!(round3(time.median));
            rows.push(Row {
                name: format!("{what}: answer -> exit{suffix}"),
                time,
                rss_kb: None,
            });
        }
    }

    println!(
        "\nfigure                                                   median ms   p90 ms  peak RSS   n"
    );
    for row in &rows {
        let rss = row.rss_kb.map_or(String::from("-"), |kb| {
            format!("{:.1} MB", kb as f64 * 1024.0 / 1e6)
        });
        println!(
            "{:<56} {:>9.1} {:>8.1} {:>9} {:>3}",
            row.name, row.time.median, row.time.p90, rss, row.time.n
        );
    }
    println!("{line}");
}

/// `_base` for the base binary's keys.
fn key(suffix: &str) -> &'static str {
    if suffix.is_empty() { "" } else { "_base" }
}

/// Records the second row over the first of each binary (time, and RSS when measured) as
/// `name` (`name_base` for the base binary) and prints it.
fn ratio(line: &mut Value, name: &str, rows: &[Row], bins: &[(&str, PathBuf)]) {
    for (i, (suffix, _)) in bins.iter().enumerate() {
        let (a, b) = (&rows[2 * i], &rows[2 * i + 1]);
        let over = b.time.median / a.time.median;
        let key = format!("{name}{}", key(suffix));
        line[&key] = json!(round3(over));
        if let (Some(x), Some(y)) = (a.rss_kb, b.rss_kb) {
            line[format!("{key}_rss_delta_kb")] = json!(y - x);
        }
        println!("{}: {over:.2}x{}", b.name, suffix);
    }
}

/// The two sandboxes measured with every binary, alternating run by run; rows in the
/// order (binary, sandbox).
fn compare(
    bins: &[(&str, PathBuf)],
    sandboxes: [&Path; 2],
    names: &[String; 2],
    until: Until,
    runs: usize,
    rss: bool,
) -> Vec<Row> {
    let mock = MockOpenAi::start(Vec::new());
    let mut samples = vec![Vec::new(); bins.len() * 2];
    for _ in 0..runs {
        for (b, (_, bin)) in bins.iter().enumerate() {
            for (s, sandbox) in sandboxes.iter().enumerate() {
                samples[2 * b + s].push(run_once(&mock, bin, sandbox, until));
            }
        }
    }
    let mut rows = Vec::new();
    for (b, (suffix, bin)) in bins.iter().enumerate() {
        for (s, sandbox) in sandboxes.iter().enumerate() {
            rows.push(Row {
                name: format!("{}{suffix}", names[s]),
                time: stats(std::mem::take(&mut samples[2 * b + s])),
                rss_kb: rss.then(|| peak_rss_kb(bin, sandbox)),
            });
        }
    }
    rows
}

/// `runs` runs of one sandbox with one binary.
fn timed(bin: &Path, dir: &Path, until: Until, runs: usize) -> Stats {
    let mock = MockOpenAi::start(Vec::new());
    stats(
        (0..runs)
            .map(|_| run_once(&mock, bin, dir, until))
            .collect(),
    )
}

/// One `antler -p` run, in milliseconds until `until`.
fn run_once(mock: &MockOpenAi, bin: &Path, dir: &Path, until: Until) -> f64 {
    mock.push(Reply::text("ok"));
    let seen = mock.requests().len();
    let before = Instant::now();
    let out = antler_at(bin, dir, &mock.base_url())
        .args(["-p", "say ok"])
        .output()
        .unwrap();
    let exited = before.elapsed();
    assert!(
        out.status.success(),
        "antler -p failed in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), seen + 1, "one request per run");
    let elapsed = match until {
        Until::FirstRequest => requests[seen].at.duration_since(before),
        Until::Exit => exited,
    };
    elapsed.as_secs_f64() * 1e3
}

/// A sandbox whose servers serve `tools`, one fixture entry per catalog server (each
/// reading a catalog file of its own), manifests warm, and `config` as config.yaml.
fn catalog_sandbox(fixture: &Path, tools: &[ToolInfo], config: &str) -> tempfile::TempDir {
    let sandbox = tempfile::tempdir().unwrap();
    let dir = sandbox.path();
    let mut servers: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for tool in tools {
        let ToolSource::Mcp {
            server,
            original_name,
        } = &tool.source
        else {
            continue;
        };
        servers.entry(server).or_default().push(json!({
            "name": original_name,
            "description": tool.description,
            "inputSchema": tool.parameters,
        }));
    }
    let mut entries = serde_json::Map::new();
    for (i, (server, tools)) in servers.into_iter().enumerate() {
        let file = dir.join(format!("catalog-{i}.json"));
        std::fs::write(&file, json!({ server: tools }).to_string()).unwrap();
        entries.insert(
            server.to_string(),
            json!({"command": fixture, "args": ["--catalog", file]}),
        );
    }
    write_extensions(dir, &Value::Object(entries));
    if !config.is_empty() {
        std::fs::write(dir.join("config.yaml"), config).unwrap();
    }
    refresh(dir);
    sandbox
}

/// The example configuration as shipped, each server played by the fixture under its own
/// name (command and arguments replaced, every other key kept), manifests warm.
fn example_sandbox(fixture: &Path) -> tempfile::TempDir {
    let sandbox = tempfile::tempdir().unwrap();
    let dir = sandbox.path();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(root.join("config.example.yaml"), dir.join("config.yaml")).unwrap();
    let text = std::fs::read_to_string(root.join("extensions_config.example.json")).unwrap();
    let mut example: Value = serde_json::from_str(&text).unwrap();
    for (_, entry) in example["mcpServers"].as_object_mut().unwrap() {
        if entry.get("url").is_none() {
            entry["command"] = json!(fixture);
            entry["args"] = json!([]);
        }
    }
    write_extensions(dir, &example["mcpServers"]);
    refresh(dir);
    sandbox
}

fn write_extensions(dir: &Path, servers: &Value) {
    let text = json!({"mcpServers": servers}).to_string();
    std::fs::write(dir.join("extensions_config.json"), text).unwrap();
}

/// `antler mcp refresh`: every server listed once, its manifest written.
fn refresh(dir: &Path) {
    let out = support::antler_in(dir, "http://127.0.0.1:9/v1")
        .args(["mcp", "refresh"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `mcp-server-time` where `.ci/interop-deps` installs it, if it is there.
fn mcp_server_time() -> Option<PathBuf> {
    let dir = std::env::var_os("ANTLER_INTEROP_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/interop"),
        PathBuf::from,
    );
    let path = dir.join("venv/bin/mcp-server-time");
    if !path.exists() {
        println!(
            "no mcp-server-time at {}: its shutdown is not measured",
            path.display()
        );
        return None;
    }
    Some(path)
}

/// A run that calls `tool` of the server `entry` (as `fx`), from the answer's first byte
/// to the exit.
fn answer_to_exit(bin: &Path, entry: &Value, tool: &str, runs: usize) -> Stats {
    let sandbox = tempfile::tempdir().unwrap();
    let dir = sandbox.path();
    write_extensions(dir, &json!({ "fx": entry }));
    refresh(dir);
    let arguments = match tool {
        "fx_echo" => json!({"text": "hi"}),
        _ => json!({"timezone": "UTC"}),
    };
    let mut samples = Vec::new();
    for _ in 0..runs {
        let mock = MockOpenAi::start(vec![
            Reply::tool_calls(&[("c1", tool, arguments.clone())]),
            Reply::text("ok"),
        ]);
        let mut child = antler_at(bin, dir, &mock.base_url())
            .args(["-p", "call it"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut answer = [0; 64];
        let first = stdout.read(&mut answer).unwrap();
        let answered = Instant::now();
        assert_eq!(&answer[..first], b"ok\n");
        assert!(child.wait().unwrap().success());
        samples.push(answered.elapsed().as_secs_f64() * 1e3);
        let result = mock.requests()[1].tool_result("c1");
        assert!(!result.starts_with("Error"), "{result}");
    }
    stats(samples)
}

/// Peak RSS (KiB) of one run of `bin` in `dir`, read by a spawner copy of this process.
fn peak_rss_kb(bin: &Path, dir: &Path) -> i64 {
    let mock = MockOpenAi::start(vec![Reply::text("ok")]);
    let out = Command::new(std::env::current_exe().unwrap())
        .env(SPAWN_DIR, dir)
        .env(SPAWN_BIN, bin)
        .env(SPAWN_BASE_URL, mock.base_url())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    spawner_rss_kb(&out.stdout, SPAWN_LINE, "the measured run")
}

/// The copy of this process that runs `antler -p` once and reports
/// `<antler's max RSS> <its own VmHWM before the spawn> <exit code>` (KiB).
fn spawner(dir: &Path) {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let mut command = antler_at(Path::new(&var(SPAWN_BIN)), dir, &var(SPAWN_BASE_URL));
    command.args(["-p", "say ok"]);
    support::spawn_and_report(command, SPAWN_LINE);
}

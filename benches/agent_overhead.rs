//! The three figures of issue 4, measured and printed as a table and one JSON line:
//!
//! 1. antler's own time per model turn with the 527-tool LiveMCPBench catalog deferred
//!    (target: under 1 ms median). In process, through the library: the catalog as the MCP
//!    tier, `tool_search` on, the real layer chain, a real thread store in a temporary
//!    directory and the real system prompt. The model is a scripted provider that answers
//!    at once; the time spent inside its `complete()` is subtracted. A second row runs the
//!    same loop with the real `OpenAiProvider` against the mock server over loopback HTTP,
//!    counting everything (HTTP and SSE parsing included): an upper bound, for context.
//! 2. Cold start of `antler -p`, from just before `spawn()` to the first chat-completions
//!    request reaching the mock server, with no MCP server (target: under 50 ms median).
//! 3. Peak RSS of one `antler -p` run with the catalog served by the fixture MCP server
//!    over streamable HTTP and deferred (target: under 40 MB): `getrusage(RUSAGE_CHILDREN)`
//!    read after the run, in a small copy of this process that spawns antler and waits for
//!    nothing else (a child's `ru_maxrss` starts at its spawner's resident set, so the
//!    spawner must be smaller than antler). Taken first, before the other figures.
//! 4. The end of `antler -p` for a reader of its stdout, with a stdio MCP server that takes
//!    `SLOW_EXIT_MS` to exit (as a Python server can): from the answer's first byte on
//!    the pipe to end of file, and to the process's exit (issue 12: stdout is closed before
//!    the servers are shut down). For context, no target.
//!
//! The data directory defaults to `../shared/bench/livemcp` beside the crate;
//! `ANTLER_BENCH_DIR` overrides it. Run by `cargo test` (no `--bench` argument), every
//! figure is taken from a few runs only, as a smoke check.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mock_openai/mod.rs"]
mod mock_openai;
mod support;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use antler::agent::runner::{Agent, Thread};
use antler::deferred::catalog_file::load_catalog_file;
use antler::protocol::ToolCall;
use antler::protocol::{Event, RunStatus};
use antler::protocol::{FinishReason, Usage};
use antler::provider::{
    ModelEvent, ModelReply, ModelRequest, OpenAiProvider, OpenAiSettings, Provider, ProviderError,
    ReplyFuture,
};
use antler::store::{StoreSink, ThreadStore};
use antler::tools::ToolInfo;
use mock_openai::{MockOpenAi, Recorded, Reply};
use serde_json::{Value, json};
use support::{Stats, antler_in, fixture_bin, round3, spawner_rss_kb, stats};
use tokio_util::sync::CancellationToken;

/// Set (to the sandbox directory) in the copy of this process that spawns the measured
/// `antler -p` run; the other `SPAWN_*` variables carry the rest of the command.
const SPAWN_DIR: &str = "ANTLER_BENCH_SPAWN_DIR";
const SPAWN_BASE_URL: &str = "ANTLER_BENCH_SPAWN_BASE_URL";
const SPAWN_PROMPT: &str = "ANTLER_BENCH_SPAWN_PROMPT";
/// The line prefix by which that copy reports its result.
const SPAWN_LINE: &str = "agent_overhead spawner: ";
/// `tool_search` calls per scripted run (one of them a `select:`), then a text answer.
const SEARCH_TURNS: usize = 8;
/// The model's name in threads and requests.
const MODEL: &str = support::MOCK_MODEL;
/// How long the MCP server of figure 4 takes to exit once antler closes its stdin.
const SLOW_EXIT_MS: u64 = 250;

/// The catalog and the dev queries.
struct Data {
    tools: Vec<ToolInfo>,
    queries: Vec<DevQuery>,
}

/// One line of `queries-dev.jsonl`: the query and the first tool that answers it.
struct DevQuery {
    text: String,
    tool: String,
}

/// How many runs each figure takes.
struct Plan {
    warmup: usize,
    overhead_runs: usize,
    loopback_runs: usize,
    cold_runs: usize,
    shutdown_runs: usize,
}

fn main() {
    if let Some(dir) = std::env::var_os(SPAWN_DIR) {
        spawner(Path::new(&dir));
        return;
    }
    let Some(dir) = support::bench_data() else {
        return;
    };
    let data = Data::load(&dir);
    let full = std::env::args().any(|a| a == "--bench");
    let plan = if full {
        Plan {
            warmup: 3,
            overhead_runs: 40,
            loopback_runs: 30,
            cold_runs: 20,
            shutdown_runs: 10,
        }
    } else {
        println!("not run by `cargo bench`: a quick check with a few runs per figure");
        Plan {
            warmup: 1,
            overhead_runs: 3,
            loopback_runs: 3,
            cold_runs: 3,
            shutdown_runs: 2,
        }
    };
    let started = Instant::now();
    println!(
        "catalog: {} tools; {} dev queries",
        data.tools.len(),
        data.queries.len()
    );

    // Figure 3 first, before the other figures grow this process.
    let rss_kb = peak_rss_kb(&data);
    let rss_mb = rss_kb as f64 * 1024.0 / 1e6;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let overhead = overhead_in_process(&data, &runtime, &plan);
    let loopback = overhead_loopback(&data, &runtime, &plan);
    drop(runtime);
    let cold = cold_start(&plan);
    let (to_eof, to_exit) = answer_to_end(&plan);

    // A quick check is not judged: it may be a debug build.
    let verdict = |ok: bool| match (full, ok) {
        (false, _) => "n/a",
        (true, true) => "pass",
        (true, false) => "miss",
    };
    let overhead_ok = overhead.median < 1.0;
    let cold_ok = cold.median < 50.0;
    let rss_ok = rss_mb < 40.0;
    let dist = |s: &Stats| format!("median {:.3} ms, p90 {:.3} ms", s.median, s.p90);
    println!();
    println!("{:<56} {:<34} {:<9} result", "figure", "measured", "target");
    println!(
        "{:<56} {:<34} {:<9} {}",
        format!(
            "antler overhead per model turn, {} tools deferred",
            data.tools.len()
        ),
        dist(&overhead),
        "< 1 ms",
        verdict(overhead_ok)
    );
    println!(
        "{:<56} {:<34} {:<9} -",
        "  same loop, OpenAiProvider + mock over loopback HTTP",
        dist(&loopback),
        "(context)"
    );
    println!(
        "{:<56} {:<34} {:<9} {}",
        "cold start, antler -p to first request, no MCP",
        dist(&cold),
        "< 50 ms",
        verdict(cold_ok)
    );
    println!(
        "{:<56} {:<34} {:<9} {}",
        format!(
            "peak RSS, antler -p with {} MCP tools over HTTP",
            data.tools.len()
        ),
        format!("{rss_mb:.1} MB ({rss_kb} KiB)"),
        "< 40 MB",
        verdict(rss_ok)
    );
    println!(
        "{:<56} {:<34} {:<9} -",
        format!("answer to stdout EOF, MCP server exiting in {SLOW_EXIT_MS} ms"),
        dist(&to_eof),
        "(context)"
    );
    println!(
        "{:<56} {:<34} {:<9} -",
        "  answer to process exit",
        dist(&to_exit),
        "(context)"
    );
    println!(
        "(per turn: the median and p90 over runs of one run's time / its {} model turns; \
         cold start over {} spawns; {:.0} s in all)",
        SEARCH_TURNS + 1,
        cold.n,
        started.elapsed().as_secs_f64()
    );
    let stats =
        |s: &Stats| json!({"median_ms": round3(s.median), "p90_ms": round3(s.p90), "runs": s.n});
    println!(
        "{}",
        json!({
            "bench": "agent_overhead",
            "catalog_tools": data.tools.len(),
            "turns_per_run": SEARCH_TURNS + 1,
            "overhead_per_turn": stats(&overhead),
            "loopback_per_turn": stats(&loopback),
            "cold_start": stats(&cold),
            "answer_to_stdout_eof": stats(&to_eof),
            "answer_to_exit": stats(&to_exit),
            "peak_rss_mb": round3(rss_mb),
            "pass": full.then(|| json!({"overhead": overhead_ok, "cold_start": cold_ok, "peak_rss": rss_ok})),
        })
    );
}

impl Data {
    fn load(dir: &Path) -> Self {
        let tools = load_catalog_file(&dir.join("catalog.json")).unwrap();
        let queries = std::fs::read_to_string(dir.join("queries-dev.jsonl"))
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let v: Value = serde_json::from_str(line).unwrap();
                DevQuery {
                    text: v["query"].as_str().unwrap().to_string(),
                    tool: v["any_of"][0].as_str().unwrap().to_string(),
                }
            })
            .collect::<Vec<_>>();
        assert!(queries.len() > SEARCH_TURNS, "too few dev queries");
        for q in &queries {
            assert!(
                tools.iter().any(|t| t.name == q.tool),
                "{} is not in the catalog",
                q.tool
            );
        }
        Self { tools, queries }
    }

    /// The model's side of run `run`: `SEARCH_TURNS` `tool_search` calls with ranked dev
    /// queries, the second one a `select:` of two tools; then a text answer. Returns the
    /// user's prompt, the turns and the two selected names.
    fn script(&self, run: usize) -> (String, Vec<Turn>, [String; 2]) {
        let q = |k: usize| &self.queries[(run * SEARCH_TURNS + k) % self.queries.len()];
        let selected = [q(1).tool.clone(), q(SEARCH_TURNS).tool.clone()];
        let mut turns = Vec::new();
        for k in 0..SEARCH_TURNS {
            let query = if k == 1 {
                format!("select:{},{}", selected[0], selected[1])
            } else {
                q(k).text.clone()
            };
            turns.push(Turn::Search {
                id: format!("call_{run}_{k}"),
                query,
            });
        }
        turns.push(Turn::Answer(format!(
            "Run {run}: the tools for that are {} and {}.",
            selected[0], selected[1]
        )));
        (q(0).text.clone(), turns, selected)
    }
}

/// One scripted model turn.
enum Turn {
    Search { id: String, query: String },
    Answer(String),
}

impl Turn {
    fn model_reply(&self) -> ModelReply {
        let usage = Some(Usage {
            input_tokens: 6_000,
            cached_input_tokens: 5_000,
            output_tokens: 30,
        });
        match self {
            Turn::Search { id, query } => ModelReply {
                tool_calls: vec![ToolCall {
                    id: id.clone(),
                    name: "tool_search".into(),
                    arguments: json!({"query": query}).to_string(),
                }],
                finish_reason: FinishReason::ToolCalls,
                usage,
                ..ModelReply::default()
            },
            Turn::Answer(text) => ModelReply {
                content: text.clone(),
                finish_reason: FinishReason::Stop,
                usage,
                ..ModelReply::default()
            },
        }
    }

    fn mock_reply(&self) -> Reply {
        match self {
            Turn::Search { id, query } => {
                Reply::tool_calls(&[(id, "tool_search", json!({"query": query}))])
            }
            Turn::Answer(text) => Reply::text(text),
        }
    }
}

/// A model that answers from a script at once, reporting the answer's text as one delta,
/// and keeps the tool names bound on each call.
struct Scripted {
    script: Mutex<VecDeque<ModelReply>>,
    bound: Mutex<Vec<Vec<String>>>,
}

impl Provider for Scripted {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a (dyn Fn(ModelEvent) + Send + Sync),
    ) -> ReplyFuture<'a> {
        Box::pin(async move {
            self.bound
                .lock()
                .unwrap()
                .push(request.tools.iter().map(|t| t.name.clone()).collect());
            let reply =
                self.script
                    .lock()
                    .unwrap()
                    .pop_front()
                    .ok_or_else(|| ProviderError::Protocol {
                        endpoint: "scripted".into(),
                        message: "no scripted reply left".into(),
                    })?;
            if !reply.content.is_empty() {
                events(ModelEvent::TextDelta(reply.content.clone()));
            }
            Ok(reply)
        })
    }

    fn model(&self) -> &str {
        MODEL
    }

    fn endpoint(&self) -> &str {
        "scripted"
    }
}

/// A provider wrapper that adds up the time spent inside the inner `complete()`.
struct Timed<P> {
    inner: P,
    inside: Mutex<Duration>,
}

impl<P> Timed<P> {
    fn new(inner: P) -> Self {
        Self {
            inner,
            inside: Mutex::new(Duration::ZERO),
        }
    }

    /// The time inside `complete()` since the last call, and resets it.
    fn take(&self) -> Duration {
        std::mem::take(&mut *self.inside.lock().unwrap())
    }
}

impl<P: Provider> Provider for Timed<P> {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a (dyn Fn(ModelEvent) + Send + Sync),
    ) -> ReplyFuture<'a> {
        Box::pin(async move {
            let started = Instant::now();
            let reply = self.inner.complete(request, events).await;
            *self.inside.lock().unwrap() += started.elapsed();
            reply
        })
    }

    fn model(&self) -> &str {
        self.inner.model()
    }

    fn endpoint(&self) -> &str {
        self.inner.endpoint()
    }
}

/// The agent as `antler -p` builds it with `tool_search: {enabled: true, listing: names}`
/// (the longest prompt, as measured before listing modes); see [`support::catalog_agent`].
fn catalog_agent(data: &Data, provider: Arc<dyn Provider>, dir: &Path) -> Agent {
    support::catalog_agent(
        &data.tools,
        provider,
        dir,
        "tool_search:\n  enabled: true\n  listing: names\n",
    )
}

/// Runs `agent` once on a new thread of `store`; returns the wall time and the model turns.
fn timed_run(
    runtime: &tokio::runtime::Runtime,
    agent: &Agent,
    store: &ThreadStore,
    prompt: String,
) -> (Duration, u32) {
    let meta = store.create(Path::new("/bench"), MODEL).unwrap();
    let mut thread = Thread {
        id: meta.id,
        ..Thread::default()
    };
    let sink = StoreSink::new(store);
    let cancel = CancellationToken::new();
    let emit = |event: Event| {
        std::hint::black_box(event);
    };
    let started = Instant::now();
    let result = runtime.block_on(agent.run(&mut thread, prompt, &sink, &emit, &cancel));
    let wall = started.elapsed();
    assert_eq!(
        result.status,
        RunStatus::Success,
        "the run failed: {:?}",
        result.errors
    );
    assert_eq!(result.turns as usize, SEARCH_TURNS + 1);
    (wall, result.turns)
}

/// Figure 1: per-turn time outside the model, in process, with the scripted model.
fn overhead_in_process(data: &Data, runtime: &tokio::runtime::Runtime, plan: &Plan) -> Stats {
    let dir = tempfile::tempdir().unwrap();
    let store = ThreadStore::open(&dir.path().join("threads.db")).unwrap();
    let model = Arc::new(Timed::new(Scripted {
        script: Mutex::new(VecDeque::new()),
        bound: Mutex::new(Vec::new()),
    }));
    let agent = catalog_agent(data, model.clone(), dir.path());
    let mut per_turn = Vec::new();
    for run in 0..plan.warmup + plan.overhead_runs {
        let (prompt, turns, selected) = data.script(run);
        *model.inner.script.lock().unwrap() = turns.iter().map(Turn::model_reply).collect();
        model.inner.bound.lock().unwrap().clear();
        model.take();
        let (wall, turns) = timed_run(runtime, &agent, &store, prompt);
        let inside = model.take();
        // The call after the `select:` binds the two selected schemas.
        let bound = model.inner.bound.lock().unwrap();
        assert_no_mcp_schema(data, &bound[0]);
        for name in &selected {
            assert!(bound[2].contains(name), "{name} not bound: {:?}", bound[2]);
        }
        if run >= plan.warmup {
            per_turn.push((wall - inside).as_secs_f64() * 1e3 / f64::from(turns));
        }
    }
    stats(per_turn)
}

/// Figure 1, context row: the same loop with the real provider and the mock over HTTP,
/// everything counted.
fn overhead_loopback(data: &Data, runtime: &tokio::runtime::Runtime, plan: &Plan) -> Stats {
    let dir = tempfile::tempdir().unwrap();
    let store = ThreadStore::open(&dir.path().join("threads.db")).unwrap();
    let mock = MockOpenAi::start(Vec::new());
    let mut settings = OpenAiSettings::new(mock.base_url(), MODEL);
    settings.api_key = Some("sk-bench".into());
    let provider = Arc::new(OpenAiProvider::new(settings).unwrap());
    let agent = catalog_agent(data, provider, dir.path());
    let mut per_turn = Vec::new();
    let mut seen = 0;
    for run in 0..plan.warmup + plan.loopback_runs {
        let (prompt, turns, selected) = data.script(run);
        for turn in &turns {
            mock.push(turn.mock_reply());
        }
        let (wall, turns) = timed_run(runtime, &agent, &store, prompt);
        let requests = mock.requests();
        assert_eq!(requests.len(), seen + turns as usize);
        let first = &requests[seen];
        assert_no_mcp_schema(data, &first.tool_names());
        assert_eq!(deferred_names(first).len(), data.tools.len());
        for name in &selected {
            assert!(requests[seen + 2].tool_names().contains(name));
        }
        seen = requests.len();
        if run >= plan.warmup {
            per_turn.push(wall.as_secs_f64() * 1e3 / f64::from(turns));
        }
    }
    stats(per_turn)
}

/// Figure 2: spawn to first request, a new empty sandbox per run (so each run also creates
/// its thread database, as a first run does).
fn cold_start(plan: &Plan) -> Stats {
    let mock = MockOpenAi::start(Vec::new());
    let mut samples = Vec::new();
    for run in 0..plan.warmup + plan.cold_runs {
        let sandbox = tempfile::tempdir().unwrap();
        mock.push(Reply::text("ok"));
        let mut cmd = antler_in(sandbox.path(), &mock.base_url());
        cmd.args(["-p", "say ok"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let before = Instant::now();
        let child = cmd.spawn().unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "antler -p failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("ok"));
        let requests = mock.requests();
        assert_eq!(requests.len(), run + 1, "one request per run");
        if run >= plan.warmup {
            samples.push(requests[run].at.duration_since(before).as_secs_f64() * 1e3);
        }
    }
    stats(samples)
}

/// Figure 4: `antler -p` with a stdio MCP server slow to exit; from the first byte of the
/// answer on its stdout to end of file, and to its exit (`wait()` after end of file).
fn answer_to_end(plan: &Plan) -> (Stats, Stats) {
    let fixture = fixture_bin();
    let mut to_eof = Vec::new();
    let mut to_exit = Vec::new();
    for run in 0..plan.warmup + plan.shutdown_runs {
        let sandbox = tempfile::tempdir().unwrap();
        let dir = sandbox.path();
        let server =
            json!({"command": fixture, "args": ["--exit-delay-ms", SLOW_EXIT_MS.to_string()]});
        let extensions = json!({"mcpServers": {"fx": server}});
        std::fs::write(dir.join("extensions_config.json"), extensions.to_string()).unwrap();
        // A call, so that the server is surely running when the answer comes.
        let mock = MockOpenAi::start(vec![
            Reply::tool_calls(&[("c1", "fx_echo", json!({"text": "hi"}))]),
            Reply::text("ok"),
        ]);
        let stderr = dir.join("stderr.txt");
        let mut child = antler_in(dir, &mock.base_url())
            .args(["-p", "say ok"])
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut answer = vec![0; 64];
        let first = stdout.read(&mut answer).unwrap();
        let answered = Instant::now();
        answer.truncate(first);
        stdout.read_to_end(&mut answer).unwrap();
        let eof = answered.elapsed();
        let status = child.wait().unwrap();
        let exit = answered.elapsed();
        assert!(
            status.success(),
            "antler -p failed: {}",
            std::fs::read_to_string(&stderr).unwrap_or_default()
        );
        assert_eq!(String::from_utf8_lossy(&answer), "ok\n");
        if run >= plan.warmup {
            to_eof.push(eof.as_secs_f64() * 1e3);
            to_exit.push(exit.as_secs_f64() * 1e3);
        }
    }
    (stats(to_eof), stats(to_exit))
}

/// The memory-measuring copy of this process: runs `antler -p` once as described by the
/// `SPAWN_*` variables, then reports `<antler's max RSS> <its own VmHWM before the spawn>
/// <exit code>` (KiB) on a `SPAWN_LINE`, with antler's stderr passed through on failure.
///
/// Why a separate process: on Linux a child's `ru_maxrss` is at least the resident set of
/// the process that spawned it at the time of the `exec` (measured here: `/bin/true`
/// spawned by this bench reports the bench's RSS), so the spawner must be smaller than
/// antler, and it must have waited for no other child.
fn spawner(dir: &Path) {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"));
    let mut command = antler_in(dir, &var(SPAWN_BASE_URL));
    command.args(["-p", &var(SPAWN_PROMPT)]);
    support::spawn_and_report(command, SPAWN_LINE);
}

/// Figure 3, in KiB: one `antler -p` run with the catalog behind the fixture MCP server
/// over streamable HTTP, deferred; it searches, loads one tool, calls it on the server and
/// answers. Spawned and waited for by a small copy of this process (see [`spawner`]).
fn peak_rss_kb(data: &Data) -> i64 {
    let fixture = fixture_bin();
    let sandbox = tempfile::tempdir().unwrap();
    let dir = sandbox.path();
    // One server with every catalog tool under its unique catalog name, so antler (without
    // the server prefix) names them exactly as `load_catalog_file` does: all 527 of them.
    let flat: Vec<Value> = data
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.parameters}))
        .collect();
    let catalog = dir.join("bench-catalog.json");
    std::fs::write(&catalog, json!({"bench": flat}).to_string()).unwrap();
    let mut server = Command::new(fixture)
        .args(["--transport", "http", "--catalog"])
        .arg(&catalog)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("LISTENING ")
        .unwrap_or_else(|| panic!("the fixture did not say LISTENING: {line:?}"));
    let extensions = json!({"mcpServers": {"bench": {
        "type": "http",
        "url": format!("{base}/mcp"),
        "tool_name_prefix": false,
    }}});
    std::fs::write(dir.join("extensions_config.json"), extensions.to_string()).unwrap();
    std::fs::write(
        dir.join("config.yaml"),
        "tool_search:\n  enabled: true\n  listing: names\n",
    )
    .unwrap();

    let query = &data.queries[0];
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "tool_search", json!({"query": query.text}))]),
        Reply::tool_calls(&[(
            "c2",
            "tool_search",
            json!({"query": format!("select:{}", query.tool)}),
        )]),
        Reply::tool_calls(&[("c3", &query.tool, json!({}))]),
        Reply::text("Done."),
    ]);
    let out = Command::new(std::env::current_exe().unwrap())
        .env(SPAWN_DIR, dir)
        .env(SPAWN_BASE_URL, mock.base_url())
        .env(SPAWN_PROMPT, &query.text)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();

    let rss = spawner_rss_kb(&out.stdout, SPAWN_LINE, "antler -p with the MCP catalog");
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert_no_mcp_schema(data, &requests[0].tool_names());
    let mut listed = deferred_names(&requests[0]);
    let mut expected: Vec<String> = data.tools.iter().map(|t| t.name.clone()).collect();
    listed.sort();
    expected.sort();
    assert_eq!(listed, expected, "the prompt lists every catalog tool");
    assert!(requests[2].tool_names().contains(&query.tool));
    let result = requests[3].messages().last().unwrap();
    assert_eq!(result["role"], "tool");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with(&format!("called {}", query.tool)),
        "{result}"
    );
    rss
}

/// A first model call binds `tool_search` and no catalog tool.
fn assert_no_mcp_schema(data: &Data, bound: &[String]) {
    assert!(bound.iter().any(|n| n == "tool_search"), "{bound:?}");
    assert!(
        !bound
            .iter()
            .any(|n| data.tools.iter().any(|t| &t.name == n)),
        "an MCP schema is bound on the first call: {bound:?}"
    );
}

/// The names in the `<available-deferred-tools>` section of a request's system prompt.
fn deferred_names(request: &Recorded) -> Vec<String> {
    let prompt = request.system_prompt();
    let (_, rest) = prompt
        .split_once("<available-deferred-tools>\n")
        .expect("no deferred section");
    let (list, _) = rest.split_once("\n</available-deferred-tools>").unwrap();
    list.lines().map(str::to_owned).collect()
}

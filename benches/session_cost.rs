//! The chat's own cost per user message with the 527-tool LiveMCPBench catalog behind an
//! MCP server, deferred, with the example config's sandbox tools (issue 11):
//!
//! - before: what every message used to do (the removed `session::assemble`): build the
//!   built-ins, the configured tools and their sandbox runtime, take the MCP tools, build
//!   the deferred setup (catalog hash, search index), the layer chain and the prompts.
//!   Reproduced here from the same building blocks the old code called.
//! - after: what a message does now with the session's long-lived [`Assembly`]: set the
//!   thread and `prepare()`, which finds nothing changed and hands back the same agent.
//! - per step: the refresh a run now makes before each model call and tool batch
//!   ([`AgentSource::current`]).
//! - rebuild: the rebuild of the MCP tier and the catalog after a server's tool list
//!   changed (here: it reconnected), what a message costs instead when something did
//!   change; the server's own re-listing is not counted.
//!
//! The data directory defaults to `../shared/bench/livemcp` beside the crate;
//! `ANTLER_BENCH_DIR` overrides it. Without `--bench` (under `cargo test --benches`), a few
//! runs only, as a smoke check.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use antler::agent::layers::output_budget::OutputBudget;
use antler::agent::layers::{ChainOptions, agent_chain};
use antler::agent::prompt::{subagent_prompt, system_prompt};
use antler::agent::runner::{Agent, AgentSource};
use antler::config::ConfigPaths;
use antler::deferred::catalog_file::load_catalog_file;
use antler::mcp::McpManager;
use antler::provider::{OpenAiProvider, OpenAiSettings, Provider};
use antler::session::assembly::{Assembly, AssemblySpec, ThreadPlace};
use antler::setup::Setup;
use antler::tools::ToolInfo;
use antler::tools::sandbox::ThreadOutputs;
use serde_json::{Value, json};
use support::{Stats, fixture_bin, round3, stats};

const MODEL: &str = "mock-model";

/// The example config's sandbox tools, with tool search on.
const CONFIG: &str = "tool_search:\n  enabled: true\nsandbox:\n  allow_host_bash: true\ntools:\n  \
    - {name: ls, use: antler.sandbox:ls}\n  - {name: read_file, use: antler.sandbox:read_file}\n  \
    - {name: glob, use: antler.sandbox:glob}\n  - {name: grep, use: antler.sandbox:grep}\n  \
    - {name: write_file, use: antler.sandbox:write_file}\n  \
    - {name: str_replace, use: antler.sandbox:str_replace}\n  \
    - {name: bash, use: antler.sandbox:bash}\n  - {name: web_fetch, use: antler.sandbox:web_fetch}\n";

fn main() {
    let Some(dir) = support::bench_data() else {
        return;
    };
    let tools = load_catalog_file(&dir.join("catalog.json")).unwrap();
    let full = std::env::args().any(|a| a == "--bench");
    let runs = if full { 200 } else { 3 };
    if !full {
        println!("not run by `cargo bench`: a quick check with a few runs per figure");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let sandbox = tempfile::tempdir().unwrap();
    let figures = runtime.block_on(measure(sandbox.path(), &tools, runs));
    report(&figures, tools.len());
}

struct Figures {
    before: Stats,
    after: Stats,
    step: Stats,
    rebuild: Stats,
}

async fn measure(dir: &Path, tools: &[ToolInfo], runs: usize) -> Figures {
    serve_catalog(dir, tools);
    std::fs::write(dir.join("config.yaml"), CONFIG).unwrap();
    let provider: Arc<dyn Provider> =
        Arc::new(OpenAiProvider::new(OpenAiSettings::new("http://127.0.0.1:9/v1", MODEL)).unwrap());
    let place = ThreadPlace {
        date: String::from("2026-12-01"),
        outputs: dir.join("outputs/thread"),
    };
    let assembly = Assembly::new(
        setup(dir),
        dir,
        AssemblySpec {
            provider: provider.clone(),
            model: Some(MODEL.into()),
            max_turns: 50,
            clarifications: None,
            gates: Arc::new(antler::permissions::CallGates::allow_all()),
            hooks: Arc::default(),
            prompt: Default::default(),
        },
        &|_| None,
    )
    .await
    .unwrap();
    assembly.set_thread(place.clone()).await;
    let first = assembly.prepare().await.unwrap();
    let catalog = first.deferred.catalog.as_ref().map_or(0, |c| c.len());
    assert_eq!(catalog, tools.len(), "every catalog tool is deferred");

    let mut after = Vec::new();
    let mut step = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        assembly.set_thread(place.clone()).await;
        let agent = assembly.prepare().await.unwrap();
        after.push(ms(started.elapsed()));
        assert!(
            Arc::ptr_eq(&agent, &first),
            "nothing changed, nothing rebuilt"
        );
        let started = Instant::now();
        let agent = assembly.current().await.unwrap();
        step.push(ms(started.elapsed()));
        assert!(Arc::ptr_eq(&agent, &first));
    }
    assert_eq!(assembly.rebuilds().await, 1);

    // The same servers, the old way: everything but the MCP connections, per message.
    let mcp = assembly.mcp().await;
    let old = setup(dir);
    let mut before = Vec::new();
    for _ in 0..runs.min(40) {
        let started = Instant::now();
        let agent = rebuild_as_before(&old, &mcp, provider.clone(), &place).await;
        before.push(ms(started.elapsed()));
        assert_eq!(agent.system_prompt, first.system_prompt);
    }

    // A server's tool list changes: the MCP tier and the catalog are taken again.
    let mut rebuild = Vec::new();
    let servers = mcp.servers();
    for n in 0..runs.min(40) {
        servers[0].reconnect().await;
        let started = Instant::now();
        let agent = assembly.current().await.unwrap();
        rebuild.push(ms(started.elapsed()));
        assert_eq!(
            agent.deferred.catalog.as_ref().map_or(0, |c| c.len()),
            catalog
        );
        assert_eq!(
            assembly.rebuilds().await,
            2 + n as u64,
            "a reconnect relists"
        );
    }
    mcp.shutdown(Duration::from_secs(1)).await;
    Figures {
        before: stats(before),
        after: stats(after),
        step: stats(step),
        rebuild: stats(rebuild),
    }
}

fn ms(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1e3
}

fn setup(dir: &Path) -> Setup {
    Setup::load(
        &ConfigPaths::default(),
        dir,
        &|_| None,
        &antler::trust::ProjectTrust::everything(),
    )
    .unwrap()
}

/// One stdio server with every catalog tool under its unique catalog name (no prefix).
fn serve_catalog(dir: &Path, tools: &[ToolInfo]) {
    let flat: Vec<Value> = tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.parameters}))
        .collect();
    let catalog = dir.join("bench-catalog.json");
    std::fs::write(&catalog, json!({"bench": flat}).to_string()).unwrap();
    let extensions = json!({"mcpServers": {"bench": {
        "command": fixture_bin(),
        "args": ["--catalog", catalog],
        "tool_name_prefix": false,
    }}});
    std::fs::write(dir.join("extensions_config.json"), extensions.to_string()).unwrap();
}

/// What one message cost before the long-lived assembly, from the same building blocks.
async fn rebuild_as_before(
    setup: &Setup,
    mcp: &McpManager,
    provider: Arc<dyn Provider>,
    place: &ThreadPlace,
) -> Agent {
    std::fs::create_dir_all(&place.outputs).unwrap();
    let outputs = ThreadOutputs::default();
    outputs.set(Some(&place.outputs));
    let builtins = setup.builtins(Some(MODEL), None, &outputs).unwrap();
    let toolset = setup
        .toolset(mcp, None, builtins.tools, &outputs)
        .await
        .unwrap();
    let deferred = Arc::new(setup.deferred(&toolset, Some(MODEL), &[]).unwrap());
    let servers: Vec<_> = mcp.servers().iter().map(|s| s.config().clone()).collect();
    let config = &setup.app.value;
    let cwd = setup.cwd.as_path();
    std::hint::black_box(subagent_prompt(
        &place.date,
        cwd,
        &deferred,
        &Default::default(),
    ));
    let options = ChainOptions {
        output_budget: Some(OutputBudget::new(
            config.tool_output.max_chars,
            place.outputs.clone(),
        )),
        redact: setup.redact(mcp),
        instructions: Default::default(),
        vision: false,
        skills: Some(setup.skills().clone()),
    };
    Agent {
        provider,
        chain: agent_chain(&deferred, &config.tool_search, &servers, options),
        system_prompt: system_prompt(&place.date, cwd, &deferred, &Default::default()),
        deferred,
        max_turns: 50,
        summarization: None,
        ledger: Default::default(),
        gates: Arc::new(antler::permissions::CallGates::allow_all()),
        hooks: Arc::default(),
    }
}

fn report(f: &Figures, tools: usize) {
    let dist = |s: &Stats| format!("median {:.3} ms, p90 {:.3} ms", s.median, s.p90);
    println!();
    println!("{:<62} measured", "figure");
    let rows = [
        (
            format!("chat, own cost per message, {tools} tools deferred: before"),
            &f.before,
        ),
        (
            String::from("  after (long-lived assembly, nothing changed)"),
            &f.after,
        ),
        (String::from("  refresh before each step of a run"), &f.step),
        (
            String::from("  rebuild after a server's tools changed (relist not counted)"),
            &f.rebuild,
        ),
    ];
    for (name, s) in rows {
        println!("{name:<62} {}", dist(s));
    }
    let json =
        |s: &Stats| json!({"median_ms": round3(s.median), "p90_ms": round3(s.p90), "runs": s.n});
    println!(
        "{}",
        json!({
            "bench": "session_cost",
            "catalog_tools": tools,
            "per_message_before": json(&f.before),
            "per_message_after": json(&f.after),
            "refresh_per_step": json(&f.step),
            "rebuild_after_change": json(&f.rebuild),
        })
    );
}

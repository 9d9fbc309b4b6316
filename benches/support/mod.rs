//! What the benchmarks share: the fixture MCP server binary, the `antler` command in a
//! scratch directory, memory readings and sample statistics.

#![allow(dead_code, reason = "each bench uses a part of the shared helpers")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use antler::agent::layers::output_budget::OutputBudget;
use antler::agent::layers::summarize::Summarization;
use antler::agent::layers::{ChainOptions, agent_chain};
use antler::agent::prompt::system_prompt;
use antler::agent::runner::Agent;
use antler::config::ConfigPaths;
use antler::deferred::DEFAULT_CONTEXT_WINDOW;
use antler::deferred::catalog_file::catalog_tools;
use antler::provider::Provider;
use antler::setup::Setup;
use antler::tools::{ToolInfo, assemble_toolset};

/// Median and 90th percentile of some samples, in milliseconds.
#[derive(Clone, Copy)]
pub(crate) struct Stats {
    pub median: f64,
    pub p90: f64,
    pub n: usize,
}

/// The sentence encoder for the search benches: the model at `$ANTLER_SEMANTIC_MODEL` (e.g.
/// `target/interop/models/multilingual-e5-small`), else all-MiniLM-L6-v2 where
/// `.ci/interop-deps` installs it, with tool vectors cached in
/// `target/bench-embeddings.sqlite` (the first run embeds a catalog once); `None`, saying
/// so, when the model is missing.
pub(crate) fn semantic_model() -> Option<Arc<antler_search::semantic::SemanticModel>> {
    let dir = std::env::var_os("ANTLER_SEMANTIC_MODEL").map_or_else(
        || interop_models().join(antler_search::semantic::MODEL_NAME),
        PathBuf::from,
    );
    bench_model(dir)
}

/// The multilingual encoder ranking beside [`semantic_model`], as a session finds it in the
/// models folder: `target/interop/models/multilingual-e5-small` unless that is the model
/// already, or `ANTLER_BENCH_MULTILINGUAL=off`.
pub(crate) fn multilingual_model() -> Option<Arc<antler_search::semantic::SemanticModel>> {
    if std::env::var_os("ANTLER_BENCH_MULTILINGUAL").is_some_and(|v| v == "off") {
        return None;
    }
    let dir = interop_models().join(antler_search::semantic::MULTILINGUAL_MODEL_NAME);
    let same = std::env::var_os("ANTLER_SEMANTIC_MODEL")
        .is_some_and(|primary| Path::new(&primary).canonicalize().ok() == dir.canonicalize().ok());
    if same {
        return None;
    }
    bench_model(dir)
}

/// The dictionary glossing Chinese queries, where `.ci/interop-deps` installs it, read now
/// (so no search pays for it); `None`, saying so, when it is missing or
/// `ANTLER_BENCH_DICTIONARY=off`.
pub(crate) fn dictionary() -> Option<Arc<antler_search::gloss::Glossary>> {
    use antler_search::gloss::{DICTIONARY_NAME, Glossary};
    if std::env::var_os("ANTLER_BENCH_DICTIONARY").is_some_and(|v| v == "off") {
        return None;
    }
    let glossary = Glossary::new(interop_models().join(DICTIONARY_NAME));
    let started = std::time::Instant::now();
    match glossary.dictionary() {
        Ok(d) => println!(
            "dictionary: {} headwords, read in {:.1?}",
            d.headwords(),
            started.elapsed()
        ),
        Err(err) => {
            println!("no dictionary ({err}): it is not measured");
            return None;
        }
    }
    Some(Arc::new(glossary))
}

fn interop_models() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/interop/models")
}

/// The model in `dir` with the bench's vector cache; `None`, saying so, when it is missing.
fn bench_model(dir: PathBuf) -> Option<Arc<antler_search::semantic::SemanticModel>> {
    use antler_search::semantic::{
        ModelLocation, ModelSource, SemanticModel, cache::EmbeddingCache,
    };
    let weights = [
        antler_search::semantic::WEIGHTS_FILE,
        antler_search::semantic::E5_WEIGHTS_FILE,
    ];
    if !weights.iter().any(|file| dir.join(file).exists()) {
        println!(
            "no sentence encoder model at {}: it is not measured",
            dir.display()
        );
        return None;
    }
    println!("sentence encoder: {}", dir.display());
    let cache = EmbeddingCache::at(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-embeddings.sqlite"),
    );
    let location = ModelLocation {
        dir,
        source: ModelSource::Environment,
    };
    Some(Arc::new(SemanticModel::new(location, Some(cache))))
}

/// The LiveMCPBench data: `$ANTLER_BENCH_DIR`, else `../shared/bench/livemcp` beside the
/// crate; `None` (and a message saying the bench is skipped) when it is missing.
pub(crate) fn bench_data() -> Option<PathBuf> {
    let dir = std::env::var_os("ANTLER_BENCH_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/livemcp"),
        PathBuf::from,
    );
    if !dir.join("catalog.json").exists() {
        println!("no benchmark data at {}; skipped", dir.display());
        return None;
    }
    Some(dir)
}

/// Where the fixture MCP server is built, beside the antler binary in use.
fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_antler"))
        .parent()
        .unwrap()
        .join("examples/fixture_mcp")
}

/// The fixture MCP server, built (in the profile of the antler binary) if missing.
pub(crate) fn fixture_bin() -> PathBuf {
    let path = fixture_path();
    if !path.exists() {
        println!("building the fixture MCP server...");
        let release = path
            .parent()
            .and_then(Path::parent)
            .is_some_and(|p| p.ends_with("release"));
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "--quiet", "--example", "fixture_mcp"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if release {
            cmd.arg("--release");
        }
        assert!(
            cmd.status().unwrap().success(),
            "building fixture_mcp failed"
        );
        assert!(path.exists(), "{} was not built", path.display());
    }
    path
}

pub(crate) fn stats(mut samples: Vec<f64>) -> Stats {
    assert!(!samples.is_empty());
    samples.sort_by(f64::total_cmp);
    Stats {
        median: percentile(&samples, 0.5),
        p90: percentile(&samples, 0.9),
        n: samples.len(),
    }
}

/// The `p` quantile of sorted samples, linearly interpolated.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let pos = p * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

pub(crate) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The model name the benches' mock server is asked for.
pub(crate) const MOCK_MODEL: &str = "mock-model";

/// A scratch directory's `antler` command: HOME and XDG folders inside it, no inherited
/// configuration, the mock as the endpoint.
pub(crate) fn antler_in(dir: &Path, base_url: &str) -> Command {
    antler_at(Path::new(env!("CARGO_BIN_EXE_antler")), dir, base_url)
}

/// [`antler_in`] with another antler binary (a before/after comparison).
pub(crate) fn antler_at(bin: &Path, dir: &Path, base_url: &str) -> Command {
    let mut cmd = Command::new(bin);
    cmd.current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("xdg-config"))
        .env("XDG_STATE_HOME", dir.join("xdg-state"))
        .env("XDG_DATA_HOME", dir.join("xdg-data"))
        .env("ANTLER_LOG_FILE", dir.join("antler.log"))
        .env_remove("ANTLER_DATA_DIR")
        .env_remove("ANTLER_MODEL")
        .env_remove("ANTLER_CONFIG")
        .env_remove("ANTLER_EXTENSIONS_CONFIG")
        .env_remove("ANTLER_LOG")
        .env_remove("RUST_LOG")
        .env("OPENAI_BASE_URL", base_url)
        .env("OPENAI_API_KEY", "sk-bench")
        // The sandbox's config.yaml and extensions_config.json are the bench's own, and the
        // benches measure running tools, not asking for them (-p would refuse MCP calls).
        .args([
            "--trust-project",
            "--permission-mode",
            "allow-all",
            "-m",
            MOCK_MODEL,
        ])
        .stdin(Stdio::null());
    cmd
}

/// This process's resident-set high-water mark (`VmHWM`), in KiB.
pub(crate) fn vm_hwm_kb() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("no VmHWM in /proc/self/status")
}

/// The spawner's side of a peak-RSS reading: runs `command` (an `antler` run) and prints
/// `<its max RSS> <this process's VmHWM before the spawn> <exit code>` (KiB) after
/// `prefix`, with the run's stderr on failure. Called in a small copy of a bench that waits
/// for no other child: a child's `ru_maxrss` starts at its spawner's resident set.
pub(crate) fn spawn_and_report(mut command: Command, prefix: &str) {
    let own_hwm = vm_hwm_kb();
    let out = command.output().unwrap();
    let rss = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .unwrap()
        .max_rss();
    if !out.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    }
    println!(
        "{prefix}{rss} {own_hwm} {}",
        out.status.code().unwrap_or(-1)
    );
}

/// The `<max RSS> <spawner VmHWM> <exit code>` line a spawner copy of a bench printed
/// after `prefix`, checked: the run succeeded (`what` names it) and the reading is above
/// the spawner's own resident set (a child's `ru_maxrss` starts at its spawner's). The
/// max RSS, in KiB.
pub(crate) fn spawner_rss_kb(stdout: &[u8], prefix: &str, what: &str) -> i64 {
    let stdout = String::from_utf8_lossy(stdout);
    let report: Vec<i64> = stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no report from the spawner: {stdout}"))
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let [rss, spawner_hwm, code] = report[..] else {
        panic!("bad spawner report: {report:?}");
    };
    assert_eq!(code, 0, "{what} failed");
    assert!(
        rss > spawner_hwm,
        "the reading ({rss} KiB) is not above the spawner's own {spawner_hwm} KiB"
    );
    rss
}

/// The agent as `antler -p` builds it (`src/cli/agent.rs`) from `config_yaml`: the
/// built-ins, `tools` as the MCP tier (every one deferred), the full layer chain with the
/// output budget, the default summarisation, with `provider` as the model.
pub(crate) fn catalog_agent(
    tools: &[ToolInfo],
    provider: Arc<dyn Provider>,
    dir: &Path,
    config_yaml: &str,
) -> Agent {
    let config = dir.join("config.yaml");
    std::fs::write(&config, config_yaml).unwrap();
    let paths = ConfigPaths {
        config: Some(config),
        extensions: None,
        overrides: Vec::new(),
    };
    let setup = Setup::load(
        &paths,
        dir,
        &|_| None,
        &antler::trust::ProjectTrust::everything(),
    )
    .unwrap();
    let builtins = setup
        .builtins(Some(MOCK_MODEL), None, &Default::default())
        .unwrap();
    let (toolset, warnings) =
        assemble_toolset(Vec::new(), builtins.tools, catalog_tools(tools.to_vec()));
    assert!(warnings.is_empty(), "{warnings:?}");
    let deferred = setup.deferred(&toolset, Some(MOCK_MODEL), &[]).unwrap();
    assert_eq!(
        deferred.catalog.as_ref().map(|c| c.len()),
        Some(tools.len()),
        "every catalog tool is deferred"
    );
    let app = &setup.app.value;
    let window = u64::from(
        setup
            .context_window(Some(MOCK_MODEL))
            .unwrap_or(DEFAULT_CONTEXT_WINDOW),
    );
    let options = ChainOptions {
        output_budget: Some(OutputBudget::new(
            app.tool_output.max_chars,
            dir.join("outputs"),
        )),
        redact: Default::default(),
        instructions: Default::default(),
        vision: false,
        skills: None,
    };
    Agent {
        provider,
        chain: agent_chain(&deferred, &app.tool_search, &[], options),
        system_prompt: system_prompt(
            &antler::base::clock::utc_date(antler::base::clock::now_unix()),
            dir,
            &deferred,
            &Default::default(),
        ),
        deferred: Arc::new(deferred),
        max_turns: 50,
        summarization: Some(Summarization {
            trigger_tokens: window * 3 / 4,
            keep_messages: 10,
        }),
        ledger: Default::default(),
        // The benchmarks measure finding and calling tools, not asking for them.
        gates: Arc::new(antler::permissions::CallGates::allow_all()),
        hooks: Arc::default(),
    }
}

/// 200 servers of 50 tools: server `i` copies real server `i mod n` under the name
/// `{server}-{i}`, its tools cycled under the names `{tool}_{k}` (10,000 tools).
pub(crate) fn synthetic_catalog(real: &[ToolInfo]) -> Vec<ToolInfo> {
    use antler::tools::ToolSource;
    const SERVERS: usize = 200;
    const PER_SERVER: usize = 50;
    let mut by_server: Vec<(String, Vec<&ToolInfo>)> = Vec::new();
    for tool in real {
        let ToolSource::Mcp { server, .. } = &tool.source else {
            continue;
        };
        match by_server.iter_mut().find(|(s, _)| s == server) {
            Some((_, tools)) => tools.push(tool),
            None => by_server.push((server.clone(), vec![tool])),
        }
    }
    let mut out = Vec::with_capacity(SERVERS * PER_SERVER);
    for i in 0..SERVERS {
        let (server, tools) = &by_server[i % by_server.len()];
        let renamed = format!("{server}-{i}");
        for k in 0..PER_SERVER {
            let seed = tools[k % tools.len()];
            let ToolSource::Mcp { original_name, .. } = &seed.source else {
                continue;
            };
            let original = format!("{original_name}_{k}");
            out.push(ToolInfo {
                name: format!("{renamed}_{original}"),
                source: ToolSource::Mcp {
                    server: renamed.clone(),
                    original_name: original,
                },
                ..seed.clone()
            });
        }
    }
    out
}

//! How much of each prompt a provider's prompt cache can serve, `tool_search.binding:
//! native` against `stable` (issue 14).
//!
//! One thread of 10 user turns over the 527-tool LiveMCPBench catalog (deferred, listed as
//! `auto` lists it), run in process through the library with the real layer chain and the
//! real `OpenAiProvider` against the mock server's prompt cache (`MockOpenAi::start_caching`:
//! the longest common prefix with any earlier request, serialized tools first, then
//! messages; one token per 4 bytes). Turns 2, 3, 5, 7 and 9 each promote a tool with
//! `tool_search` and call it; turns 4, 6, 8 and 10 call a tool promoted before; turn 1 is
//! a plain answer. Reported per user turn and over turns 2–10: the share of prompt tokens
//! served from the cache. Deterministic: the same figures on every run.
//!
//! The data directory defaults to `../shared/bench/livemcp`; `ANTLER_BENCH_DIR`
//! overrides it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mock_openai/mod.rs"]
mod mock_openai;
mod support;

use std::path::Path;
use std::sync::Arc;

use antler::agent::runner::{Agent, Thread};
use antler::config::Binding;
use antler::deferred::catalog_file::load_catalog_file;
use antler::protocol::{Event, RunStatus};
use antler::provider::{OpenAiProvider, OpenAiSettings};
use antler::store::{StoreSink, ThreadStore};
use antler::tools::ToolInfo;
use mock_openai::{MockOpenAi, Reply};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const MODEL: &str = support::MOCK_MODEL;
/// The user turns of the thread.
const TURNS: usize = 10;
/// The user turns that promote a new tool.
const PROMOTING: [usize; 5] = [2, 3, 5, 7, 9];

/// One model call's prompt: its user turn, its tokens, and how many came from the cache.
struct Call {
    turn: usize,
    prompt: u64,
    cached: u64,
}

fn main() {
    let Some(dir) = support::bench_data() else {
        return;
    };
    let tools = load_catalog_file(&dir.join("catalog.json")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut report = serde_json::Map::new();
    println!(
        "share of prompt tokens served from the cache, per user turn (10-turn thread, 5 promotions)"
    );
    println!(
        "{:<8} {}",
        "binding",
        (1..=TURNS).map(|t| format!("{t:>5}")).collect::<String>()
    );
    for binding in [Binding::Native, Binding::Stable] {
        let calls = thread(&runtime, &tools, binding);
        let share = |keep: &dyn Fn(&Call) -> bool| {
            let (prompt, cached) = calls
                .iter()
                .filter(|c| keep(c))
                .fold((0, 0), |(p, c), call| (p + call.prompt, c + call.cached));
            cached as f64 / prompt as f64
        };
        let per_turn: Vec<f64> = (1..=TURNS).map(|t| share(&|c| c.turn == t)).collect();
        let from_second = share(&|c| c.turn >= 2);
        let worst = calls
            .iter()
            .filter(|c| c.turn >= 2)
            .map(|c| c.cached as f64 / c.prompt as f64)
            .fold(f64::INFINITY, f64::min);
        println!(
            "{:<8} {}   turns 2-10: {:.1}%, worst call {:.1}%",
            binding.as_str(),
            per_turn
                .iter()
                .map(|s| format!("{:>5.1}", s * 100.0))
                .collect::<String>(),
            from_second * 100.0,
            worst * 100.0
        );
        report.insert(
            binding.as_str().to_string(),
            json!({
                "per_turn": per_turn.iter().map(|s| support::round3(*s)).collect::<Vec<_>>(),
                "turns_2_to_10": support::round3(from_second),
                "worst_call_from_turn_2": support::round3(worst),
                "model_calls": calls.len(),
                "prompt_tokens": calls.iter().map(|c| c.prompt).sum::<u64>(),
            }),
        );
    }
    println!("prompt_cache {}", Value::Object(report));
}

/// Runs the thread with `binding`; returns every model call's prompt figures.
fn thread(runtime: &tokio::runtime::Runtime, tools: &[ToolInfo], binding: Binding) -> Vec<Call> {
    let dir = tempfile::tempdir().unwrap();
    let store = ThreadStore::open(&dir.path().join("threads.db")).unwrap();
    let mock = MockOpenAi::start_caching(Vec::new());
    let mut settings = OpenAiSettings::new(mock.base_url(), MODEL);
    settings.api_key = Some("sk-bench".into());
    let provider = Arc::new(OpenAiProvider::new(settings).unwrap());
    let agent = agent(tools, provider, dir.path(), binding);
    let meta = store.create(Path::new("/bench"), MODEL).unwrap();
    let mut thread = Thread {
        id: meta.id,
        ..Thread::default()
    };
    let sink = StoreSink::new(&store);
    let cancel = CancellationToken::new();
    let calls = std::sync::Mutex::new(Vec::new());
    let promoted: Vec<&str> = tools.iter().step_by(97).map(|t| t.name.as_str()).collect();
    let mut first_tools: Option<Value> = None;
    for turn in 1..=TURNS {
        for reply in script(turn, &promoted, binding) {
            mock.push(reply);
        }
        let emit = |event: Event| {
            if let Event::Usage { usage, .. } = event {
                calls.lock().unwrap().push(Call {
                    turn,
                    prompt: usage.input_tokens,
                    cached: usage.cached_input_tokens,
                });
            }
        };
        let prompt = format!("user turn {turn}: please do the next step of the task");
        let result = runtime.block_on(agent.run(&mut thread, prompt, &sink, &emit, &cancel));
        assert_eq!(result.status, RunStatus::Success, "{:?}", result.errors);
        let tools_now = mock.requests().last().unwrap().body["tools"].clone();
        let first = first_tools.get_or_insert(tools_now.clone());
        if binding == Binding::Stable {
            assert_eq!(
                *first, tools_now,
                "a stable binding changed the tools array"
            );
        }
    }
    assert_eq!(
        thread.state.promoted.names.len(),
        PROMOTING.len(),
        "every promotion took"
    );
    calls.into_inner().unwrap()
}

/// The model's replies for one user turn.
fn script(turn: usize, promoted: &[&str], binding: Binding) -> Vec<Reply> {
    let call = |id: String, name: &str| {
        let arguments = json!({"query": "bench"});
        match binding {
            Binding::Native => Reply::tool_calls(&[(&id, name, arguments)]),
            Binding::Stable => Reply::tool_calls(&[(
                &id,
                "call_tool",
                json!({"name": name, "arguments": arguments}),
            )]),
        }
    };
    let answer = Reply::text(&format!("Turn {turn} is done; here is what I found."));
    let done = PROMOTING.iter().filter(|&&t| t < turn).count();
    if let Some(k) = PROMOTING.iter().position(|&t| t == turn) {
        let name = promoted[k];
        let select = json!({"query": format!("select:{name}")});
        vec![
            Reply::tool_calls(&[(&format!("s{turn}"), "tool_search", select)]),
            call(format!("c{turn}"), name),
            answer,
        ]
    } else if done > 0 {
        vec![call(format!("c{turn}"), promoted[done - 1]), answer]
    } else {
        vec![answer]
    }
}

/// The agent as `antler -p` builds it with `tool_search: {enabled: true, binding: ...}`.
fn agent(tools: &[ToolInfo], provider: Arc<OpenAiProvider>, dir: &Path, binding: Binding) -> Agent {
    let yaml = format!(
        "tool_search:\n  enabled: true\n  binding: {}\n",
        binding.as_str()
    );
    support::catalog_agent(tools, provider, dir, &yaml)
}

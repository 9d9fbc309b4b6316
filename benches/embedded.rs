//! The embedded model on this machine (issue 30): load time, prompt and generated tokens per
//! second, what the prompt cache saves on a thread's second call, and peak memory.
//!
//! Runs each installed chat model (`$ANTLER_MODELS_DIR`, else `target/interop/models`, which
//! `.ci/interop-deps` fills) through the library's `EmbeddedProvider`, as a session would:
//!
//! 1. the first call of a thread: a system prompt with a deferred listing of 60 tools from
//!    the LiveMCPBench catalog (or a synthetic one without `../shared`), `tool_search`
//!    bound, a user question;
//! 2. the second call: the same thread with the model's tool call and its result appended
//!    (`binding: stable`: the tools do not change), where only the new messages should run;
//! 3. a long answer, for the generation rate.
//!
//! One model per process run would give a clean peak RSS; with both installed the second
//! model's reading includes the first's high-water mark, so `--model NAME` picks one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use antler::protocol::{Message, ToolCall};
use antler::provider::ToolSpec;
use antler::provider::embedded::EmbeddedProvider;
use antler::provider::embedded::catalog::CHAT_MODELS;
use antler::provider::{ModelRequest, Provider};
use serde_json::{Value, json};

fn main() {
    let dir = std::env::var_os(antler::config::dirs::MODELS_DIR_ENV).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/interop/models"),
        PathBuf::from,
    );
    let only = std::env::args().skip_while(|a| a != "--model").nth(1);
    let mut ran = false;
    for model in CHAT_MODELS {
        if only.as_deref().is_some_and(|name| name != model.name) {
            continue;
        }
        let path = model.path(&dir);
        if !path.is_file() {
            println!(
                "{}: not installed in {}, skipped",
                model.name,
                dir.display()
            );
            continue;
        }
        ran = true;
        run(EmbeddedProvider::new(model, path), model.name, model.size);
    }
    if !ran {
        println!("no embedded model installed: run .ci/interop-deps or `antler models fetch chat`");
    }
}

fn run(provider: EmbeddedProvider, name: &str, file_size: u64) {
    let first = first_request();
    let (loaded, one) = provider.probe(&first).unwrap();
    let mut messages = first.messages.clone();
    messages.push(Message::Assistant {
        content: String::new(),
        reasoning: String::new(),
        tool_calls: vec![ToolCall {
            id: "c1".into(),
            name: "tool_search".into(),
            arguments: r#"{"query": "current time in a timezone"}"#.into(),
        }],
    });
    messages.push(Message::Tool {
        call_id: "c1".into(),
        name: "tool_search".into(),
        content: r#"[{"name":"time_get_current_time","description":"Get the current time in a specific timezone","parameters":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}}]"#.into(),
        is_error: false,
    });
    let second = ModelRequest {
        messages,
        ..first.clone()
    };
    let (_, two) = provider.probe(&second).unwrap();
    let long = ModelRequest {
        system: "You are a helpful assistant.".into(),
        messages: vec![Message::User {
            content: "Write a 300-word story about a lighthouse keeper.".into(),
        }],
        tools: Vec::new(),
        max_tokens: Some(96),
        callable: Default::default(),
    };
    let (_, three) = provider.probe(&long).unwrap();
    let peak_mb = peak_rss_kb() as f64 / 1024.0;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    println!("{name}: {}", provider.endpoint());
    println!(
        "  load                     {:>8.0} ms",
        ms(loaded.unwrap_or_default())
    );
    println!(
        "  first call               {:>8.0} ms for {} prompt tokens ({:.1} tokens/s)",
        ms(one.prompt_time),
        one.prompt_tokens,
        one.prompt_rate()
    );
    println!(
        "  second call              {:>8.0} ms: {} of {} prompt tokens from the cache, {} run",
        ms(two.prompt_time),
        two.cached_tokens,
        two.prompt_tokens,
        two.prompt_tokens - two.cached_tokens
    );
    println!(
        "  second call, no cache    {:>8.0} ms (estimated at the first call's rate)",
        two.prompt_tokens as f64 / one.prompt_rate() * 1000.0
    );
    println!(
        "  generation               {:>8.1} tokens/s ({} tokens)",
        three.output_rate(),
        three.output_tokens
    );
    println!(
        "  peak RSS                 {:>8.0} MB (file {:.0} MB)",
        peak_mb,
        file_size as f64 / 1e6
    );
    let report = json!({
        "bench": "embedded",
        "model": name,
        "load_ms": ms(loaded.unwrap_or_default()),
        "first_prompt_tokens": one.prompt_tokens,
        "first_prompt_ms": ms(one.prompt_time),
        "prompt_tokens_per_s": one.prompt_rate(),
        "second_prompt_tokens": two.prompt_tokens,
        "second_cached_tokens": two.cached_tokens,
        "second_prompt_ms": ms(two.prompt_time),
        "generated_tokens_per_s": three.output_rate(),
        "peak_rss_mb": peak_mb,
    });
    println!("{report}");
}

/// A session's first call: a system prompt with a deferred listing, `tool_search` bound.
fn first_request() -> ModelRequest {
    let data =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/livemcp/catalog.json");
    let listing: Vec<String> = std::fs::read_to_string(&data)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .map(|catalog| names_in(&catalog))
        .unwrap_or_else(|| {
            (0..60)
                .map(|i| format!("server{}_tool_{i}", i % 7))
                .collect()
        });
    let system = format!(
        "You are antler, a terminal agent. Use tools when they help.\n\n\
         <available-deferred-tools>\n{}\n</available-deferred-tools>\n\
         Call tool_search to load a deferred tool before calling it.",
        listing.join("\n")
    );
    ModelRequest {
        system,
        messages: vec![Message::User {
            content: "What time is it in Tokyo right now?".into(),
        }],
        tools: vec![ToolSpec {
            name: "tool_search".into(),
            description: "Search the deferred tools by what they do; returns their schemas.".into(),
            parameters: json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
        }],
        max_tokens: Some(48),
        callable: Default::default(),
    }
}

/// The first 60 tool names of a catalog file (whatever its exact shape).
fn names_in(catalog: &Value) -> Vec<String> {
    let mut names = Vec::new();
    collect_names(catalog, &mut names);
    names.truncate(60);
    names
}

fn collect_names(value: &Value, names: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(name)) = map.get("name") {
                names.push(name.clone());
            } else {
                map.values().for_each(|v| collect_names(v, names));
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_names(v, names)),
        _ => {}
    }
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmHWM:")
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
        })
        .unwrap_or(0)
}

//! Search speed on a deterministic synthetic catalog of 10,000 tools: building the index,
//! ranked / regex searches of the kinds a model sends, and the catalog hash.
//!
//! The catalog is the LiveMCPBench one (`../shared/bench/livemcp/catalog.json`, or
//! `ANTLER_BENCH_DIR`) replicated under renamed servers, each copy with about a fifth of its
//! description words swapped for catalog words picked by a fixed PRNG, so postings and the
//! vocabulary grow as in a real large catalog. Without the data a small built-in seed is used.
//!
//! With the sentence encoder's model (`$ANTLER_SEMANTIC_MODEL`, default where
//! `.ci/interop-deps` installs it) the ranked searches are also timed with the encoder, on
//! the 527-tool real catalog and the 10,000-tool one, tool vectors cached in
//! `target/bench-embeddings.sqlite` (the first run embeds the 10,000 tools once: minutes);
//! `embed_tool_text` times one tool text's embedding on one core (the throughput).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use antler::deferred::catalog_file::{load_catalog_file, parse_catalog};
use antler::tools::{ToolInfo, ToolSource};
use antler_search::semantic::{Encoder, SemanticModel};
use antler_search::{EmbedMode, Hit, SearchIndex, SemanticSearch};
use divan::Bencher;

mod support;

const TOOLS: usize = 10_000;

fn main() {
    println!("synthetic catalog: {} tools", CATALOG.len());
    divan::main();
}

static CATALOG: LazyLock<Vec<ToolInfo>> = LazyLock::new(|| synthetic(&seed(), TOOLS));
static INDEX: LazyLock<SearchIndex> = LazyLock::new(|| SearchIndex::new(&CATALOG));

/// The queries timed: keyword, sentence, Chinese, a long task, and regexes.
const QUERIES: &[&str] = &[
    "docker container logs",
    "What was Tesla's closing share price on March 15, 2023?",
    "知乎热榜上现在大家都在讨论什么？",
    "I'm planning a trip to the Forbidden City in Beijing, show me where to park and what's \
     interesting to do within 1km distance, then save a summary to /root/markdown/trip.md",
    "^playwright.*click",
    "screenshot|pdf",
];

/// The sentence encoder, if its model is installed.
static MODEL: LazyLock<Option<Arc<SemanticModel>>> = LazyLock::new(support::semantic_model);
/// The multilingual encoder beside it, if installed (see `support::multilingual_model`).
static MULTILINGUAL: LazyLock<Option<Arc<SemanticModel>>> =
    LazyLock::new(support::multilingual_model);
/// The dictionary glossing the Chinese query, if installed (see `support::dictionary`).
static DICTIONARY: LazyLock<Option<Arc<antler_search::gloss::Glossary>>> =
    LazyLock::new(support::dictionary);

/// An index of `tools` ranking with the encoder, its vectors ready (embedded once, with
/// progress on stderr, if not cached).
fn with_encoder(tools: &[ToolInfo]) -> Option<SearchIndex> {
    let model = MODEL.as_ref()?;
    let progress = Arc::new(|done: usize, total: usize| {
        if done.is_multiple_of(500) || done == total {
            eprintln!("embedding tools: {done}/{total}");
        }
    });
    let search = SemanticSearch {
        model: Arc::clone(model),
        multilingual: MULTILINGUAL.clone(),
        dictionary: DICTIONARY.clone(),
        mode: EmbedMode::Blocking(Some(progress)),
    };
    let index = SearchIndex::with_semantic(tools, Some(search));
    index.search("warm up", 1, &|_| true);
    Some(index)
}

static REAL: LazyLock<Vec<ToolInfo>> = LazyLock::new(seed);
static ENCODED_REAL: LazyLock<Option<SearchIndex>> = LazyLock::new(|| with_encoder(&REAL));
static ENCODED: LazyLock<Option<SearchIndex>> = LazyLock::new(|| with_encoder(&CATALOG));

#[divan::bench(args = QUERIES)]
fn search_encoder_real_catalog(bencher: Bencher, query: &str) {
    let Some(index) = &*ENCODED_REAL else { return };
    bencher.bench(|| -> Vec<Hit> { index.search(divan::black_box(query), 5, &|_| true) });
}

#[divan::bench(args = QUERIES)]
fn search_encoder_10k(bencher: Bencher, query: &str) {
    let Some(index) = &*ENCODED else { return };
    bencher.bench(|| -> Vec<Hit> { index.search(divan::black_box(query), 5, &|_| true) });
}

/// One tool text (a typical one of the real catalog) embedded on one core.
#[divan::bench(sample_count = 20)]
fn embed_tool_text(bencher: Bencher) {
    let Some(model) = &*MODEL else { return };
    let encoder: Arc<Encoder> = model.encoder().unwrap();
    let text = "yahoo finance get stock price by date. Get the stock price for a given stock \
                symbol on a specific date. Parameters: symbol date. The ticker symbol, e.g. \
                AAPL The date in YYYY-MM-DD format";
    bencher.bench(|| encoder.embed_document(divan::black_box(text)));
}

/// A short query embedded (what every ranked search with the encoder pays).
#[divan::bench(args = ["docker container logs", "What was Tesla's closing share price on March 15, 2023?"])]
fn embed_query(bencher: Bencher, query: &str) {
    let Some(model) = &*MODEL else { return };
    let encoder: Arc<Encoder> = model.encoder().unwrap();
    bencher.bench(|| encoder.embed_query(divan::black_box(query)));
}

#[divan::bench(sample_count = 10)]
fn build_index(bencher: Bencher) {
    let tools = &*CATALOG;
    bencher.bench(|| SearchIndex::new(divan::black_box(tools)));
}

#[divan::bench(args = QUERIES)]
fn search(bencher: Bencher, query: &str) {
    let index = &*INDEX;
    bencher.bench(|| -> Vec<Hit> { index.search(divan::black_box(query), 5, &|_| true) });
}

/// The real catalog if present, else a few built-in tools.
fn seed() -> Vec<ToolInfo> {
    let dir = std::env::var_os("ANTLER_BENCH_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/livemcp"),
        PathBuf::from,
    );
    load_catalog_file(&dir.join("catalog.json")).unwrap_or_else(|_| {
        parse_catalog(
            r#"{"playwright": [{"name": "playwright_click", "description": "Click an element on the page"},
                               {"name": "playwright_screenshot", "description": "Take a screenshot of the current page"}],
                "docker-mcp": [{"name": "get-logs", "description": "Retrieve the latest logs for a specified Docker container"}],
                "yahoo-finance": [{"name": "get_stock_price_by_date", "description": "Get the stock price for a given stock symbol on a specific date."}],
                "trends-hub": [{"name": "get-zhihu-trending", "description": "获取知乎热榜，包含时事热点、社会话题"}],
                "osm-mcp-server": [{"name": "find_parking_facilities", "description": "Find parking near a location", "inputSchema": {"properties": {"latitude": {}, "longitude": {}}}}]}"#,
        )
        .unwrap()
    })
}

/// `count` tools: copies of `seed` under renamed servers, each copy after the first with
/// about one description word in five replaced by a PRNG-chosen word of the seed catalog.
fn synthetic(seed: &[ToolInfo], count: usize) -> Vec<ToolInfo> {
    let words: Vec<&str> = seed
        .iter()
        .flat_map(|t| t.description.split_whitespace())
        .collect();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        // xorshift64*: fixed, simple and good enough to vary text.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    (0..count)
        .map(|i| {
            let base = &seed[i % seed.len()];
            let copy = i / seed.len();
            let mut tool = base.clone();
            if copy > 0 {
                if let ToolSource::Mcp { server, .. } = &mut tool.source {
                    *server = format!("{server}-{copy}");
                }
                tool.name = format!("{}-{copy}", tool.name);
                tool.description = base
                    .description
                    .split_whitespace()
                    .map(|w| {
                        if next() % 5 == 0 {
                            words[(next() % words.len() as u64) as usize]
                        } else {
                            w
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
            }
            tool
        })
        .collect()
}

/// The catalog hash over the same 10,000 tools (target: under 50 ms).
#[divan::bench(sample_count = 10)]
fn catalog_hash(bencher: Bencher) {
    let tools = &*CATALOG;
    bencher.bench(|| antler::deferred::catalog_hash(divan::black_box(tools)));
}

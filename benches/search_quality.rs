//! Search quality on the LiveMCPBench catalog: hit@1, hit@5 and MRR on `queries-dev.jsonl`,
//! recall@1 and recall@5 on `tasks.jsonl`, for `SearchIndex` and the two reference baselines
//! of `shared/bench/README.md` (DeerFlow-style regex, textbook BM25).
//!
//! Each file is also reported in two halves (A: 1st, 3rd, … line; B: the others) so a tuning
//! change can be made looking at A only and checked on B. `SEARCH_MISSES=ours` (or `model`) lists
//! the A-half misses of that method. The promotion rule (`deferred::promotion`) is measured on the dev
//! queries as `tool_search` runs them: tools promoted per ranked search, and how often the
//! right tool is among them; `PROMOTE_SWEEP=1` prints the same on half A for other ratios
//! (tune there, check on B). The data directory defaults to `../shared/bench/livemcp` beside the
//! crate; `ANTLER_BENCH_DIR` overrides it.
//!
//! Two more sets, each in halves too: the dev queries in Chinese (`benches/data/zh`: the same
//! queries, hand-translated; parity is the Chinese score minus the English one, over the same
//! tools), and the Berkeley Function-Calling Leaderboard's single-turn questions over their
//! pooled function docs (`bash benches/data/fetch-bfcl` builds them from PyPI into
//! `target/bench-data/bfcl`, or `ANTLER_BENCH_BFCL`; skipped, saying so, when missing).
//!
//! With the encoder, the time of a search as `tool_search` runs it is reported over every
//! dev, task and Chinese dev query (p50, p90, p99, the slowest), the spread the search
//! goals are stated in.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::PathBuf;

use std::sync::Arc;

use antler::deferred::catalog_file::{catalog_tools, load_catalog_file};
use antler::deferred::promotion::{CLOSE_TO_BEST, promoted_prefix};
use antler::deferred::{DeferredCatalog, ToolSearch};
use antler::tools::ToolInfo;
use antler_search::{EmbedMode, SearchIndex, SemanticSearch};
use regex::RegexBuilder;
use serde_json::Value;

mod support;

/// A ranking method: query to ranked tool indices.
type Method<'a> = Box<dyn Fn(&str) -> Vec<usize> + 'a>;

/// A benchmark query with its relevance judgements: one inner list per needed tool.
struct Query {
    text: String,
    style: String,
    needs: Vec<Vec<String>>,
    /// The same query in English, for a translated one.
    en: Option<String>,
}

fn main() {
    let dir = std::env::var_os("ANTLER_BENCH_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/livemcp"),
        PathBuf::from,
    );
    if !dir.join("catalog.json").exists() {
        println!("no benchmark data at {}; skipped", dir.display());
        return;
    }
    let tools = load_catalog_file(&dir.join("catalog.json")).unwrap();
    let dev = read_queries(&dir.join("queries-dev.jsonl"), "any_of");
    let tasks = read_queries(&dir.join("tasks.jsonl"), "all_of");
    println!(
        "catalog: {} tools; {} dev queries; {} tasks",
        tools.len(),
        dev.len(),
        tasks.len()
    );

    let ours = SearchIndex::new(&tools);
    let semantic = semantic_search();
    let with_model = semantic
        .clone()
        .map(|s| SearchIndex::with_semantic(&tools, Some(s)));
    let bm25 = Bm25::new(&tools);
    let mut methods: Vec<(&str, Method)> = vec![(
        "ours",
        Box::new(|q: &str| {
            ours.search(q, tools.len(), &|_| true)
                .iter()
                .map(|h| h.index)
                .collect()
        }),
    )];
    if let Some(index) = &with_model {
        let started = std::time::Instant::now();
        index.search("warm up: embeds the catalog", 1, &|_| true);
        println!("model: catalog vectors ready in {:.1?}", started.elapsed());
        methods.push((
            "model",
            Box::new(|q: &str| {
                index
                    .search(q, tools.len(), &|_| true)
                    .iter()
                    .map(|h| h.index)
                    .collect()
            }),
        ));
    }
    methods.extend::<[(&str, Method); 2]>([
        ("bm25", Box::new(|q: &str| bm25.search(q))),
        ("regex", Box::new(|q: &str| regex_baseline(&tools, q))),
    ]);

    let halves = |qs: &[Query], odd: bool| -> Vec<usize> {
        (0..qs.len()).filter(|i| (i % 2 == 1) == odd).collect()
    };
    println!();
    println!(
        "{:<7} {:<10} {:>5} {:>7} {:>7} {:>7} | {:>5} {:>9} {:>9}",
        "method", "split", "n", "hit@1", "hit@5", "MRR", "n", "recall@1", "recall@5"
    );
    for (name, method) in &methods {
        let dev_ranks: Vec<Vec<usize>> = dev.iter().map(|q| method(&q.text)).collect();
        let task_ranks: Vec<Vec<usize>> = tasks.iter().map(|q| method(&q.text)).collect();
        for (split, dev_ids, task_ids) in [
            ("all", (0..dev.len()).collect(), (0..tasks.len()).collect()),
            ("A (tune)", halves(&dev, false), halves(&tasks, false)),
            ("B (check)", halves(&dev, true), halves(&tasks, true)),
        ] {
            let d = dev_metrics(&tools, &dev, &dev_ranks, &dev_ids);
            let t = task_metrics(&tools, &tasks, &task_ranks, &task_ids);
            println!(
                "{name:<7} {split:<10} {:>5} {:>7.3} {:>7.3} {:>7.3} | {:>5} {:>9.3} {:>9.3}",
                dev_ids.len(),
                d[0],
                d[1],
                d[2],
                task_ids.len(),
                t[0],
                t[1]
            );
        }
        let mut styles: Vec<&str> = dev.iter().map(|q| q.style.as_str()).collect();
        styles.sort_unstable();
        styles.dedup();
        for style in styles {
            let ids: Vec<usize> = (0..dev.len()).filter(|&i| dev[i].style == style).collect();
            let d = dev_metrics(&tools, &dev, &dev_ranks, &ids);
            println!(
                "{name:<7} {style:<10} {:>5} {:>7.3} {:>7.3} {:>7.3} |",
                ids.len(),
                d[0],
                d[1],
                d[2]
            );
        }
        if *name == "ours" || *name == "model" {
            let with = if *name == "model" {
                semantic.clone()
            } else {
                None
            };
            let search = ToolSearch::new(
                Arc::new(DeferredCatalog::with_semantic(
                    catalog_tools(tools.clone()),
                    with,
                )),
                5,
            );
            println!(
                "{:<7} {:<10} {:>5} {:>9} {:>15} {:>13}",
                "promote", "split", "n", "mean", "right promoted", "right in top5"
            );
            for (split, ids) in [
                ("all", (0..dev.len()).collect::<Vec<_>>()),
                ("A (tune)", halves(&dev, false)),
                ("B (check)", halves(&dev, true)),
            ] {
                let p = promotion_metrics(&search, &dev, &ids, CLOSE_TO_BEST);
                println!(
                    "{:<7} {split:<10} {:>5} {:>9.2} {:>15.3} {:>13.3}",
                    name,
                    ids.len(),
                    p[0],
                    p[1],
                    p[2]
                );
            }
            if std::env::var_os("PROMOTE_SWEEP").is_some() {
                for ratio in [0.5, 0.6, 0.7, 0.72, 0.75, 0.78, 0.8] {
                    let p = promotion_metrics(&search, &dev, &halves(&dev, false), ratio);
                    println!(
                        "  ratio {ratio:.2} on A: mean {:.2}, right promoted {:.3}, right in top5 {:.3}",
                        p[0], p[1], p[2]
                    );
                }
            }
        }
        if std::env::var_os("SEARCH_MISSES").is_some_and(|m| m == *name) {
            print_misses(&tools, &dev, &dev_ranks, &halves(&dev, false));
            print_misses(&tools, &tasks, &task_ranks, &halves(&tasks, false));
        }
    }

    let mut rankers: Vec<(&str, Method)> = vec![("ours", ranked(&ours, tools.len()))];
    if let Some(index) = &with_model {
        rankers.push(("model", ranked(index, tools.len())));
    }
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/data");
    cross_lingual(&tools, &data.join("zh"), &rankers);
    if let Some(index) = &with_model {
        let zh = read_queries(&data.join("zh/queries-dev-zh.jsonl"), "any_of");
        latency(index, [&dev, &tasks, &zh]);
    }
    bfcl(semantic);
}

/// How long a search takes as `tool_search` runs it (five results), over every query of
/// `sets` in turn, each searched once: the 50th, 90th and 99th percentiles and the slowest,
/// with the start of its query.
fn latency(index: &SearchIndex, sets: [&[Query]; 3]) {
    let mut times: Vec<(std::time::Duration, &str)> = sets
        .iter()
        .flat_map(|qs| qs.iter())
        .map(|q| {
            let started = std::time::Instant::now();
            std::hint::black_box(index.search(&q.text, 5, &|_| true));
            (started.elapsed(), q.text.as_str())
        })
        .collect();
    times.sort_unstable();
    let at = |p: usize| times[(times.len() - 1) * p / 100].0;
    let (slowest, query) = times[times.len() - 1];
    let start: String = query.chars().take(40).collect();
    println!(
        "\nmodel search time over {} queries (dev, tasks, Chinese dev): p50 {:.1?}, p90 {:.1?}, p99 {:.1?}, max {slowest:.1?} ({start:?}…, {} characters)",
        times.len(),
        at(50),
        at(90),
        at(99),
        query.chars().count()
    );
}

/// A search index as a ranking method.
fn ranked(index: &SearchIndex, n: usize) -> Method<'_> {
    Box::new(move |q: &str| {
        index
            .search(q, n, &|_| true)
            .iter()
            .map(|h| h.index)
            .collect()
    })
}

/// The dev queries in Chinese against the same queries in English (the originals, or for the
/// eight written in Chinese, their translation): hit@1, hit@5 and MRR of each, and Chinese
/// minus English. Then the cross-lingual lines by direction (an English query for a tool
/// described in Chinese, and the reverse).
fn cross_lingual(tools: &[ToolInfo], dir: &std::path::Path, rankers: &[(&str, Method)]) {
    let zh = read_queries(&dir.join("queries-dev-zh.jsonl"), "any_of");
    let en: Vec<Query> = zh
        .iter()
        .map(|q| Query {
            text: q.en.clone().unwrap(),
            style: q.style.clone(),
            needs: q.needs.clone(),
            en: None,
        })
        .collect();
    let cross = read_queries(&dir.join("queries-cross.jsonl"), "any_of");
    let directions: Vec<String> = std::fs::read_to_string(dir.join("queries-cross.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["direction"].as_str().unwrap().to_string()
        })
        .collect();
    println!();
    println!(
        "{:<7} {:<10} {:>5} {:>17} {:>17} {:>17}",
        "zh/en", "split", "n", "hit@1 en/zh", "hit@5 en/zh", "MRR en/zh"
    );
    for (name, method) in rankers {
        let en_ranks: Vec<Vec<usize>> = en.iter().map(|q| method(&q.text)).collect();
        let zh_ranks: Vec<Vec<usize>> = zh.iter().map(|q| method(&q.text)).collect();
        for (split, ids) in [
            ("all", (0..zh.len()).collect::<Vec<_>>()),
            ("A (tune)", (0..zh.len()).filter(|i| i % 2 == 0).collect()),
            ("B (check)", (0..zh.len()).filter(|i| i % 2 == 1).collect()),
        ] {
            let e = dev_metrics(tools, &en, &en_ranks, &ids);
            let z = dev_metrics(tools, &zh, &zh_ranks, &ids);
            let pair = |k: usize| format!("{:.3}/{:.3} {:+.2}", e[k], z[k], z[k] - e[k]);
            println!(
                "{name:<7} {split:<10} {:>5} {:>17} {:>17} {:>17}",
                ids.len(),
                pair(0),
                pair(1),
                pair(2)
            );
        }
        let ranks: Vec<Vec<usize>> = cross.iter().map(|q| method(&q.text)).collect();
        for direction in ["en->zh-tool", "zh->en-tool"] {
            let ids: Vec<usize> = (0..cross.len())
                .filter(|&i| directions[i] == direction)
                .collect();
            let d = dev_metrics(tools, &cross, &ranks, &ids);
            println!(
                "{name:<7} {direction:<10} {:>5} {:>17.3} {:>17.3} {:>17.3}",
                ids.len(),
                d[0],
                d[1],
                d[2]
            );
        }
    }
}

/// BFCL's questions over their pooled function docs: recall@1 and recall@5, in halves.
fn bfcl(semantic: Option<SemanticSearch>) {
    let dir = std::env::var_os("ANTLER_BENCH_BFCL").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/bfcl"),
        PathBuf::from,
    );
    if !dir.join("queries.jsonl").exists() {
        println!(
            "\nBFCL: no data at {}; `bash benches/data/fetch-bfcl` builds it",
            dir.display()
        );
        return;
    }
    let tools = load_catalog_file(&dir.join("catalog.json")).unwrap();
    let qs = read_queries(&dir.join("queries.jsonl"), "all_of");
    let ours = SearchIndex::new(&tools);
    let with_model = semantic.map(|s| SearchIndex::with_semantic(&tools, Some(s)));
    let bm25 = Bm25::new(&tools);
    let mut methods: Vec<(&str, Method)> = vec![("ours", ranked(&ours, tools.len()))];
    if let Some(index) = &with_model {
        let started = std::time::Instant::now();
        index.search("warm up: embeds the catalog", 1, &|_| true);
        println!(
            "\nBFCL model: catalog vectors ready in {:.1?}",
            started.elapsed()
        );
        methods.push(("model", ranked(index, tools.len())));
    }
    methods.push(("bm25", Box::new(|q: &str| bm25.search(q))));
    println!(
        "\nBFCL: {} function docs, {} questions",
        tools.len(),
        qs.len()
    );
    println!(
        "{:<7} {:<10} {:>5} {:>9} {:>9}",
        "bfcl", "split", "n", "recall@1", "recall@5"
    );
    for (name, method) in &methods {
        let ranks: Vec<Vec<usize>> = qs.iter().map(|q| method(&q.text)).collect();
        for (split, ids) in [
            ("all", (0..qs.len()).collect::<Vec<_>>()),
            ("A (tune)", (0..qs.len()).filter(|i| i % 2 == 0).collect()),
            ("B (check)", (0..qs.len()).filter(|i| i % 2 == 1).collect()),
        ] {
            let t = task_metrics(&tools, &qs, &ranks, &ids);
            println!(
                "{name:<7} {split:<10} {:>5} {:>9.3} {:>9.3}",
                ids.len(),
                t[0],
                t[1]
            );
        }
    }
}

/// The sentence encoder (see `support::semantic_model`), embedding the catalog first.
fn semantic_search() -> Option<SemanticSearch> {
    Some(SemanticSearch {
        model: support::semantic_model()?,
        multilingual: support::multilingual_model(),
        dictionary: support::dictionary(),
        mode: EmbedMode::Blocking(None),
    })
}

/// The promotion rule on the dev queries, through `tool_search` (max 5 results): the mean
/// number promoted per search and the share of searches whose promoted tools hold a right
/// one, next to the share whose top 5 do, for `ratio` over the queries `ids`.
fn promotion_metrics(search: &ToolSearch, qs: &[Query], ids: &[usize], ratio: f32) -> [f64; 3] {
    let infos = search.catalog().infos();
    let mut sums = [0.0; 3];
    for &i in ids {
        let outcome = search.search(&qs[i].text);
        let promoted = if ratio == CLOSE_TO_BEST {
            outcome.promoted
        } else {
            promoted_prefix(&outcome.found, ratio)
        };
        let right = |found: &[antler::deferred::Found]| {
            found
                .iter()
                .any(|f| qs[i].needs[0].contains(&infos[f.index].name))
        };
        sums[0] += promoted as f64;
        sums[1] += f64::from(u8::from(right(&outcome.found[..promoted])));
        sums[2] += f64::from(u8::from(right(&outcome.found)));
    }
    sums.map(|s| s / ids.len().max(1) as f64)
}

fn read_queries(path: &std::path::Path, key: &str) -> Vec<Query> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let strings = |v: &Value| -> Vec<String> {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap().to_string())
                    .collect()
            };
            let needs = if key == "any_of" {
                vec![strings(&v[key])]
            } else {
                v[key].as_array().unwrap().iter().map(strings).collect()
            };
            Query {
                text: v["query"].as_str().unwrap().to_string(),
                style: v["style"].as_str().unwrap_or("task").to_string(),
                needs,
                en: v["en"].as_str().map(str::to_string),
            }
        })
        .collect()
}

/// hit@1, hit@5, MRR over the queries `ids`.
fn dev_metrics(tools: &[ToolInfo], qs: &[Query], ranks: &[Vec<usize>], ids: &[usize]) -> [f64; 3] {
    let mut sums = [0.0; 3];
    for &i in ids {
        let first = ranks[i]
            .iter()
            .position(|&t| qs[i].needs[0].contains(&tools[t].name));
        if let Some(p) = first {
            sums[0] += f64::from(u8::from(p < 1));
            sums[1] += f64::from(u8::from(p < 5));
            sums[2] += 1.0 / (p as f64 + 1.0);
        }
    }
    sums.map(|s| s / ids.len().max(1) as f64)
}

/// recall@1, recall@5 over the queries `ids`.
fn task_metrics(tools: &[ToolInfo], qs: &[Query], ranks: &[Vec<usize>], ids: &[usize]) -> [f64; 2] {
    let mut sums = [0.0; 2];
    for &i in ids {
        for (slot, k) in [1, 5].into_iter().enumerate() {
            let top: Vec<&str> = ranks[i]
                .iter()
                .take(k)
                .map(|&t| tools[t].name.as_str())
                .collect();
            let found = qs[i]
                .needs
                .iter()
                .filter(|alts| alts.iter().any(|a| top.contains(&a.as_str())))
                .count();
            sums[slot] += found as f64 / qs[i].needs.len().min(k) as f64;
        }
    }
    sums.map(|s| s / ids.len().max(1) as f64)
}

fn print_misses(tools: &[ToolInfo], qs: &[Query], ranks: &[Vec<usize>], ids: &[usize]) {
    for &i in ids {
        let top: Vec<&str> = ranks[i]
            .iter()
            .take(5)
            .map(|&t| tools[t].name.as_str())
            .collect();
        let missing: Vec<String> = qs[i]
            .needs
            .iter()
            .filter(|alts| !alts.iter().any(|a| top.contains(&a.as_str())))
            .map(|alts| {
                let rank = ranks[i]
                    .iter()
                    .position(|&t| alts.contains(&tools[t].name))
                    .map_or("-".to_string(), |p| (p + 1).to_string());
                format!("{}@{rank}", alts[0])
            })
            .collect();
        if !missing.is_empty() {
            println!(
                "\nMISS {:?}\n  want {missing:?}\n  got  {top:?}",
                qs[i].text
            );
        }
    }
}

/// The DeerFlow regex mode: the query as one case-insensitive regex, 2 points for a name
/// match and 1 for a description match; an invalid regex finds nothing.
fn regex_baseline(tools: &[ToolInfo], query: &str) -> Vec<usize> {
    let Ok(re) = RegexBuilder::new(query).case_insensitive(true).build() else {
        return Vec::new();
    };
    let mut scored: Vec<(usize, u32)> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let s = if re.is_match(&t.name) { 2 } else { 0 }
                + if re.is_match(&t.description) { 1 } else { 0 };
            (i, s)
        })
        .filter(|&(_, s)| s > 0)
        .collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.into_iter().map(|(i, _)| i).collect()
}

/// Textbook BM25 (k1 = 1.2, b = 0.75) over lower-cased alphanumeric words of the name,
/// the description and the parameter names.
struct Bm25 {
    docs: Vec<HashMap<String, f64>>,
    lens: Vec<f64>,
    avg: f64,
    df: HashMap<String, f64>,
}

impl Bm25 {
    fn words(text: &str) -> Vec<String> {
        text.to_lowercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    }

    fn new(tools: &[ToolInfo]) -> Self {
        let mut docs = Vec::new();
        let mut lens = Vec::new();
        let mut df: HashMap<String, f64> = HashMap::new();
        for t in tools {
            let params: Vec<&str> = t
                .parameters
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            let text = format!("{} {} {}", t.name, t.description, params.join(" "));
            let words = Self::words(&text);
            let mut tf: HashMap<String, f64> = HashMap::new();
            for w in &words {
                *tf.entry(w.clone()).or_default() += 1.0;
            }
            for w in tf.keys() {
                *df.entry(w.clone()).or_default() += 1.0;
            }
            lens.push(words.len() as f64);
            docs.push(tf);
        }
        let avg = lens.iter().sum::<f64>() / lens.len().max(1) as f64;
        Self {
            docs,
            lens,
            avg,
            df,
        }
    }

    fn search(&self, query: &str) -> Vec<usize> {
        let n = self.docs.len() as f64;
        let terms = Self::words(query);
        let mut scored: Vec<(usize, f64)> = self
            .docs
            .iter()
            .enumerate()
            .map(|(i, tf)| {
                let s: f64 = terms
                    .iter()
                    .map(|w| {
                        let f = tf.get(w).copied().unwrap_or(0.0);
                        let df = self.df.get(w).copied().unwrap_or(0.0);
                        let idf = ((n - df + 0.5) / (df + 0.5)).ln_1p();
                        idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * self.lens[i] / self.avg))
                    })
                    .sum();
                (i, s)
            })
            .filter(|&(_, s)| s > 0.0)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.into_iter().map(|(i, _)| i).collect()
    }
}

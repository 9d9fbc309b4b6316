//! Skills (issue 27): what 100 skills cost a run that does not use them.
//!
//! 1. The `<available-skills>` listing of 100 skills whose descriptions are as long as the
//!    format allows (1,024 characters) and of 100 with descriptions of the public
//!    collections' length (about 200): tokens (the estimate every run uses, and o200k) at
//!    the default budget for a 32k, 128k and 1M context window. Goal: at most 2,000.
//! 2. Discovery of those 100 skills in the process (frontmatter only), and `antler -p`
//!    spawn to the first request with 100 user skills against none, alternating runs.
//!    Goal: at most 5 ms more.
//! 3. The bytes discovery reads of SKILL.md files whose bodies hold 20 KB each: a run that
//!    loads no skill reads no body (at most one 256-byte read past each frontmatter).
//!
//! Run by `cargo test` (no `--bench` argument) with one sample per figure, as a smoke check.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mock_openai/mod.rs"]
mod mock_openai;
mod support;

use std::path::Path;
use std::time::Instant;

use antler::skills::discover::{SkillRoots, discover};
use antler::skills::listing::{default_budget, listing};
use mock_openai::{MockOpenAi, Reply};
use serde_json::json;
use support::{antler_at, round3, stats};

const SKILLS: usize = 100;
const BODY_BYTES: usize = 20_000;

/// `count` skills in `root`, descriptions of `chars` characters of varied words.
fn write_skills(root: &Path, count: usize, chars: usize) -> u64 {
    let words = [
        "extract",
        "tables",
        "from",
        "PDF",
        "reports",
        "and",
        "summarise",
        "quarterly",
        "figures",
        "when",
        "the",
        "user",
        "asks",
        "for",
        "a",
        "review",
        "of",
        "release",
        "notes",
        "deploy",
        "staging",
        "check",
        "logs",
        "with",
        "care",
        "before",
        "merging",
    ];
    let mut total = 0;
    for i in 0..count {
        let name = format!("skill-{i:03}");
        let mut description = String::new();
        let mut w = i;
        while description.len() < chars {
            description.push_str(words[w % words.len()]);
            description.push(' ');
            w = (w * 7 + 3) % 1009;
        }
        description.truncate(chars);
        let dir = root.join(&name);
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(dir.join("scripts/run.sh"), "echo run").unwrap();
        let text = format!(
            "---\nname: {name}\ndescription: \"{}\"\nlicense: MIT\n---\n{}",
            description.trim(),
            "Step by step instructions. ".repeat(BODY_BYTES / 27)
        );
        total += text.len() as u64;
        std::fs::write(dir.join("SKILL.md"), text).unwrap();
    }
    total
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let runs = if full { 15 } else { 1 };
    let mut line = json!({});
    let tokenizer = antler::deferred::count_tokens("warm up").is_ok();

    println!("1. the listing of {SKILLS} skills at the default budget");
    for chars in [1024, 200] {
        let dir = tempfile::tempdir().unwrap();
        write_skills(dir.path(), SKILLS, chars);
        let roots = SkillRoots {
            user: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        let set = discover(&roots, &|_| None, &|_| Ok(()));
        assert_eq!(set.usable().count(), SKILLS, "{:?}", set.errors);
        let usable: Vec<_> = set.usable().collect();
        for window in [32_000u32, 128_000, 1_000_000] {
            let budget = default_budget(window);
            let got = listing(&usable, budget, true);
            let exact = if tokenizer {
                antler::deferred::count_tokens(&got.text).unwrap()
            } else {
                0
            };
            println!(
                "   descriptions of {chars} chars, window {window}: budget {budget}, estimate {} \
                 tokens, o200k {exact}; {} described, {} by name, {} counted",
                got.tokens, got.described, got.named, got.counted
            );
            assert!(got.tokens <= 2000 && exact <= 2000, "over 2,000 tokens");
            line[format!("listing_tokens_{chars}c_{window}")] = json!(got.tokens);
            line[format!("listing_o200k_{chars}c_{window}")] = json!(exact);
        }
    }

    println!("2. discovery of {SKILLS} skills");
    let skills_dir = tempfile::tempdir().unwrap();
    let total_bytes = write_skills(skills_dir.path(), SKILLS, 200);
    let roots = SkillRoots {
        user: Some(skills_dir.path().to_path_buf()),
        ..Default::default()
    };
    let samples: Vec<f64> = (0..runs.max(5))
        .map(|_| {
            let started = Instant::now();
            let set = discover(&roots, &|_| None, &|_| Ok(()));
            assert_eq!(set.usable().count(), SKILLS);
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let in_process = stats(samples);
    println!("   in the process: median {:.3} ms", in_process.median);
    line["discovery_ms"] = json!(round3(in_process.median));

    let none = tempfile::tempdir().unwrap();
    let with = tempfile::tempdir().unwrap();
    let user = with.path().join("xdg-config/antler/skills");
    std::fs::create_dir_all(&user).unwrap();
    write_skills(&user, SKILLS, 200);
    let mock = MockOpenAi::start(Vec::new());
    let first_request = |dir: &Path| {
        mock.push(Reply::text("ok"));
        let seen = mock.requests().len();
        let before = Instant::now();
        let out = antler_at(
            Path::new(env!("CARGO_BIN_EXE_antler")),
            dir,
            &mock.base_url(),
        )
        .args(["-p", "say ok"])
        .output()
        .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let requests = mock.requests();
        requests[seen].at.duration_since(before).as_secs_f64() * 1e3
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(3) {
        a.push(first_request(none.path()));
        b.push(first_request(with.path()));
    }
    let (a, b) = (stats(a), stats(b));
    println!(
        "   antler -p to the first request: no skills {:.2} ms, {SKILLS} skills {:.2} ms (+{:.2} ms)",
        a.median,
        b.median,
        b.median - a.median
    );
    line["first_request_no_skills_ms"] = json!(round3(a.median));
    line["first_request_100_skills_ms"] = json!(round3(b.median));

    println!("3. what discovery reads");
    let set = discover(&roots, &|_| None, &|_| Ok(()));
    println!(
        "   {} bytes of {total_bytes} in the SKILL.md files ({:.1}%)",
        set.bytes_read,
        100.0 * set.bytes_read as f64 / total_bytes as f64
    );
    let frontmatter_max = SKILLS as u64 * (400 + 256);
    assert!(
        set.bytes_read <= frontmatter_max,
        "a body was read: {}",
        set.bytes_read
    );
    line["discovery_bytes_read"] = json!(set.bytes_read);
    line["skill_md_bytes"] = json!(total_bytes);
    println!("{line}");
}

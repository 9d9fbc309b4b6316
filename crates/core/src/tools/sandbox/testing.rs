//! Test helpers: sandbox tools built from a YAML snippet, as `config.yaml` would.

use std::path::Path;
use std::sync::Arc;

use crate::config::parse_app_config;
use crate::tools::{Tool, build_configured_tools};

/// The YAML of `config.yaml` with one tool entry (`use: antler.sandbox:NAME` plus
/// `extra`, e.g. `", max_results: 2"`) and the given `sandbox:` lines.
fn yaml(name: &str, extra: &str, sandbox: &[&str]) -> String {
    let mut text = String::from("sandbox:\n");
    for line in sandbox {
        text.push_str(&format!("  {line}\n"));
    }
    if sandbox.is_empty() {
        text = String::new();
    }
    text.push_str(&format!(
        "tools:\n  - {{name: {name}, use: antler.sandbox:{name}{extra}}}\n"
    ));
    text
}

/// Builds the tool `name` with its workspace in `dir`.
pub(super) fn tool(dir: &Path, name: &str, extra: &str, sandbox: &[&str]) -> Arc<dyn Tool> {
    let cfg = parse_app_config(&yaml(name, extra, sandbox), Path::new("c.yaml"), &|_| None)
        .unwrap()
        .value;
    build_configured_tools(&cfg, dir, &Default::default(), None)
        .unwrap()
        .tools
        .remove(0)
}

/// The build error for the tool `name`, as text.
pub(super) fn build_error(dir: &Path, name: &str, extra: &str, sandbox: &[&str]) -> String {
    let cfg = parse_app_config(&yaml(name, extra, sandbox), Path::new("c.yaml"), &|_| None)
        .unwrap()
        .value;
    build_configured_tools(&cfg, dir, &Default::default(), None)
        .unwrap_err()
        .to_string()
}

/// Whether Landlock can be tested here; prints why not when it cannot.
pub(super) fn landlock_available(test: &str) -> bool {
    match super::landlock_status() {
        super::LandlockStatus::Available { .. } => true,
        status => {
            eprintln!("skipping {test}: Landlock is {status}");
            false
        }
    }
}

/// A temporary workspace holding `files` (path, content), parent folders created.
pub(super) fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (file, content) in files {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    dir
}

//! The example configuration files parse cleanly and everything they name exists.

use std::path::Path;

use antler::config::{parse_app_config, parse_extensions_config};
use antler::tools::build_configured_tools;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

#[test]
fn config_example_parses_without_warnings_and_builds_its_tools() {
    let path = Path::new(ROOT).join("config.example.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let env = |name: &str| (name == "OPENAI_API_KEY").then(|| String::from("sk-test"));
    let loaded = parse_app_config(&text, &path, &env).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.value.models[0].api_key.as_deref(), Some("sk-test"));
    let built =
        build_configured_tools(&loaded.value, Path::new(ROOT), &Default::default(), None).unwrap();
    assert_eq!(built.tools.len(), loaded.value.tools.len());
    assert!(built.warnings.is_empty(), "{:?}", built.warnings);
}

#[test]
fn extensions_example_parses_every_server_without_warnings() {
    let path = Path::new(ROOT).join("extensions_config.example.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let env = |name: &str| (name == "GITHUB_TOKEN").then(|| String::from("ghp_x"));
    let loaded = parse_extensions_config(&text, &path, &env).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert!(loaded.value.skipped.is_empty());
    let kinds: Vec<_> = loaded
        .value
        .servers
        .iter()
        .map(|s| s.transport.as_str())
        .collect();
    assert_eq!(kinds, ["stdio", "stdio", "http", "sse"]);
    assert_eq!(
        loaded.value.servers[2].headers["Authorization"],
        "Bearer ghp_x"
    );
}

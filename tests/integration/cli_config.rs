//! Configuration discovery and configuration errors through the real binary.

use predicates::prelude::*;
use serde_json::json;

use crate::support::*;

#[test]
fn no_configuration_at_all_is_fine() {
    let sb = Sandbox::new();
    sb.antler()
        .args(["tools", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("present_files  built-in"))
        .stdout(predicate::str::contains("1 tool, 0 deferred"));
    let (list, code, _) = sb.json(&["mcp", "list", "--json"]);
    assert_eq!((list, code), (json!([]), 0));
}

#[test]
fn malformed_extensions_json_names_file_line_and_column() {
    let sb = Sandbox::new();
    sb.write(
        "extensions_config.json",
        "{\n  \"mcpServers\": {\n    \"a\": {\"command\": }\n  }\n}\n",
    );
    sb.antler()
        .args(["mcp", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "extensions_config.json:3:22: expected value",
        ));
}

#[test]
fn wrong_type_in_config_yaml_names_line_column_key_and_expected_type() {
    let sb = Sandbox::new();
    sb.write(
        "config.yaml",
        "models:\n  - name: m\n    model: gpt\n    supports_vision: sometimes\n",
    );
    sb.antler()
        .args(["tools", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "config.yaml:4:22: models[0].supports_vision: invalid type",
        ))
        .stderr(predicate::str::contains("expected a boolean"));
}

#[test]
fn missing_environment_variable_in_config_yaml_is_named() {
    let sb = Sandbox::new();
    sb.write(
        "config.yaml",
        "models:\n  - name: m\n    model: gpt\n    api_key: $ANTLER_TEST_UNSET_KEY\n\
         tool_output:\n  max_chars: $ANTLER_TEST_UNSET_SIZE\n",
    );
    // Needed at once: a setting outside the models.
    sb.antler()
        .args(["tools", "list"])
        .env_remove("ANTLER_TEST_UNSET_SIZE")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "tool_output.max_chars: environment variable $ANTLER_TEST_UNSET_SIZE is not set",
        ));
    // A model's: only once that model is used.
    sb.write(
        "config.yaml",
        "models:\n  - name: m\n    model: gpt\n    api_key: $ANTLER_TEST_UNSET_KEY\n",
    );
    sb.antler().args(["tools", "list"]).assert().success();
    sb.antler()
        .args(["-p", "hi"])
        .env_remove("ANTLER_TEST_UNSET_KEY")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "models[0].api_key: environment variable $ANTLER_TEST_UNSET_KEY is not set",
        ));
}

#[test]
fn dotenv_is_loaded_before_the_configuration() {
    let sb = Sandbox::new();
    sb.write(
        ".env",
        &format!("ANTLER_TEST_FX={}\n", fixture_bin().display()),
    );
    write_extensions(&sb, json!({"fx": {"command": "$ANTLER_TEST_FX"}}));
    let (list, code, _) = sb.json(&["mcp", "list", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(status_of(&list, "fx")["status"], "connected");
}

#[test]
fn unknown_use_is_a_configuration_error_listing_the_known_ids() {
    let sb = Sandbox::new();
    sb.write(
        "config.yaml",
        "tools:\n  - name: web_search\n    use: deerflow.community.tavily.tools:web_search_tool\n",
    );
    sb.antler()
        .args(["tools", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown `use: deerflow.community.tavily.tools:web_search_tool`",
        ))
        .stderr(predicate::str::contains("known: antler.sandbox:ls"));
}

#[test]
fn unknown_top_level_keys_only_warn() {
    let sb = Sandbox::new();
    sb.write("config.yaml", "memory:\n  enabled: true\n");
    sb.antler()
        .args(["tools", "list"])
        .assert()
        .success()
        .stderr(predicate::str::contains("unknown top-level key `memory`"));
}

#[test]
fn explicit_paths_win_and_must_exist() {
    let sb = Sandbox::new();
    sb.write(
        "config.yaml",
        "tools: [{name: ls, use: antler.sandbox:ls}]\n",
    );
    let other = sb.write("other.yaml", "{}\n");
    // ./config.yaml has one tool; --config and ANTLER_CONFIG replace it.
    let count = |args: &[&str], env: Option<&str>| {
        let mut cmd = sb.antler();
        if let Some(value) = env {
            cmd.env("ANTLER_CONFIG", value);
        }
        let out = cmd.args(args).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        names_of(&v).len()
    };
    assert_eq!(count(&["tools", "list", "--json"], None), 1);
    assert_eq!(
        count(&["tools", "list", "--json"], Some(other.to_str().unwrap())),
        0
    );
    assert_eq!(
        count(&["--config", "other.yaml", "tools", "list", "--json"], None),
        0
    );
    sb.antler()
        .env("ANTLER_CONFIG", "absent.yaml")
        .args(["tools", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "absent.yaml: no such file (given by ANTLER_CONFIG)",
        ));
    sb.antler()
        .args(["--extensions", "absent.json", "mcp", "list"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("(given by --extensions)"));
}

#[test]
fn xdg_config_home_is_searched_last() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("xdg-config/antler")).unwrap();
    sb.write(
        "xdg-config/antler/config.yaml",
        "tool_groups: [{name: xdg}]\ntools: [{name: ls, group: xdg, use: antler.sandbox:ls}]\n",
    );
    let group_of_ls = |sb: &Sandbox| {
        let (tools, code, _) = sb.json(&["tools", "list", "--json"]);
        assert_eq!(code, 0);
        tools[0]["group"].clone()
    };
    assert_eq!(group_of_ls(&sb), json!("xdg"), "found in $XDG_CONFIG_HOME");
    sb.write(
        "config.yaml",
        "tool_groups: [{name: local}]\ntools: [{name: ls, group: local, use: antler.sandbox:ls}]\n",
    );
    assert_eq!(
        group_of_ls(&sb),
        json!("local"),
        "./config.yaml wins over XDG"
    );
}

#[test]
fn help_describes_every_command_and_option() {
    let sb = Sandbox::new();
    sb.antler()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("tools"))
        .stdout(predicate::str::contains("mcp"))
        .stdout(predicate::str::contains("--config <PATH>"))
        .stdout(predicate::str::contains("--extensions <PATH>"))
        .stdout(predicate::str::contains("--verbose"))
        .stdout(predicate::str::contains("--log-file <PATH>"))
        .stdout(predicate::str::contains("ANTLER_EXTENSIONS_CONFIG"))
        .stdout(predicate::str::contains("Exit status"));
    sb.antler()
        .args(["tools", "list", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("--json"))
        .stdout(predicate::str::contains("--group <GROUP>"));
    sb.antler()
        .args(["mcp", "list", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("protocol version"))
        .stdout(predicate::str::contains("--json"));
    sb.antler()
        .assert()
        .code(2)
        .stderr(predicate::str::contains("Usage"));
}

#[test]
fn start_up_errors_under_json_output_still_print_one_json_object() {
    let sb = Sandbox::new();
    sb.write("config.yaml", "models: [unclosed\n");
    let out = sb
        .antler()
        .args(["-p", "hi", "--output-format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["status"], "failed");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["error_kind"], "config");
    let error = result["errors"][0].as_str().unwrap();
    assert!(error.contains("config.yaml"), "{error}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("config.yaml"),
        "the message is on stderr too"
    );

    // An untrusted project file, before anything runs: one run_finished line.
    let out = sb
        .antler_untrusted()
        .args(["-p", "hi", "--output-format", "stream-json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let lines: Vec<serde_json::Value> = events(&out.stdout);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["type"], "run_finished");
    assert!(
        lines[0]["errors"][0]
            .as_str()
            .unwrap()
            .contains("has not been told to trust"),
        "{}",
        lines[0]
    );

    // -C to nowhere.
    let out = sb
        .antler()
        .args(["-C", "missing", "-p", "hi", "--output-format", "json"])
        .output()
        .unwrap();
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (result["error_kind"].as_str(), out.status.code()),
        (Some("config"), Some(2))
    );
    // Text output stays text.
    sb.antler()
        .args(["-C", "missing", "-p", "hi"])
        .assert()
        .code(2)
        .stdout("");
}

#[test]
fn set_changes_one_setting_for_one_run_and_a_wrong_key_is_an_error() {
    let sb = Sandbox::new();
    // Without a config file, and over one.
    sb.antler()
        .args([
            "--set",
            "tools=[{name: ls, use: antler.sandbox:ls}]",
            "tools",
            "list",
        ])
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"(?m)^ls +configured").unwrap());
    sb.write("config.yaml", "tool_search:\n  enabled: false\n");
    write_extensions(&sb, json!({"fx": fixture_stdio(&[])}));
    sb.antler()
        .args(["tools", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains(", 0 deferred"));
    sb.antler()
        .args(["tools", "list", "--set", "tool_search.enabled=true"])
        .assert()
        .success()
        .stdout(predicate::str::contains(", 0 deferred").not());
    sb.antler()
        .args(["tools", "list", "--set", "sandbox.allow_host_bsh=true"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--set: sandbox.allow_host_bsh=true: config.yaml has no key `sandbox.allow_host_bsh`",
        ));
    sb.antler()
        .args(["tools", "list", "--set", "nothing"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("expected KEY=VALUE"));
}

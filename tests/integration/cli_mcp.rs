//! `antler mcp list` and `antler tools list` against the fixture MCP server.

use std::time::Instant;

use predicates::prelude::*;
use serde_json::{Value, json};

use crate::support::*;

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[test]
fn stdio_server_is_listed_with_the_documented_fields() {
    let sb = Sandbox::new();
    write_extensions(&sb, json!({"fx": fixture_stdio(&[])}));
    let (list, code, _) = sb.json(&["mcp", "list", "--json"]);
    assert_eq!(code, 0);
    let fx = status_of(&list, "fx");
    assert_eq!(fx["transport"], "stdio");
    assert_eq!(fx["status"], "connected");
    assert_eq!(fx["error"], json!(null));
    assert_eq!(fx["tool_count"], 9);
    assert!(fx["protocol_version"].as_str().unwrap().starts_with("20"));
    assert!(fx["startup_ms"].is_u64());
    assert_eq!(fx["server_info"], "fixture_mcp 0.1.0");
    assert!(
        fx["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("tools"))
    );
    assert_eq!(fx["instructions_chars"], json!(null));

    // What a server says of itself is escaped; its instructions are measured, not shown.
    let sb = Sandbox::new();
    write_extensions(
        &sb,
        json!({"fx": fixture_stdio(&["--name", "evil\u{1b}[2J", "--instructions", "Use me."])}),
    );
    let (list, _, _) = sb.json(&["mcp", "list", "--json"]);
    let fx = status_of(&list, "fx");
    assert_eq!(fx["server_info"], "evil\\u{1b}[2J 0.1.0");
    assert_eq!(fx["instructions_chars"], 7);
}

/// `initialize` offers 2025-11-25, the newest revision with the handshake; a server that
/// answers with an older one antler speaks is used at that revision, one that answers
/// with a revision antler does not speak (an unknown one, or 2026-07-28, which has no
/// handshake) is refused with the reason.
#[test]
fn the_protocol_version_is_negotiated_down_and_an_unspoken_one_refused() {
    let sb = Sandbox::new();
    write_extensions(
        &sb,
        json!({
            "offered": fixture_stdio(&["--hostile", "empty-result"]),
            "older": fixture_stdio(&["--hostile", "empty-result", "--protocol-version", "2025-03-26"]),
            "unknown": fixture_stdio(&["--hostile", "empty-result", "--protocol-version", "1999-01-01\u{1b}[2J"]),
            "later": fixture_stdio(&["--hostile", "empty-result", "--protocol-version", "2026-07-28"]),
        }),
    );
    let (list, _, _) = sb.json(&["mcp", "list", "--json"]);
    assert_eq!(
        status_of(&list, "offered")["protocol_version"],
        "2025-11-25"
    );
    assert_eq!(status_of(&list, "older")["protocol_version"], "2025-03-26");
    assert_eq!(status_of(&list, "older")["status"], "connected");
    for name in ["unknown", "later"] {
        let refused = status_of(&list, name);
        assert_eq!(refused["status"], "failed", "{refused}");
        let error = refused["error"].as_str().unwrap();
        assert!(error.contains("which antler does not speak"), "{error}");
        assert!(!error.contains('\u{1b}'), "escaped: {error}");
    }
}

#[test]
fn tools_get_prefixed_sanitised_names_and_their_parameter_counts() {
    let sb = Sandbox::new();
    write_extensions(
        &sb,
        json!({"fx": fixture_stdio(&[]), "bare": {"command": fixture_bin(), "tool_name_prefix": false}}),
    );
    let (tools, code, _) = sb.json(&["tools", "list", "--json"]);
    assert_eq!(code, 0);
    let names = names_of(&tools);
    assert_eq!(names.len(), 18);
    assert!(names.iter().all(|n| valid_name(n)), "{names:?}");
    assert_eq!(&names[..2], ["fx_echo", "fx_add"]);
    assert!(names.contains(&"fx_weird_name_with_spaces"));
    assert!(names.contains(&"echo"), "no prefix for `bare`");
    let add = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "fx_add")
        .unwrap();
    assert_eq!(add["tier"], "mcp");
    assert_eq!(add["server"], "fx");
    assert_eq!(add["parameters"], 2);

    let table = sb.antler().args(["tools", "list"]).output().unwrap();
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(text.starts_with("NAME"), "{text}");
    assert!(
        text.contains("fx_add") && text.trim_end().ends_with("19 tools, 0 deferred"),
        "{text}"
    );
}

#[test]
fn http_and_sse_servers_connect_and_receive_the_configured_headers() {
    let sb = Sandbox::new();
    let auth = "Authorization: Bearer t0ken";
    let http = fixture_network("http", &["--require-header", auth]);
    let sse = fixture_network("sse", &["--require-header", auth, "--page-size", "2"]);
    let headers = json!({"Authorization": "Bearer t0ken"});
    write_extensions(
        &sb,
        json!({
            "h": {"type": "http", "url": http.url, "headers": headers},
            "s": {"type": "sse", "url": sse.url, "headers": headers},
            "h_noauth": {"type": "http", "url": http.url},
            "s_noauth": {"transport": "sse", "url": sse.url},
        }),
    );
    let (list, code, _) = sb.json(&["mcp", "list", "--json"]);
    for name in ["h", "s"] {
        let s = status_of(&list, name);
        assert_eq!(s["status"], "connected", "{s}");
        assert_eq!(s["tool_count"], 9, "{s}");
    }
    assert_eq!(status_of(&list, "s")["transport"], "sse");
    assert_eq!(status_of(&list, "h")["transport"], "http");
    for name in ["h_noauth", "s_noauth"] {
        let s = status_of(&list, name);
        assert_eq!(s["status"], "failed");
        assert!(s["error"].as_str().unwrap().contains("401"), "{s}");
    }
    assert_eq!(code, 1, "a failed server means exit status 1");
}

#[test]
fn tool_list_pagination_is_followed_to_the_end() {
    let sb = Sandbox::new();
    let http = fixture_network("http", &["--page-size", "4"]);
    write_extensions(
        &sb,
        json!({
            "paged": fixture_stdio(&["--page-size", "2"]),
            "paged_http": {"type": "http", "url": http.url},
        }),
    );
    let (list, _, _) = sb.json(&["mcp", "list", "--json"]);
    assert_eq!(status_of(&list, "paged")["tool_count"], 9);
    assert_eq!(status_of(&list, "paged_http")["tool_count"], 9);
}

#[test]
fn a_hung_server_does_not_delay_the_others_past_its_own_timeout() {
    let sb = Sandbox::new();
    let slow = |ms: &str| json!({"command": fixture_bin(), "args": ["--startup-delay-ms", ms]});
    write_extensions(
        &sb,
        json!({
            "hung": {"command": fixture_bin(), "args": ["--hang"], "startup_timeout_secs": 1},
            "slow1": slow("1500"), "slow2": slow("1500"), "slow3": slow("1500"),
        }),
    );
    let started = Instant::now();
    let (list, code, _) = sb.json(&["mcp", "list", "--json"]);
    let elapsed = started.elapsed();
    let hung = status_of(&list, "hung");
    assert_eq!(hung["status"], "failed");
    assert!(
        hung["error"]
            .as_str()
            .unwrap()
            .contains("did not start within 1.0s"),
        "{hung}"
    );
    for name in ["slow1", "slow2", "slow3"] {
        assert_eq!(status_of(&list, name)["status"], "connected");
    }
    assert_eq!(code, 1);
    // Sequential start-up would take at least 3 × 1.5 s + 1 s; concurrent about 1.5 s.
    assert!(elapsed.as_secs_f64() < 4.0, "start-up took {elapsed:?}");
}

#[test]
fn server_stderr_goes_to_the_log_file_never_the_terminal() {
    let sb = Sandbox::new();
    write_extensions(&sb, json!({"fx": fixture_stdio(&[])}));
    let out = sb.antler().args(["mcp", "list"]).output().unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("fixture_mcp: starting"), "{stderr}");
    let log = std::fs::read_to_string(sb.log_file()).unwrap();
    assert!(log.contains("fixture_mcp: starting (stdio)"), "{log}");
}

#[test]
fn a_server_that_cannot_start_is_reported_and_the_rest_load() {
    let sb = Sandbox::new();
    write_extensions(
        &sb,
        json!({
            "missing": {"command": "/nonexistent/antler-test-server"},
            "fx": fixture_stdio(&[]),
            "off": {"command": "/nonexistent/never-started", "enabled": false},
            "dies": {"command": "sh", "args": ["-c", "echo 'fatal: GITHUB_TOKEN is empty' >&2; exit 1"]},
        }),
    );
    let (list, code, stderr) = sb.json(&["mcp", "list", "--json"]);
    assert_eq!(code, 1);
    let missing = status_of(&list, "missing");
    assert_eq!(missing["status"], "failed");
    assert!(
        missing["error"]
            .as_str()
            .unwrap()
            .contains("cannot start `/nonexistent/antler-test-server`")
    );
    assert_eq!(status_of(&list, "fx")["status"], "connected");
    assert_eq!(status_of(&list, "off")["status"], "disabled");
    let dies = status_of(&list, "dies")["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(dies.contains("closed the connection"), "{dies}");
    assert!(dies.contains("stderr is in the antler log"), "{dies}");
    assert!(!stderr.contains("GITHUB_TOKEN is empty") && !dies.contains("GITHUB_TOKEN is empty"));
    let log = std::fs::read_to_string(sb.log_file()).unwrap();
    assert!(log.contains("fatal: GITHUB_TOKEN is empty"), "{log}");
}

#[test]
fn invalid_server_entries_are_skipped_with_their_reason_and_exit_2() {
    let sb = Sandbox::new();
    write_extensions(
        &sb,
        json!({"ws": {"type": "websocket", "url": "ws://127.0.0.1:1"}, "fx": fixture_stdio(&[])}),
    );
    let (list, code, stderr) = sb.json(&["mcp", "list", "--json"]);
    assert_eq!(code, 2);
    assert_eq!(status_of(&list, "fx")["status"], "connected");
    let ws = status_of(&list, "ws");
    assert_eq!(ws["status"], "failed");
    assert!(
        ws["error"]
            .as_str()
            .unwrap()
            .contains("unknown type `websocket`"),
        "{ws}"
    );
    assert!(
        stderr.contains(":4:12: mcpServers.ws.type: unknown type `websocket`")
            && stderr.contains("(the server is skipped)"),
        "{stderr}"
    );
}

#[test]
fn catalog_tools_are_served_with_valid_unique_names() {
    let sb = Sandbox::new();
    let catalog = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support/catalog-sample.json"
    );
    write_extensions(
        &sb,
        json!({
            "live": fixture_stdio(&["--catalog", catalog]),
            "antd": fixture_stdio(&["--catalog", catalog, "--server", "Ant Design Components"]),
        }),
    );
    let (tools, code, _) = sb.json(&["tools", "list", "--json"]);
    assert_eq!(code, 0);
    let names = names_of(&tools);
    assert_eq!(names.len(), 15 + 4);
    assert!(names.iter().all(|n| valid_name(n)), "{names:?}");
    let unique: std::collections::HashSet<_> = names.iter().collect();
    assert_eq!(unique.len(), names.len());
    assert!(names.contains(&"antd_list-components"));
    let long = names
        .iter()
        .find(|n| n.starts_with("live_a_tool_name"))
        .unwrap();
    assert_eq!(long.len(), 64, "{long}");
}

#[test]
fn configured_tools_come_first_and_win_duplicate_names() {
    let sb = Sandbox::new();
    let catalog = sb.write(
        "catalog.json",
        r#"{"x": [{"name": "ls", "description": "remote ls", "inputSchema": {"type": "object"}},
                  {"name": "other", "description": "o", "inputSchema": {"type": "object"}}]}"#,
    );
    sb.write(
        "config.yaml",
        "tool_groups: [{name: files}]\ntools:\n  - {name: ls, group: files, use: antler.sandbox:ls}\n",
    );
    write_extensions(
        &sb,
        json!({"remote": {"command": fixture_bin(), "args": ["--catalog", catalog], "tool_name_prefix": false}}),
    );
    let (tools, code, stderr) = sb.json(&["tools", "list", "--json"]);
    assert_eq!(code, 0);
    let tools: Vec<&Value> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["tier"] != "built-in")
        .collect();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["name"], "ls");
    assert_eq!(tools[0]["tier"], "configured");
    assert_eq!(tools[0]["group"], "files");
    assert_eq!(tools[0]["use"], "antler.sandbox:ls");
    assert_eq!(tools[1]["name"], "other");
    assert!(
        stderr.contains("duplicate tool name `ls`: the tool of MCP server `remote` is dropped"),
        "{stderr}"
    );

    // Filtering out the configured tool's group lets the MCP tool keep the name.
    let (filtered, _, _) = sb.json(&["tools", "list", "--json", "--group", "nothing"]);
    let filtered = names_of(&filtered);
    assert_eq!(filtered, ["ls", "other"], "the MCP `ls` is kept");
}

#[test]
fn mcp_add_and_remove_edit_the_users_file_and_keep_the_rest() {
    let sb = Sandbox::new();
    let user_file = sb.path().join("xdg-config/antler/extensions_config.json");
    let fixture = fixture_bin().to_str().unwrap().to_string();
    sb.antler()
        .args([
            "mcp",
            "add",
            "fx",
            "--env",
            "GREETING=hi",
            "--",
            &fixture,
            "--page-size",
            "3",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("Created MCP server `fx`"));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&user_file).unwrap()).unwrap();
    assert_eq!(
        saved["mcpServers"]["fx"],
        json!({"command": fixture, "args": ["--page-size", "3"], "env": {"GREETING": "hi"}})
    );
    // antler reads the user's file when the directory has none of its own.
    sb.antler()
        .args(["tools", "list"])
        .assert()
        .success()
        .stdout(predicate::str::contains("fx_echo"));

    // The rest of the file is kept, in its order.
    let mut edited = saved.clone();
    edited["skills"] = json!({"kept": true});
    std::fs::write(&user_file, serde_json::to_string_pretty(&edited).unwrap()).unwrap();
    sb.antler()
        .args([
            "mcp",
            "add",
            "docs",
            "--url",
            "https://docs.example.com/mcp",
            "--header",
            "Authorization=Bearer $DOCS_TOKEN",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("Saved MCP server `docs`"));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&user_file).unwrap()).unwrap();
    assert_eq!(saved["skills"], json!({"kept": true}));
    let names: Vec<&String> = saved["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names, ["fx", "docs"]);
    assert_eq!(
        saved["mcpServers"]["docs"],
        json!({"type": "http", "url": "https://docs.example.com/mcp",
               "headers": {"Authorization": "Bearer $DOCS_TOKEN"}})
    );

    // Adding a name twice needs --force; a bad name or entry changes nothing.
    sb.antler()
        .args(["mcp", "add", "fx", "--", "other"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already has a server `fx`"));
    sb.antler()
        .args(["mcp", "add", "fx", "--force", "--", "other"])
        .assert()
        .success();
    for args in [
        &["mcp", "add", "../evil", "--", "x"][..],
        &["mcp", "add", "web", "--url", "file:///etc/passwd"][..],
        &["mcp", "add", "nothing"][..],
    ] {
        let before = std::fs::read_to_string(&user_file).unwrap();
        sb.antler().args(args).assert().code(2);
        assert_eq!(
            std::fs::read_to_string(&user_file).unwrap(),
            before,
            "{args:?}"
        );
    }

    sb.antler()
        .args(["mcp", "remove", "fx"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Removed MCP server `fx`"));
    sb.antler()
        .args(["mcp", "remove", "fx"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no server `fx`").and(predicate::str::contains("docs")));
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&user_file).unwrap()).unwrap();
    assert_eq!(saved["skills"], json!({"kept": true}));

    // A file kept elsewhere and linked (dotfiles) is edited where it is; the link stays.
    let dotfiles = sb.path().join("dotfiles.json");
    std::fs::rename(&user_file, &dotfiles).unwrap();
    std::os::unix::fs::symlink(&dotfiles, &user_file).unwrap();
    sb.antler()
        .args(["mcp", "add", "linked", "--", "x"])
        .assert()
        .success();
    assert!(
        std::fs::symlink_metadata(&user_file)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(&dotfiles)
            .unwrap()
            .contains("\"linked\"")
    );

    // A project file in the directory comes first, and the user is told.
    write_extensions(&sb, json!({}));
    sb.antler()
        .args(["mcp", "add", "t", "--", "x"])
        .assert()
        .success()
        .stderr(
            predicate::str::contains("antler uses")
                .and(predicate::str::contains("extensions_config.json instead")),
        );
}

/// A message that quotes a name, URL or value it was given shows it as one short escaped
/// line, however long the input: a 10,000-character name is refused without being echoed.
#[test]
fn messages_quote_hostile_input_cut_short() {
    let sb = Sandbox::new();
    let long = format!("{}\u{1b}[2J", "n".repeat(10_000));
    let url = format!("ftp://x.example/{}?token=s3cr3t", "p".repeat(10_000));
    let set = format!("models[0].name={}", "v".repeat(10_000));
    let key = format!("{}=1", "k".repeat(10_000));
    for args in [
        vec!["mcp", "add", long.as_str(), "--", "x"],
        vec!["mcp", "remove", long.as_str()],
        vec![
            "mcp",
            "add",
            "ok",
            "--header",
            long.as_str(),
            "--url",
            "https://x.example",
        ],
        vec!["mcp", "add", "web", "--url", url.as_str()],
        vec!["--set", long.as_str(), "tools", "list"],
        vec!["--set", key.as_str(), "tools", "list"],
        vec!["--set", set.as_str(), "-p", "hi"],
        vec!["-m", long.as_str(), "-p", "hi"],
        vec!["--resume", long.as_str(), "-p", "hi"],
        vec!["--allowed-tools", long.as_str(), "-p", "hi"],
    ] {
        let out = sb.antler().args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{:.80}: {stderr:.300}",
            args.join(" ")
        );
        assert!(
            stderr.len() < 1_000 && !stderr.contains('\u{1b}'),
            "{:.80}: {} bytes: {stderr:.300}",
            args.join(" "),
            stderr.len()
        );
    }
    // The short ones are still shown whole.
    let out = sb
        .antler()
        .args(["mcp", "remove", "nosuch"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no server `nosuch`"));
}

//! MCP servers that start on first use: manifests, `mcp refresh`, per-server tool policy
//! and instructions, through the real binary against the fixture server and the mock
//! model.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::mock_openai::{MockOpenAi, Reply};
use crate::support::*;

/// How many times the fixture behind `log` has started (`--starts-log`).
fn starts(log: &Path) -> usize {
    std::fs::read_to_string(log).map_or(0, |text| text.lines().count())
}

/// A sandbox with tool search on.
fn deferred() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("config.yaml", "tool_search:\n  enabled: true\n");
    sandbox
}

/// The fixture as a stdio entry that logs its starts to `<name>.starts` in the sandbox.
fn logged(sandbox: &Sandbox, name: &str, extra: &[&str]) -> (Value, PathBuf) {
    let log = sandbox.path().join(format!("{name}.starts"));
    let mut args = vec!["--starts-log", log.to_str().unwrap()];
    args.extend_from_slice(extra);
    (fixture_stdio(&args), log)
}

/// `mcp list --json`, asserting the exit status.
fn mcp_list(sandbox: &Sandbox, code: i32) -> Value {
    let (list, status, stderr) = sandbox.json(&["mcp", "list", "--json"]);
    assert_eq!(status, code, "{stderr}");
    list
}

/// `mcp refresh`: every server listed anew, its manifest rewritten.
fn mcp_refresh(sandbox: &Sandbox) {
    let out = sandbox.antler().args(["mcp", "refresh"]).output().unwrap();
    assert_success(&out);
}

/// The `tool_call_finished` event of `call_id`.
fn finished<'a>(events: &'a [Value], call_id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "tool_call_finished" && e["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no result for {call_id}: {events:?}"))
}

/// A model that promotes `tool` with `select:` (call `c1`), calls it with `arguments`
/// (call `c2`), then answers.
fn promote_and_call(tool: &str, arguments: Value) -> MockOpenAi {
    let select = json!({"query": format!("select:{tool}")});
    MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "tool_search", select)]),
        Reply::tool_calls(&[("c2", tool, arguments)]),
        Reply::text("done"),
    ])
}

fn run(sandbox: &Sandbox, mock: &MockOpenAi) -> Vec<Value> {
    let out = agent(sandbox, mock)
        .args(["-p", "go", "--output-format", "stream-json"])
        .output()
        .unwrap();
    assert_success(&out);
    events(&out.stdout)
}

#[test]
fn an_idle_server_runs_only_for_a_call_and_its_instructions_come_once() {
    let sandbox = deferred();
    let (fx, log) = logged(&sandbox, "fx", &["--instructions", "FX RULES: be brief."]);
    write_extensions(&sandbox, json!({"fx": fx}));

    // No manifest yet: the server starts to be listed, and its manifest is saved.
    let list = mcp_list(&sandbox, 0);
    assert_eq!(status_of(&list, "fx")["status"], "connected");
    assert_eq!(starts(&log), 1);
    let list = mcp_list(&sandbox, 0);
    let fx = status_of(&list, "fx");
    assert_eq!(fx["status"], "idle", "{fx}");
    assert!(fx["tool_count"].as_u64().unwrap() > 3, "{fx}");
    assert!(fx["manifest_age_secs"].as_u64().is_some(), "{fx}");
    assert_eq!(starts(&log), 1, "mcp list does not start an idle server");

    // Listing, searching and promoting need no server.
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "tool_search", json!({"query": "select:fx_echo"}))]),
        Reply::tool_calls(&[("c2", "tool_search", json!({"query": "select:fx_add"}))]),
        Reply::text("done"),
    ]);
    let events = run(&sandbox, &mock);
    assert_eq!(starts(&log), 1, "promotion needs only the schema");
    let requests = mock.requests();
    assert!(requests[0].system_prompt().contains("fx_echo"));
    assert_eq!(
        requests[2].tool_names(),
        ["tool_search", "present_files", "fx_echo", "fx_add"]
    );
    let first = finished(&events, "c1")["content"].as_str().unwrap();
    assert!(first.contains("FX RULES: be brief."), "{first}");
    let second = finished(&events, "c2")["content"].as_str().unwrap();
    assert!(!second.contains("FX RULES"), "once per thread: {second}");

    // The first call starts it, and the call runs.
    let mock = promote_and_call("fx_echo", json!({"text": "hi"}));
    let events = run(&sandbox, &mock);
    assert_eq!(finished(&events, "c2")["content"], "hi");
    assert_eq!(finished(&events, "c2")["is_error"], false);
    assert_eq!(starts(&log), 2);
}

#[test]
fn one_process_per_used_server_and_none_for_the_others() {
    let sandbox = deferred();
    let (a, a_log) = logged(&sandbox, "a", &[]);
    let (b, b_log) = logged(&sandbox, "b", &[]);
    let (c, c_log) = logged(&sandbox, "c", &[]);
    write_extensions(&sandbox, json!({"a": a, "b": b, "c": c}));

    // `mcp refresh` lists every server and leaves it idle.
    let (refreshed, code, stderr) = sandbox.json(&["mcp", "refresh", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(names_of(&refreshed).len(), 3, "{refreshed}");
    let counts = || [starts(&a_log), starts(&b_log), starts(&c_log)];
    assert_eq!(counts(), [1, 1, 1], "listed once each");
    let list = mcp_list(&sandbox, 0);
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|s| s["status"] == "idle"),
        "{list}"
    );

    let mock = promote_and_call("b_echo", json!({"text": "only b"}));
    let events = run(&sandbox, &mock);
    assert_eq!(finished(&events, "c2")["content"], "only b");
    assert_eq!(
        counts(),
        [1, 2, 1],
        "only the server whose tool was called ran"
    );

    // Refreshing one by name starts only that one; an unknown name fails the command.
    let (_, code, _) = sandbox.json(&["mcp", "refresh", "a", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(counts(), [2, 2, 1]);
    let out = sandbox
        .antler()
        .args(["mcp", "refresh", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`nope`") && stderr.contains("no such server"),
        "{stderr}"
    );
}

#[test]
fn a_changed_live_list_or_entry_replaces_the_manifest() {
    let sandbox = deferred();
    let extra = sandbox.path().join("extra.txt");
    let (fx, log) = logged(
        &sandbox,
        "fx",
        &["--extra-tools-file", extra.to_str().unwrap()],
    );
    write_extensions(&sandbox, json!({"fx": fx.clone()}));
    mcp_list(&sandbox, 0);
    let listed = status_of(&mcp_list(&sandbox, 0), "fx")["tool_count"]
        .as_u64()
        .unwrap();

    // The live server now has one more tool than its manifest says.
    std::fs::write(&extra, "fresh_tool\n").unwrap();
    let mock = promote_and_call("fx_echo", json!({"text": "hi"}));
    let events = run(&sandbox, &mock);
    assert_eq!(
        finished(&events, "c2")["content"],
        "hi",
        "the call still runs"
    );
    let requests = mock.requests();
    assert!(!requests[0].system_prompt().contains("fx_fresh_tool"));
    assert!(
        requests[2].system_prompt().contains("fx_fresh_tool"),
        "the catalog follows the live list before the next model call"
    );
    assert_eq!(
        requests[2].tool_names(),
        ["tool_search", "present_files"],
        "the promotion made under the old catalog lapsed"
    );
    let fx_status = status_of(&mcp_list(&sandbox, 0), "fx").clone();
    assert_eq!(fx_status["status"], "idle");
    assert_eq!(
        fx_status["tool_count"].as_u64(),
        Some(listed + 1),
        "the manifest was updated"
    );
    assert_eq!(starts(&log), 2);

    // An edited entry is another server: its old manifest is not used.
    let mut edited = fx;
    edited["args"]
        .as_array_mut()
        .unwrap()
        .extend([json!("--name"), json!("renamed")]);
    write_extensions(&sandbox, json!({"fx": edited}));
    assert_eq!(
        status_of(&mcp_list(&sandbox, 0), "fx")["status"],
        "connected"
    );
    assert_eq!(starts(&log), 3);
}

#[test]
fn a_tool_whose_schema_changed_behind_its_manifest_does_not_run() {
    let sandbox = deferred();
    let catalog = sandbox.write(
        "catalog.json",
        r#"{"s": [{"name": "act", "description": "Acts.", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}]}"#,
    );
    let (fx, _) = logged(&sandbox, "fx", &["--catalog", catalog.to_str().unwrap()]);
    write_extensions(&sandbox, json!({"fx": fx}));
    mcp_list(&sandbox, 0);
    // Same entry, same name, another schema: a rug pull behind the cached manifest.
    sandbox.write(
        "catalog.json",
        r#"{"s": [{"name": "act", "description": "Acts.", "inputSchema": {"type": "object", "properties": {"y": {"type": "string"}}}}]}"#,
    );
    let mock = promote_and_call("fx_act", json!({"x": "1"}));
    let events = run(&sandbox, &mock);
    let result = finished(&events, "c2");
    assert_eq!(result["is_error"], true, "{result}");
    let text = result["content"].as_str().unwrap();
    assert!(
        text.contains("describes another `act`") && text.contains("tool_search"),
        "{text}"
    );

    // A description changed behind the manifest (or a forged manifest) is refused too: the
    // model chose the tool by what it was shown.
    mcp_list(&sandbox, 0);
    sandbox.write(
        "catalog.json",
        r#"{"s": [{"name": "act", "description": "Deletes everything.", "inputSchema": {"type": "object", "properties": {"y": {"type": "string"}}}}]}"#,
    );
    let mock = promote_and_call("fx_act", json!({"y": "1"}));
    let events = run(&sandbox, &mock);
    assert_eq!(finished(&events, "c2")["is_error"], true);
}

/// A filter names tools as the user sees them: `danger_*` hides the server's `danger.wipe`
/// and `danger wipe2` (shown `srv_danger_wipe`, `srv_danger_wipe2`), and the shown name
/// works as a pattern too; tools it does not name stay.
#[test]
fn a_filter_matches_the_names_the_user_sees() {
    let sandbox = Sandbox::new();
    let tool =
        |name: &str| json!({"name": name, "description": "d", "inputSchema": {"type": "object"}});
    let catalog = json!({"srv": [tool("danger.wipe"), tool("danger wipe2"), tool("safe.read"),
        tool("other.tool")]});
    let file = sandbox.write("catalog.json", &catalog.to_string());
    let entry = |filter: Value| {
        let mut entry = json!({"command": fixture_bin(), "args": ["--catalog", file]});
        entry
            .as_object_mut()
            .unwrap()
            .extend(filter.as_object().unwrap().clone());
        entry
    };
    let names = |filter: Value| {
        write_extensions(&sandbox, json!({"srv": entry(filter)}));
        let (tools, code, stderr) = sandbox.json(&["tools", "list", "--json"]);
        assert_eq!(code, 0, "{stderr}");
        let mut names: Vec<String> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .filter(|name| name.starts_with("srv_"))
            .collect();
        names.sort();
        (names, stderr)
    };
    let (all, _) = names(json!({}));
    assert_eq!(
        all,
        [
            "srv_danger_wipe",
            "srv_danger_wipe2",
            "srv_other_tool",
            "srv_safe_read"
        ]
    );
    let (kept, stderr) = names(json!({"disabled_tools": ["danger_*"]}));
    assert_eq!(kept, ["srv_other_tool", "srv_safe_read"]);
    assert!(!stderr.contains("matches none"), "{stderr}");
    let (kept, _) = names(json!({"disabled_tools": ["srv_danger_wipe2"]}));
    assert_eq!(kept, ["srv_danger_wipe", "srv_other_tool", "srv_safe_read"]);
    let (kept, _) = names(json!({"enabled_tools": ["srv_safe_*", "other.tool"]}));
    assert_eq!(kept, ["srv_other_tool", "srv_safe_read"]);

    // A name made unique with a suffix is the name shown, so it is a name to hide by.
    let catalog = json!({"srv": [tool("dup.x"), tool("dup_x")]});
    std::fs::write(&file, catalog.to_string()).unwrap();
    // The entry is the same, so its fresh manifest stands for the server: list it anew.
    write_extensions(&sandbox, json!({"srv": entry(json!({}))}));
    mcp_refresh(&sandbox);
    let (all, _) = names(json!({}));
    assert_eq!(all.len(), 2);
    let suffixed = all
        .iter()
        .find(|n| n.len() > "srv_dup_x".len())
        .unwrap()
        .clone();
    let (kept, _) = names(json!({"disabled_tools": [suffixed]}));
    assert_eq!(kept, ["srv_dup_x"]);
}

#[test]
fn filtered_tools_do_not_exist_and_defer_never_binds() {
    let sandbox = deferred();
    write_extensions(
        &sandbox,
        json!({
            "fx": {"command": fixture_bin(), "disabled_tools": ["ad*"]},
            "gx": {"command": fixture_bin(), "enabled_tools": ["echo"], "defer": "never"},
        }),
    );
    let (tools, code, stderr) = sandbox.json(&["tools", "list", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"fx_echo") && names.contains(&"gx_echo"),
        "{names:?}"
    );
    assert!(
        !names.contains(&"fx_add") && !names.contains(&"gx_add"),
        "{names:?}"
    );

    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[(
            "c1",
            "tool_search",
            json!({"query": "select:fx_add,gx_add"}),
        )]),
        Reply::tool_calls(&[(
            "c2",
            "tool_search",
            json!({"query": "sum of two numbers add"}),
        )]),
        Reply::tool_calls(&[("c3", "fx_add", json!({"a": 1, "b": 2}))]),
        Reply::tool_calls(&[("c4", "gx_echo", json!({"text": "bound"}))]),
        Reply::text("done"),
    ]);
    let events = run(&sandbox, &mock);
    let requests = mock.requests();
    assert_eq!(
        requests[0].tool_names(),
        ["tool_search", "present_files", "gx_echo"],
        "a defer: never server's kept tools are bound from the start"
    );
    let system = requests[0].system_prompt();
    assert!(
        system.contains("fx_echo") && !system.contains("fx_add"),
        "{system}"
    );
    let select = finished(&events, "c1")["content"].as_str().unwrap();
    assert!(select.starts_with("No tools found"), "{select}");
    let search = finished(&events, "c2")["content"].as_str().unwrap();
    assert!(!search.contains("fx_add"), "{search}");
    assert_eq!(finished(&events, "c3")["is_error"], true);
    assert_eq!(finished(&events, "c4")["content"], "bound");
}

#[test]
fn a_server_that_cannot_start_on_first_call_is_a_tool_error_and_a_notice() {
    let sandbox = deferred();
    let marker = sandbox.path().join("broken");
    let (fx, _) = logged(
        &sandbox,
        "fx",
        &["--fail-if-exists", marker.to_str().unwrap()],
    );
    write_extensions(&sandbox, json!({"fx": fx}));
    mcp_list(&sandbox, 0);
    std::fs::write(&marker, "").unwrap();
    let mock = promote_and_call("fx_echo", json!({"text": "hi"}));
    let events = run(&sandbox, &mock);
    let result = finished(&events, "c2");
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("not available"),
        "{result}"
    );
    let notice = events
        .iter()
        .find(|e| e["type"] == "notice")
        .unwrap_or_else(|| panic!("no notice: {events:?}"));
    assert!(
        notice["message"]
            .as_str()
            .unwrap()
            .contains("`fx` could not start"),
        "{notice}"
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_finished");
    assert_eq!(last["status"], "success", "the run goes on");
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn bound_tools_come_from_the_manifest_and_their_server_starts_on_first_call() {
    for config in ["tool_search:\n  enabled: false\n", ""] {
        let sandbox = Sandbox::new();
        if !config.is_empty() {
            sandbox.write("config.yaml", config);
        }
        let (mut lazy, lazy_log) = logged(&sandbox, "lazy", &[]);
        lazy["start"] = json!("lazy");
        let (plain, plain_log) = logged(&sandbox, "plain", &[]);
        let (mut eager, eager_log) = logged(&sandbox, "eager", &[]);
        eager["start"] = json!("eager");
        write_extensions(
            &sandbox,
            json!({"lazy": lazy, "plain": plain, "eager": eager}),
        );
        mcp_list(&sandbox, 0);
        let starts_now = || (starts(&lazy_log), starts(&plain_log), starts(&eager_log));
        assert_eq!(starts_now(), (1, 1, 1));

        // Bound (deferral off, or `auto` below its threshold): the schemas come from the
        // manifests and only `start: eager` starts at once.
        let mock = MockOpenAi::start(vec![Reply::text("no calls")]);
        run(&sandbox, &mock);
        assert_eq!(starts_now(), (1, 1, 2), "{config:?}");
        let bound = mock.requests()[0].tool_names();
        for name in ["lazy_echo", "plain_echo", "eager_echo"] {
            assert!(bound.contains(&name.to_string()), "{config:?}: {bound:?}");
        }

        let mock = MockOpenAi::start(vec![
            Reply::tool_calls(&[("c1", "plain_echo", json!({"text": "bound"}))]),
            Reply::text("done"),
        ]);
        let events = run(&sandbox, &mock);
        assert_eq!(finished(&events, "c1")["content"], "bound");
        assert_eq!(starts_now(), (1, 2, 3), "{config:?}");
    }
}

/// A bound tool whose schema changed behind its manifest fails closed as a deferred one
/// does: the model saw the old schema, so the call does not run.
#[test]
fn a_bound_tool_changed_behind_its_manifest_does_not_run() {
    let sandbox = Sandbox::new();
    sandbox.write("config.yaml", "tool_search:\n  enabled: false\n");
    let schema = |prop: &str| {
        json!({"s": [{"name": "act", "description": "Acts.", "inputSchema":
            {"type": "object", "properties": {prop: {"type": "string"}}}}]})
        .to_string()
    };
    let catalog = sandbox.write("catalog.json", &schema("x"));
    let (fx, log) = logged(&sandbox, "fx", &["--catalog", catalog.to_str().unwrap()]);
    write_extensions(&sandbox, json!({"fx": fx}));
    mcp_list(&sandbox, 0);
    sandbox.write("catalog.json", &schema("y"));
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "fx_act", json!({"x": "1"}))]),
        Reply::text("done"),
    ]);
    let events = run(&sandbox, &mock);
    let bound = mock.requests()[0].body["tools"].to_string();
    assert!(
        bound.contains("\"x\"") && !bound.contains("\"y\""),
        "{bound}"
    );
    let result = finished(&events, "c1");
    assert_eq!(result["is_error"], true, "{result}");
    let text = result["content"].as_str().unwrap();
    assert!(text.contains("describes another `act`"), "{text}");
    assert_eq!(starts(&log), 2, "the call started the server to check it");
}

#[test]
fn eager_and_young_manifests_start_at_once() {
    // `start: eager` starts a deferred server even with a fresh manifest.
    let sandbox = deferred();
    let (mut eager, eager_log) = logged(&sandbox, "eager", &[]);
    eager["start"] = json!("eager");
    write_extensions(&sandbox, json!({"eager": eager}));
    mcp_list(&sandbox, 0);
    assert_eq!(
        status_of(&mcp_list(&sandbox, 0), "eager")["status"],
        "connected"
    );
    assert_eq!(starts(&eager_log), 2);

    // A manifest older than `manifest_max_age_secs` (here: any) is not used.
    let sandbox = deferred();
    let (mut young, young_log) = logged(&sandbox, "young", &[]);
    young["manifest_max_age_secs"] = json!(0);
    write_extensions(&sandbox, json!({"young": young}));
    mcp_list(&sandbox, 0);
    assert_eq!(
        status_of(&mcp_list(&sandbox, 0), "young")["status"],
        "connected"
    );
    assert_eq!(starts(&young_log), 2);
}

#[test]
fn a_bad_policy_setting_skips_the_server_naming_the_field() {
    let sandbox = deferred();
    write_extensions(
        &sandbox,
        json!({
            "a": {"command": fixture_bin(), "start": "later"},
            "b": {"command": fixture_bin(), "disabled_tools": ["[x"]},
            "c": {"command": fixture_bin(), "defer": "sometimes"},
            "d": {"command": fixture_bin(), "excludeTools": ["add"]},
        }),
    );
    let (list, code, stderr) = sandbox.json(&["mcp", "list", "--json"]);
    assert_eq!(code, 2, "{stderr}");
    for (name, field) in [
        ("a", "start"),
        ("b", "disabled_tools"),
        ("c", "defer"),
        ("d", "excludeTools"),
    ] {
        let error = status_of(&list, name)["error"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            error.contains(&format!("mcpServers.{name}.{field}")),
            "{error}"
        );
        assert!(
            error.contains("extensions_config.json:"),
            "file and line: {error}"
        );
    }
}

#[test]
fn doctor_checks_idle_servers_live() {
    let sandbox = deferred();
    let marker = sandbox.path().join("broken");
    let (fx, log) = logged(
        &sandbox,
        "fx",
        &["--fail-if-exists", marker.to_str().unwrap()],
    );
    write_extensions(&sandbox, json!({"fx": fx}));
    mcp_list(&sandbox, 0);
    let check = |report: &Value| {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == "mcp: fx")
            .unwrap()
            .clone()
    };
    let (report, _, _) = sandbox.json(&["doctor", "--offline", "--json"]);
    let fx = check(&report);
    assert_eq!(fx["status"], "ok", "{report}");
    assert!(fx["detail"].as_str().unwrap().contains("idle"), "{fx}");
    assert_eq!(
        starts(&log),
        2,
        "the doctor starts an idle server to check it"
    );

    std::fs::write(&marker, "").unwrap();
    let (report, code, _) = sandbox.json(&["doctor", "--offline", "--json"]);
    assert_eq!(check(&report)["status"], "fail", "{report}");
    assert_ne!(code, 0);
}

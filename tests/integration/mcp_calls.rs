//! Tool calls through the public API: results, MCP errors, timeouts, crashes and restarts,
//! tool-list changes, and the signature cache.

use std::path::Path;
use std::sync::Arc;

use antler::config::{Found, Origin, parse_extensions_config};
use antler::mcp::{McpCache, McpManager};
use antler::protocol::ServerState;
use antler::tools::{Tool, ToolOutput};
use antler::trust::{OnUntrusted, ProjectTrust, TrustStore};
use serde_json::{Value, json};

use crate::support::*;

async fn manager(servers: Value) -> McpManager {
    let text = json!({"mcpServers": servers}).to_string();
    let loaded = parse_extensions_config(&text, Path::new("test.json"), &|_| None).unwrap();
    assert!(
        loaded.value.skipped.is_empty(),
        "{:?}",
        loaded.value.skipped
    );
    McpManager::start(loaded.value, &antler::mcp::StartSettings::eager()).await
}

/// Calls the tool `name` of `manager` with `arguments`.
async fn call(manager: &McpManager, name: &str, arguments: Value) -> ToolOutput {
    call_tool(&*tool(manager, name).await, arguments).await
}

async fn tool(manager: &McpManager, name: &str) -> Arc<dyn Tool> {
    manager
        .tools()
        .await
        .into_iter()
        .find(|t| t.info().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test]
async fn results_mcp_errors_and_timeouts_become_tool_outputs() {
    let mut fx = fixture_stdio(&[]);
    fx["tool_timeout_secs"] = json!(0.5);
    fx["env"] = json!({"ANTLER_FIXTURE_VALUE": "from-config"});
    let m = manager(json!({"fx": fx})).await;

    let out = call(&m, "fx_echo", json!({"text": "hi"})).await;
    assert_eq!((out.content.as_str(), out.is_error), ("hi", false));
    let out = call(&m, "fx_add", json!({"a": 2, "b": 3})).await;
    assert_eq!(out.content, "5");
    let out = call(&m, "fx_env", json!({"name": "ANTLER_FIXTURE_VALUE"})).await;
    assert_eq!(
        out.content, "from-config",
        "the configured env reaches the child"
    );

    let out = call(&m, "fx_fail", json!({"message": "boom"})).await;
    assert!(out.is_error);
    assert_eq!(out.content, "Error: boom");

    let out = call(&m, "fx_sleep", json!({"ms": 30_000})).await;
    assert!(out.is_error);
    assert!(
        out.content.contains("did not answer within 0.5s"),
        "{}",
        out.content
    );

    let out = call(&m, "fx_echo", json!({"text": 7})).await;
    assert!(
        out.is_error,
        "invalid arguments are an error result: {}",
        out.content
    );
    let out = call(&m, "fx_echo", json!([1, 2])).await;
    assert!(out.is_error && out.content.contains("must be a JSON object"));

    // The server is still usable after all of that.
    let out = call(&m, "fx_echo", json!({"text": "still here"})).await;
    assert_eq!(out.content, "still here");
}

#[tokio::test]
async fn a_crashed_stdio_server_is_restarted_at_its_next_call() {
    let m = manager(json!({"fx": fixture_stdio(&[])})).await;
    let pid = tool(&m, "fx_pid").await;
    let first = call_tool(&*pid, json!({})).await;
    assert!(!first.is_error);

    let out = call(&m, "fx_crash", json!({})).await;
    assert!(out.is_error);
    assert!(
        out.content
            .contains("stopped or became unreachable during the call"),
        "{}",
        out.content
    );

    let second = call_tool(&*pid, json!({})).await;
    assert!(!second.is_error, "{}", second.content);
    assert_ne!(first.content, second.content, "a new process answers");
    assert_eq!(m.statuses().await[0].status, ServerState::Connected);
}

async fn list_changes_are_seen(servers: Value, name: &str) {
    let m = manager(servers).await;
    assert!(
        m.tools()
            .await
            .iter()
            .all(|t| t.info().name != format!("{name}_added_tool"))
    );
    let mut changes = m.servers()[0].tool_list_changes();
    let out = call(&m, &format!("{name}_change_tools"), json!({})).await;
    assert_eq!(out.content, "changed");
    tokio::time::timeout(std::time::Duration::from_secs(5), changes.changed())
        .await
        .expect("no tools/list_changed within 5 s")
        .unwrap();
    let added = tool(&m, &format!("{name}_added_tool")).await;
    assert_eq!(call_tool(&*added, json!({})).await.content, "added");
    assert_eq!(m.statuses().await[0].tool_count, 10);
}

#[tokio::test]
async fn list_changed_over_stdio_relists_before_the_next_use() {
    list_changes_are_seen(json!({"fx": fixture_stdio(&[])}), "fx").await;
}

#[tokio::test]
async fn list_changed_over_streamable_http_relists_before_the_next_use() {
    let server = fixture_network("http", &[]);
    list_changes_are_seen(json!({"web": {"type": "http", "url": server.url}}), "web").await;
}

#[tokio::test]
async fn list_changed_over_sse_relists_before_the_next_use() {
    let server = fixture_network("sse", &[]);
    list_changes_are_seen(json!({"old": {"type": "sse", "url": server.url}}), "old").await;
}

#[tokio::test]
async fn the_toolset_is_cached_against_the_file_signature() {
    let sb = Sandbox::new();
    let path = write_extensions(&sb, json!({"a": fixture_stdio(&[])}));
    let env = |_: &str| None;
    let named = |path: &Path| Found {
        path: path.to_path_buf(),
        origin: Origin::Flag,
    };
    let mut cache = McpCache::new(
        Some(named(&path)),
        ProjectTrust::everything(),
        antler::mcp::StartSettings::eager(),
    );
    let first = cache.get(&env).await.unwrap();
    let again = cache.get(&env).await.unwrap();
    assert!(Arc::ptr_eq(&first, &again), "unchanged file: same servers");

    write_extensions(&sb, json!({"b": fixture_stdio(&[])}));
    let edited = cache.get(&env).await.unwrap();
    assert!(
        !Arc::ptr_eq(&first, &edited),
        "edited file: servers restarted"
    );
    assert_eq!(edited.statuses().await[0].name, "b");

    std::fs::write(&path, "{ not json").unwrap();
    let broken = cache.get(&env).await.unwrap();
    assert!(
        Arc::ptr_eq(&edited, &broken),
        "a broken edit keeps the last good servers"
    );

    std::fs::remove_file(&path).unwrap();
    let deleted = cache.get(&env).await.unwrap();
    assert!(
        Arc::ptr_eq(&edited, &deleted),
        "a deleted file keeps the last good servers"
    );
    assert_eq!(deleted.tools().await.len(), 9);

    let mut fresh = McpCache::new(
        Some(named(&path)),
        ProjectTrust::everything(),
        antler::mcp::StartSettings::eager(),
    );
    assert!(fresh.get(&env).await.unwrap().statuses().await.is_empty());
}

#[tokio::test]
async fn a_project_file_changed_while_running_is_used_only_once_trusted() {
    let sb = Sandbox::new();
    let path = write_extensions(&sb, json!({"a": fixture_stdio(&[])}));
    let store = TrustStore::in_dir(&sb.path().join("data"));
    let trust = Arc::new(ProjectTrust::new(Some(store.clone()), OnUntrusted::Refuse));
    let project = Found {
        path: path.clone(),
        origin: Origin::Project,
    };
    let env = |_: &str| None;
    let mut cache = McpCache::new(Some(project), trust, antler::mcp::StartSettings::eager());
    let Err(err) = cache.get(&env).await else {
        panic!("an untrusted project file was used");
    };
    assert!(
        err.to_string().contains("has not been told to trust"),
        "{err}"
    );

    let trusted =
        antler::trust::ProjectFile::read(antler::trust::ProjectFileKind::Extensions, &path)
            .unwrap();
    store.trust(&trusted.key, &trusted.sha256).unwrap();
    let first = cache.get(&env).await.unwrap();
    assert_eq!(first.statuses().await[0].name, "a");

    // A tool (or anything else) plants a server: it is not started.
    let marker = sb.path().join("planted-ran");
    write_extensions(
        &sb,
        json!({"planted": {"command": "sh", "args": ["-c", format!("touch {}", marker.display())]}}),
    );
    let after = cache.get(&env).await.unwrap();
    assert!(Arc::ptr_eq(&first, &after), "the last trusted servers stay");
    assert!(!marker.exists(), "the planted command never ran");
}

/// Starts the fixture over `transport` (`stdio`, `http`, `sse`) with extra arguments and
/// settings; returns the server process (for network transports) and its config entry.
fn entry(transport: &str, args: &[&str], settings: Value) -> (Option<ServerProcess>, Value) {
    let (process, mut value) = match transport {
        "stdio" => (None, fixture_stdio(args)),
        _ => {
            let p = fixture_network(transport, args);
            let v = json!({"type": transport, "url": p.url});
            (Some(p), v)
        }
    };
    for (k, v) in settings.as_object().unwrap() {
        value[k] = v.clone();
    }
    (process, value)
}

#[tokio::test]
async fn a_hung_server_fails_at_its_startup_timeout_on_every_transport() {
    for transport in ["stdio", "http", "sse"] {
        let (_p, hung) = entry(transport, &["--hang"], json!({"startup_timeout_secs": 0.5}));
        let m = manager(json!({"hung": hung})).await;
        let status = &m.statuses().await[0];
        assert_eq!(status.status, ServerState::Failed, "{transport}");
        assert!(
            status
                .error
                .as_deref()
                .unwrap()
                .contains("did not start within 0.5s"),
            "{transport}: {status:?}"
        );
    }
}

#[tokio::test]
async fn call_timeouts_and_is_error_on_every_transport() {
    for transport in ["stdio", "http", "sse"] {
        let (_p, fx) = entry(transport, &[], json!({"tool_timeout_secs": 0.5}));
        let m = manager(json!({"fx": fx})).await;
        let out = call(&m, "fx_sleep", json!({"ms": 30_000})).await;
        assert!(
            out.is_error && out.content.contains("did not answer within 0.5s"),
            "{transport}: {}",
            out.content
        );
        let out = call(&m, "fx_fail", json!({"message": "nope"})).await;
        assert_eq!(
            (out.is_error, out.content.as_str()),
            (true, "Error: nope"),
            "{transport}"
        );
        let out = call(&m, "fx_echo", json!({"text": "after"})).await;
        assert_eq!(out.content, "after", "{transport}: still usable");
    }
}

#[tokio::test]
async fn a_network_server_that_died_is_reconnected_at_the_next_call() {
    for transport in ["http", "sse"] {
        let first = fixture_network(transport, &[]);
        let port = first
            .url
            .rsplit(':')
            .next()
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .to_string();
        let m = manager(json!({"net": {"type": transport, "url": first.url}})).await;
        let pid = tool(&m, "net_pid").await;
        let before = call_tool(&*pid, json!({})).await;
        assert!(!before.is_error);
        drop(first);
        let out = call_tool(&*pid, json!({})).await;
        assert!(
            out.is_error,
            "{transport}: the server is gone: {}",
            out.content
        );
        let _second = fixture_network(transport, &["--port", &port]);
        let after = call_tool(&*pid, json!({})).await;
        assert!(!after.is_error, "{transport}: {}", after.content);
        assert_ne!(
            before.content, after.content,
            "{transport}: a new process answers"
        );
    }
}

#[tokio::test]
async fn reconnecting_never_starts_a_disabled_server() {
    let starts = tempfile::tempdir().unwrap();
    let log = starts.path().join("starts.log");
    let mut server = fixture_stdio(&["--starts-log", &log.display().to_string()]);
    server["enabled"] = json!(false);
    let manager = manager(json!({"off": server})).await;
    for server in manager.servers() {
        server.reconnect().await;
    }
    let statuses = manager.statuses().await;
    assert_eq!(statuses[0].status, ServerState::Disabled);
    assert!(!log.exists(), "the process was never started");
}

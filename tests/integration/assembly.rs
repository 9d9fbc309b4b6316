//! A session's long-lived assembly: built once, refreshed cheaply before each step, and
//! rebuilt only where something changed.

use std::sync::Arc;

use antler::agent::runner::AgentSource;
use antler::config::ConfigPaths;
use antler::provider::{OpenAiProvider, OpenAiSettings};
use antler::session::assembly::{Assembly, AssemblySpec, ThreadPlace};
use antler::setup::Setup;
use serde_json::json;

use crate::support::*;

async fn assembly(sandbox: &Sandbox) -> Assembly {
    let env = |_: &str| None;
    let setup = Setup::load(
        &ConfigPaths::default(),
        sandbox.path(),
        &env,
        &antler::trust::ProjectTrust::everything(),
    )
    .unwrap();
    let provider = OpenAiProvider::new(OpenAiSettings::new("http://127.0.0.1:9/v1", "m")).unwrap();
    let spec = AssemblySpec {
        provider: Arc::new(provider),
        model: None,
        max_turns: 5,
        clarifications: None,
        gates: Arc::new(antler::permissions::CallGates::allow_all()),
        hooks: Arc::default(),
        prompt: Default::default(),
    };
    Assembly::new(setup, sandbox.path(), spec, &env)
        .await
        .unwrap()
}

fn place(sandbox: &Sandbox, thread: &str) -> ThreadPlace {
    ThreadPlace {
        date: String::from("2026-12-01"),
        outputs: sandbox.path().join("outputs").join(thread),
    }
}

fn bound(agent: &antler::agent::runner::Agent) -> Vec<String> {
    agent
        .deferred
        .bound
        .iter()
        .map(|t| t.info().name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_are_rebuilt_only_when_something_changed() {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    let assembly = assembly(&sandbox).await;
    assembly.set_thread(place(&sandbox, "t1")).await;
    let first = assembly.prepare().await.unwrap();
    assert_eq!(assembly.rebuilds().await, 1);

    // Message after message on one thread: the same agent, nothing rebuilt.
    for _ in 0..3 {
        assembly.set_thread(place(&sandbox, "t1")).await;
        let again = assembly.prepare().await.unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let step = assembly.current().await.unwrap();
        assert!(Arc::ptr_eq(&first, &step));
    }
    assert_eq!(assembly.rebuilds().await, 1);

    // Another thread: a new agent (its outputs folder), over the same tools.
    assembly.set_thread(place(&sandbox, "t2")).await;
    let other = assembly.prepare().await.unwrap();
    assert!(!Arc::ptr_eq(&first, &other));
    assert!(Arc::ptr_eq(&first.deferred, &other.deferred));
    assert_eq!(assembly.rebuilds().await, 1);

    // A server announces a changed tool list: its tools are taken again.
    let change = other.deferred.tool("fx_change_tools").unwrap();
    let out = call_tool(&*change, json!({})).await;
    assert_eq!(out.content, "changed");
    let changed = assembly.current().await.unwrap();
    assert_eq!(assembly.rebuilds().await, 2);
    assert!(bound(&changed).contains(&String::from("fx_added_tool")));
    assert!(!bound(&other).contains(&String::from("fx_added_tool")));

    // The extensions file changes: its servers are started again and the tools rebuilt.
    let old_mcp = assembly.mcp().await;
    write_extensions(&sandbox, json!({"fy": fixture_stdio(&[])}));
    let reloaded = assembly.current().await.unwrap();
    assert!(!Arc::ptr_eq(&old_mcp, &assembly.mcp().await));
    assert_eq!(assembly.rebuilds().await, 3);
    assert!(bound(&reloaded).contains(&String::from("fy_echo")));
    assert!(!bound(&reloaded).iter().any(|n| n.starts_with("fx_")));
    assembly
        .mcp()
        .await
        .shutdown(std::time::Duration::from_secs(1))
        .await;
    old_mcp.shutdown(std::time::Duration::from_secs(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_announces_changes_and_never_lists_stalls_one_step_only() {
    let sandbox = Sandbox::new();
    let mut fx = fixture_stdio(&["--hang-relist"]);
    fx["startup_timeout_secs"] = json!(2);
    write_extensions(&sandbox, json!({"fx": fx}));
    let assembly = assembly(&sandbox).await;
    assembly.set_thread(place(&sandbox, "t1")).await;
    let first = assembly.prepare().await.unwrap();
    let statuses = assembly.mcp().await.statuses().await;
    let change = first
        .deferred
        .tool("fx_change_tools")
        .unwrap_or_else(|| panic!("{statuses:?}"));
    for _ in 0..2 {
        let out = call_tool(&*change, json!({})).await;
        assert_eq!(out.content, "changed");
        // The re-list times out once; the old tools stay, and the next steps do not wait
        // for the server again while it backs off.
        let started = std::time::Instant::now();
        let agent = assembly.current().await.unwrap();
        assert!(Arc::ptr_eq(&agent, &first), "the old list is kept");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
    let started = std::time::Instant::now();
    for _ in 0..5 {
        assembly.current().await.unwrap();
    }
    assert!(
        started.elapsed() < std::time::Duration::from_millis(400),
        "backing off, not waiting: {:?}",
        started.elapsed()
    );
    assert_eq!(assembly.rebuilds().await, 1);
    assembly
        .mcp()
        .await
        .shutdown(std::time::Duration::from_secs(1))
        .await;
}

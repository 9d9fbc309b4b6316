//! The deferred flow through the public API, with no model: a toolset from the fixture MCP
//! server, a scripted sequence of model turns, and exactly which schemas are bound on each.

use std::path::Path;

use antler::agent::layers::deferred_chain;
use antler::agent::middleware::Chain;
use antler::agent::state::ThreadState;
use antler::config::{ToolSearchConfig, ToolSearchMode, parse_extensions_config};
use antler::deferred::{DeferredSetup, setup_deferred};
use antler::mcp::McpManager;
use antler::protocol::{Message, ToolCall};
use antler::tools::{ToolOutput, Toolset, assemble_toolset};
use serde_json::{Value, json};

use crate::support::*;

struct Session {
    manager: McpManager,
    setup: DeferredSetup,
    chain: Chain,
    state: ThreadState,
    messages: Vec<Message>,
    calls: usize,
}

impl Session {
    async fn start(servers: Value) -> Self {
        let text = json!({"mcpServers": servers}).to_string();
        let loaded = parse_extensions_config(&text, Path::new("e.json"), &|_| None).unwrap();
        let manager = McpManager::start(loaded.value, &antler::mcp::StartSettings::eager()).await;
        let mut session = Session {
            manager,
            setup: setup_deferred(&Toolset::default(), &ToolSearchConfig::default(), None).unwrap(),
            chain: Chain::new(),
            state: ThreadState::default(),
            messages: Vec::new(),
            calls: 0,
        };
        session.rebuild().await;
        session
    }

    /// Rebuilds the toolset (after a tool-list change) with the same thread state.
    async fn rebuild(&mut self) {
        let (toolset, _) = assemble_toolset(Vec::new(), Vec::new(), self.manager.tools().await);
        let config = ToolSearchConfig {
            enabled: Some(ToolSearchMode::On),
            ..ToolSearchConfig::default()
        };
        self.setup = setup_deferred(&toolset, &config, None).unwrap();
        let servers: Vec<_> = self
            .manager
            .servers()
            .iter()
            .map(|s| s.config().clone())
            .collect();
        self.chain = deferred_chain(&self.setup, &config, &servers, Default::default());
    }

    fn user(&mut self, text: &str) {
        self.messages.push(Message::User {
            content: text.into(),
        });
    }

    /// The names bound for the next model call.
    fn bound(&mut self) -> Vec<String> {
        self.chain
            .prepare_model_call(
                &mut self.state,
                &mut self.messages,
                self.setup.bound.clone(),
            )
            .0
            .iter()
            .map(|t| t.info().name.clone())
            .collect()
    }

    /// The model calls `name` with `arguments`.
    async fn call(&mut self, name: &str, arguments: Value) -> ToolOutput {
        self.calls += 1;
        let call = ToolCall {
            id: format!("call_{}", self.calls),
            name: name.into(),
            arguments: arguments.to_string(),
        };
        let setup = &self.setup;
        let lookup = |n: &str| setup.tool(n);
        let output = self
            .chain
            .run_tool_call(&mut self.state, &call, &lookup)
            .await;
        self.messages.push(Message::Assistant {
            content: String::new(),
            reasoning: String::new(),
            tool_calls: vec![call.clone()],
        });
        self.messages.push(Message::Tool {
            call_id: call.id,
            name: name.into(),
            content: output.content.clone(),
            is_error: output.is_error,
        });
        output
    }
}

#[tokio::test]
async fn scripted_turns_bind_exactly_the_promoted_schemas() {
    let mut s = Session::start(json!({"fx": fixture_stdio(&[])})).await;
    let section = s.setup.prompt_section();
    assert!(
        section.starts_with("<available-deferred-tools>\nfx_add\nfx_change_tools\n"),
        "{section}"
    );

    s.user("please echo hello");
    assert_eq!(s.bound(), ["tool_search"], "turn 1 binds no MCP schema");

    // A call naming a deferred tool does not run; it promotes the tool, as `select:` would.
    let blocked = s.call("fx_add", json!({"a": 1, "b": 2})).await;
    assert!(
        blocked.is_error
            && blocked
                .content
                .contains("was deferred, so this call did not run")
    );
    assert_eq!(s.bound(), ["tool_search", "fx_add"]);

    let found = s
        .call("tool_search", json!({"query": "select:fx_echo"}))
        .await;
    let schemas: Value = serde_json::from_str(&found.content).unwrap();
    assert_eq!(schemas[0]["name"], "fx_echo");
    assert_eq!(
        s.bound(),
        ["tool_search", "fx_add", "fx_echo"],
        "turn 2 binds the promoted tool, after the one promoted before"
    );

    assert_eq!(
        s.call("fx_echo", json!({"text": "hello"})).await.content,
        "hello"
    );

    let found = s
        .call("tool_search", json!({"query": "add two numbers"}))
        .await;
    // The promoted schemas, then the names of the other matches, not loaded.
    let (loaded, others) = found
        .content
        .split_once("\n\n")
        .unwrap_or((&found.content, ""));
    let schemas: Value = serde_json::from_str(loaded).unwrap();
    assert!(
        others.is_empty() || others.starts_with("Also matched, not loaded"),
        "{others}"
    );
    assert_eq!(
        schemas[0]["name"], "fx_add",
        "ranked search: {}",
        found.content
    );
    let bound = s.bound();
    assert_eq!(
        &bound[..3],
        ["tool_search", "fx_add", "fx_echo"],
        "promotion order, stable prefix"
    );
    assert_eq!(s.call("fx_add", json!({"a": 2, "b": 3})).await.content, "5");

    // The server changes its tools: the catalog hash changes and old promotions lapse.
    let old_hash = s.setup.catalog.as_ref().unwrap().hash().to_string();
    s.call("tool_search", json!({"query": "select:fx_change_tools"}))
        .await;
    let mut changes = s.manager.servers()[0].tool_list_changes();
    assert_eq!(
        s.call("fx_change_tools", json!({})).await.content,
        "changed"
    );
    tokio::time::timeout(std::time::Duration::from_secs(5), changes.changed())
        .await
        .unwrap()
        .unwrap();
    s.rebuild().await;
    assert_ne!(s.setup.catalog.as_ref().unwrap().hash(), old_hash);
    assert!(s.setup.prompt_section().contains("fx_added_tool"));
    assert_eq!(
        s.bound(),
        ["tool_search"],
        "promotions for the old catalog lapse"
    );
    let blocked = s.call("fx_echo", json!({"text": "x"})).await;
    assert!(blocked.is_error, "a lapsed tool must be searched again");
}

#[tokio::test]
async fn routing_hints_promote_before_the_model_call() {
    let mut fx = fixture_stdio(&[]);
    fx["routing"] = json!({"mode": "prefer", "keywords": ["arithmetic"], "priority": 1});
    let mut s = Session::start(json!({"fx": fx})).await;
    s.user("Some ARITHMETIC please: add 2 and 3");
    let bound = s.bound();
    assert_eq!(bound.len(), 4, "tool_search plus the top 3: {bound:?}");
    assert_eq!(bound[0], "tool_search");
    assert_eq!(bound[1], "fx_add", "ranked against the message: {bound:?}");
    assert_eq!(s.call("fx_add", json!({"a": 2, "b": 3})).await.content, "5");
}

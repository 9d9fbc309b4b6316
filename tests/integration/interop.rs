//! Interop with MCP servers that no one here wrote: `@modelcontextprotocol/server-everything`
//! over stdio, SSE and streamable HTTP, and `mcp-server-time` from PyPI. Installed by
//! `.ci/interop-deps`.

use serde_json::json;

use crate::support::*;

#[test]
fn server_everything_on_three_transports_and_mcp_server_time_all_connect() {
    let dir = interop_dir();
    let sse = everything_network("sse");
    let http = everything_network("streamableHttp");
    let sb = Sandbox::new();
    write_extensions(
        &sb,
        json!({
            "everything": {"command": "node", "args": [everything_js(), "stdio"]},
            "everything_sse": {"type": "sse", "url": sse.url},
            "everything_http": {"type": "http", "url": http.url},
            "time": {"command": dir.join("venv/bin/mcp-server-time")},
        }),
    );
    let (list, code, stderr) = sb.json(&["mcp", "list", "--json"]);
    assert_eq!(code, 0, "{list}\n{stderr}");
    let count = status_of(&list, "everything")["tool_count"]
        .as_u64()
        .unwrap();
    assert!(count >= 10, "server-everything lists its tools: {count}");
    for name in ["everything", "everything_sse", "everything_http", "time"] {
        let s = status_of(&list, name);
        assert_eq!(s["status"], "connected", "{s}");
    }
    for name in ["everything_sse", "everything_http"] {
        assert_eq!(status_of(&list, name)["tool_count"].as_u64(), Some(count));
    }
    assert_eq!(status_of(&list, "time")["tool_count"], 2);

    let (tools, _, _) = sb.json(&["tools", "list", "--json"]);
    let names = names_of(&tools);
    for expected in [
        "everything_echo",
        "everything_sse_echo",
        "everything_http_echo",
        "time_get_current_time",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
}

/// mcp-server-time announces resources and lists none: no resource tools for it, neither
/// connected nor idle on its manifest.
#[test]
fn mcp_server_time_adds_no_resource_tools() {
    let sb = Sandbox::new();
    let time = interop_dir().join("venv/bin/mcp-server-time");
    write_extensions(&sb, json!({"time": {"command": time}}));
    for _ in ["connected", "idle"] {
        let (tools, code, stderr) = sb.json(&["tools", "list", "--json"]);
        assert_eq!(code, 0, "{stderr}");
        let names = names_of(&tools);
        assert!(names.contains(&"time_get_current_time"), "{names:?}");
        assert!(
            !names.iter().any(|n| n.contains("mcp_resource")),
            "{names:?}"
        );
    }
}

#[tokio::test]
async fn calls_reach_the_real_servers() {
    let dir = interop_dir();
    let http = everything_network("streamableHttp");
    let text = json!({"mcpServers": {
        "everything": {"command": "node", "args": [everything_js(), "stdio"]},
        "web": {"type": "http", "url": http.url},
        "time": {"command": dir.join("venv/bin/mcp-server-time")},
    }})
    .to_string();
    let loaded =
        antler::config::parse_extensions_config(&text, std::path::Path::new("x.json"), &|_| None)
            .unwrap();
    let manager =
        antler::mcp::McpManager::start(loaded.value, &antler::mcp::StartSettings::eager()).await;
    let tools = manager.tools().await;
    let call = |name: &str, args: serde_json::Value| {
        let tool = tools
            .iter()
            .find(|t| t.info().name == name)
            .unwrap()
            .clone();
        async move { call_tool(&*tool, args).await }
    };
    for name in ["everything_echo", "web_echo"] {
        let out = call(name, json!({"message": "hello"})).await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.contains("hello"), "{}", out.content);
    }
    let out = call("everything_get-sum", json!({"a": 2, "b": 40})).await;
    assert!(out.content.contains("42"), "{}", out.content);
    // Structured content that its text block repeats as JSON reaches the model once.
    let out = call(
        "everything_get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        out.content.matches("Light rain / drizzle").count(),
        1,
        "{}",
        out.content
    );
    let out = call("time_get_current_time", json!({"timezone": "UTC"})).await;
    assert!(
        !out.is_error && out.content.contains("UTC"),
        "{}",
        out.content
    );
    let out = call("time_get_current_time", json!({"timezone": "Not/AZone"})).await;
    assert!(
        out.is_error,
        "an invalid timezone is an MCP error result: {}",
        out.content
    );
}

/// Resources, prompts, elicitation and progress against server-everything, through the
/// binary with the scripted model.
#[test]
fn server_everythings_resources_prompts_elicitation_and_progress() {
    let sandbox = Sandbox::new();
    write_extensions(
        &sandbox,
        json!({"everything": {"command": "node", "args": [everything_js(), "stdio"]}}),
    );
    sandbox.write("config.yaml", "tool_search:\n  enabled: false\n");
    let mock = crate::mock_openai::MockOpenAi::start(vec![
        crate::mock_openai::Reply::tool_calls(&[(
            "c1",
            "list_mcp_resources",
            json!({"server": "everything"}),
        )]),
        crate::mock_openai::Reply::tool_calls(&[(
            "c2",
            "read_mcp_resource",
            json!({"server": "everything", "uri": "demo://resource/static/document/features.md"}),
        )]),
        crate::mock_openai::Reply::tool_calls(&[(
            "c3",
            "everything_trigger-elicitation-request",
            json!({}),
        )]),
        crate::mock_openai::Reply::tool_calls(&[(
            "c4",
            "everything_trigger-long-running-operation",
            json!({"duration": 1, "steps": 3}),
        )]),
        crate::mock_openai::Reply::text("Done."),
    ]);
    let out = agent(&sandbox, &mock)
        .args([
            "--mcp-prompt",
            "everything:args-prompt",
            "--arg",
            "city=Lisbon",
            "--output-format",
            "stream-json",
        ])
        .output()
        .unwrap();
    assert_success(&out);
    let requests = mock.requests();
    assert_eq!(
        requests[0].messages().last().unwrap()["content"],
        "What's weather in Lisbon?",
        "the server's prompt is the user turn"
    );
    let result = |call: &str| {
        requests
            .last()
            .unwrap()
            .messages()
            .iter()
            .find(|m| m["tool_call_id"] == call)
            .and_then(|m| m["content"].as_str().map(str::to_string))
            .unwrap_or_else(|| panic!("no result of {call}"))
    };
    let listed = result("c1");
    assert!(
        listed.contains("demo://resource/static/document/features.md")
            && listed.contains("URI templates"),
        "{listed}"
    );
    assert!(
        result("c2").contains('#'),
        "the document's markdown: {}",
        result("c2")
    );
    let events = events(&out.stdout);
    let declined = events
        .iter()
        .find(|e| e["type"] == "elicitation_answered")
        .unwrap_or_else(|| {
            panic!(
                "the elicitation was answered: {}\n{}",
                result("c3"),
                std::fs::read_to_string(sandbox.log_file()).unwrap_or_default()
            )
        });
    assert_eq!(
        (declined["action"].as_str(), declined["automatic"].as_bool()),
        (Some("decline"), Some(true))
    );
    let progress: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_progress" && e["call_id"] == "c4")
        .collect();
    assert!(!progress.is_empty(), "progress of the long operation");
    assert_eq!(progress.last().unwrap()["total"], 3.0);
}

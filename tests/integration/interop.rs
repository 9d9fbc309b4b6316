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

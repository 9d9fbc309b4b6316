//! What MCP servers offer besides tools: resources (the `list_mcp_resources` and
//! `read_mcp_resource` tools, images attached for vision models), prompts, elicitation.

use std::path::Path;

use antler::config::parse_extensions_config;
use antler::mcp::McpManager;
use serde_json::{Value, json};

use crate::mock_openai::{MockOpenAi, Reply};
use crate::support::*;

async fn start(servers: Value) -> McpManager {
    let text = json!({"mcpServers": servers}).to_string();
    let loaded = parse_extensions_config(&text, Path::new("test.json"), &|_| None).unwrap();
    McpManager::start(loaded.value, &antler::mcp::StartSettings::eager()).await
}

async fn call(manager: &McpManager, name: &str, arguments: Value) -> antler::tools::ToolOutput {
    let tools = manager.tools().await;
    let tool = tools
        .iter()
        .find(|t| t.info().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    call_tool(&**tool, arguments).await
}

#[tokio::test]
async fn resources_are_listed_and_read_and_only_servers_that_offer_them_are_asked() {
    let manager = start(json!({
        "notes": fixture_stdio(&["--resources"]),
        "plain": fixture_stdio(&[]),
    }))
    .await;
    let names: Vec<String> = manager
        .tools()
        .await
        .iter()
        .map(|t| t.info().name.clone())
        .collect();
    assert_eq!(
        names[..2],
        ["list_mcp_resources", "read_mcp_resource"],
        "first in the MCP tier: {names:?}"
    );
    let schema = manager.tools().await[1].info().parameters.clone();
    assert_eq!(schema["properties"]["server"]["enum"], json!(["notes"]));

    let listed = call(&manager, "list_mcp_resources", json!({})).await;
    assert!(!listed.is_error, "{}", listed.content);
    assert_eq!(
        listed.content,
        "## notes\n\
         - fixture://notes/hello.txt (hello note, text/plain): A short note.\n\
         - fixture://images/dot.png (dot, image/png, 68 bytes)\n\
         URI templates (fill in the {parts}):\n\
         - fixture://notes/{name} (any note)"
    );

    let note = call(
        &manager,
        "read_mcp_resource",
        json!({"server": "notes", "uri": "fixture://notes/hello.txt"}),
    )
    .await;
    assert_eq!(
        (note.content.as_str(), note.is_error),
        ("Hello from the fixture's note.", false)
    );
    let templated = call(
        &manager,
        "read_mcp_resource",
        json!({"server": "notes", "uri": "fixture://notes/todo"}),
    )
    .await;
    assert_eq!(templated.content, "The note called todo.");

    // A PNG is attached as an image (the model sees it if it can), and described.
    let dot = call(
        &manager,
        "read_mcp_resource",
        json!({"server": "notes", "uri": "fixture://images/dot.png"}),
    )
    .await;
    assert!(dot.content.contains("image/png"), "{}", dot.content);
    let images = &dot.state_update.as_ref().unwrap().images;
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].media_type, "image/png");
    assert_eq!(images[0].path, "notes: fixture://images/dot.png");
}

#[tokio::test]
async fn model_chosen_servers_and_uris_are_checked_before_any_server_sees_them() {
    let manager = start(json!({
        "notes": fixture_stdio(&["--resources"]),
        "plain": fixture_stdio(&[]),
    }))
    .await;
    for (arguments, expected) in [
        (
            json!({"server": "plain", "uri": "fixture://notes/hello.txt"}),
            "no MCP server called \"plain\" offers resources; the servers that do: notes",
        ),
        (
            json!({"server": "../../etc/passwd", "uri": "x"}),
            "no MCP server called \"../../etc/passwd\" offers resources",
        ),
        (
            json!({"server": "notes", "uri": ""}),
            "`uri` must be a resource URI",
        ),
        (
            json!({"server": "notes", "uri": "x".repeat(5000)}),
            "`uri` must be a resource URI",
        ),
        (
            json!({"server": "notes", "uri": "fixture://nowhere"}),
            "refused: ",
        ),
        (json!({"server": "notes"}), "invalid arguments"),
    ] {
        let out = call(&manager, "read_mcp_resource", arguments.clone()).await;
        assert!(out.is_error, "{arguments}: {}", out.content);
        assert!(
            out.content.contains(expected),
            "{arguments}: {}",
            out.content
        );
    }
    let out = call(&manager, "list_mcp_resources", json!({"server": "plain"})).await;
    assert!(
        out.is_error && out.content.contains("offers resources"),
        "{}",
        out.content
    );

    let none = start(json!({"plain": fixture_stdio(&[])})).await;
    assert!(
        none.tools()
            .await
            .iter()
            .all(|t| !t.info().name.contains("mcp_resource")),
        "no server offers resources: no resource tools"
    );
}

#[tokio::test]
async fn images_in_tool_results_are_attached_only_when_they_are_images() {
    let manager = start(json!({"fx": fixture_stdio(&["--resources"])})).await;
    let out = call(&manager, "fx_tiny_image", json!({})).await;
    assert!(
        out.content.starts_with("a dot\n[image: image/png"),
        "{}",
        out.content
    );
    let images = &out.state_update.as_ref().unwrap().images;
    assert_eq!(images[0].path, "MCP server `fx`, tool `tiny_image`");
    assert_eq!(images[0].media_type, "image/png");
}

/// A sandbox whose model sees images, with a fixture server that offers resources and
/// tool search on.
fn vision_sandbox(vision: bool) -> Sandbox {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&["--resources"])}));
    sandbox.write(
        "config.yaml",
        &format!(
            "models:\n  - name: eyes\n    model: mock-model\n    base_url: $MOCK_URL\n    \
             supports_vision: {vision}\ntool_search:\n  enabled: true\n"
        ),
    );
    sandbox
}

#[test]
fn a_deferred_resource_read_reaches_the_model_with_its_image() {
    for vision in [true, false] {
        let sandbox = vision_sandbox(vision);
        let mock = MockOpenAi::start(vec![
            Reply::tool_calls(&[(
                "c1",
                "tool_search",
                json!({"query": "select:read_mcp_resource"}),
            )]),
            Reply::tool_calls(&[(
                "c2",
                "read_mcp_resource",
                json!({"server": "fx", "uri": "fixture://images/dot.png"}),
            )]),
            Reply::text("A dot."),
        ]);
        let out = sandbox
            .antler()
            .env("MOCK_URL", mock.base_url())
            .args(["-p", "what is the dot?"])
            .output()
            .unwrap();
        assert_success(&out);
        let requests = mock.requests();
        let system = requests[0].system_prompt();
        assert!(
            system.contains("list_mcp_resources") && system.contains("read_mcp_resource"),
            "deferred, so listed: {system}"
        );
        assert!(
            !requests[0]
                .tool_names()
                .contains(&"read_mcp_resource".to_string())
        );
        let messages = requests[2].messages();
        let result = messages.iter().find(|m| m["tool_call_id"] == "c2").unwrap();
        assert!(
            result["content"]
                .as_str()
                .unwrap()
                .contains("attached as an image"),
            "{result}"
        );
        let last = messages.last().unwrap();
        if vision {
            assert_eq!(last["role"], "user");
            let url = last["content"][1]["image_url"]["url"].as_str().unwrap();
            assert!(
                url.starts_with("data:image/png;base64,iVBORw0KGgo"),
                "{url}"
            );
        } else {
            assert_eq!(last["role"], "tool", "no image for a model that cannot see");
        }
    }
}

#[test]
fn mcp_prompt_runs_a_server_prompt_with_its_arguments_in_p() {
    let sandbox = Sandbox::new();
    let mut fx = fixture_stdio(&["--prompts"]);
    fx["env"] = json!({"FIXTURE_API_TOKEN": "tok-9f8e7d6c5b4a"});
    write_extensions(&sandbox, json!({"fx": fx}));
    let mock = MockOpenAi::start(vec![Reply::text("Hello, Ada!"), Reply::text("ok")]);
    let out = agent(&sandbox, &mock)
        .args([
            "--mcp-prompt",
            "fx:greet",
            "--arg",
            "name=Ada",
            "-p",
            "Also wave.",
        ])
        .output()
        .unwrap();
    assert_success(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Hello, Ada!\n");
    assert_eq!(
        mock.requests()[0].messages().last().unwrap()["content"],
        "Greet Ada plainly.\n\nKeep it to one line.\n\nAlso wave."
    );
    for (args, expected) in [
        (
            vec!["--mcp-prompt", "fx:greet"],
            "error: --mcp-prompt: the prompt `fx:greet` needs `name`",
        ),
        (
            vec!["--mcp-prompt", "fx:greet", "--arg", "who=x"],
            "has no argument `who` (there are: name, style)",
        ),
        (
            vec!["--mcp-prompt", "fx:nope"],
            "MCP server `fx` has no prompt `nope` (there are: greet)",
        ),
        (vec!["--mcp-prompt", "greet"], "expected SERVER:PROMPT"),
        (
            vec![
                "--mcp-prompt",
                "fx:greet",
                "--arg",
                "name=a",
                "--arg",
                "name=b",
            ],
            "`name` is given twice",
        ),
    ] {
        let out = agent(&sandbox, &mock).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    assert_eq!(mock.requests().len(), 1, "no bad prompt reached the model");
    // What a server's prompt says is redacted as a tool result is.
    let out = agent(&sandbox, &mock)
        .args(["--mcp-prompt", "fx:greet", "--arg", "name=tok-9f8e7d6c5b4a"])
        .output()
        .unwrap();
    assert_success(&out);
    let sent = mock.requests()[1].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        !sent.contains("tok-9f8e7d6c5b4a") && sent.starts_with("Greet "),
        "{sent}"
    );
}

/// A server's prompt of 10 MB is cut as piped input is, not sent whole to the model.
#[test]
fn a_huge_server_prompt_is_capped_before_it_becomes_the_turn() {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&["--prompts"])}));
    let mock = MockOpenAi::start(vec![Reply::text("ok"), Reply::text("ok")]);
    let small = agent(&sandbox, &mock)
        .args([
            "--mcp-prompt",
            "fx:greet",
            "--arg",
            "name=Ada",
            "--arg",
            "style=pad:10",
        ])
        .output()
        .unwrap();
    assert_success(&small);
    let out = agent(&sandbox, &mock)
        .args(["--mcp-prompt", "fx:greet", "--arg", "name=Ada"])
        .args(["--arg", "style=pad:10000000"])
        .output()
        .unwrap();
    assert_success(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`fx:greet` was cut at 512 KiB"), "{stderr}");
    let requests = mock.requests();
    let turn = |n: usize| {
        requests[n].messages().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(turn(0), "Greet Ada xxxxxxxxxx.\n\nKeep it to one line.");
    assert!(
        requests[1].raw.len() < 600 * 1024,
        "{}",
        requests[1].raw.len()
    );
    assert!(turn(1).ends_with("[cut at 524288 bytes]"));
}

#[test]
fn p_declines_an_elicitation_and_says_so() {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&["--elicitation"])}));
    sandbox.write("config.yaml", "tool_search:\n  enabled: false\n");
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "fx_ask_user", json!({}))]),
        Reply::text("It was declined."),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "ask me", "--output-format", "stream-json"])
        .output()
        .unwrap();
    assert_success(&out);
    let events = events(&out.stdout);
    let answered = events
        .iter()
        .find(|e| e["type"] == "elicitation_answered")
        .expect("an elicitation_answered event");
    assert_eq!(answered["action"], "decline");
    assert_eq!(answered["automatic"], true);
    assert_eq!(answered["server"], "fx");
    assert_eq!(answered["message"], "Who are you?");
    assert!(events.iter().all(|e| e["type"] != "elicitation_requested"));
    let result = mock.requests()[1].tool_result("c1");
    assert_eq!(result, "declined");
}

/// `--elicitation accept-defaults` takes a form whose required fields all have defaults,
/// with exactly those defaults, typed; a form with a required field and no default is
/// still declined.
#[test]
fn p_accepts_a_forms_defaults_only_when_asked_and_only_when_complete() {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&["--elicitation"])}));
    sandbox.write("config.yaml", "tool_search:\n  enabled: false\n");
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "fx_confirm_settings", json!({}))]),
        Reply::tool_calls(&[("c2", "fx_ask_user", json!({}))]),
        Reply::text("done"),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "go", "--output-format", "stream-json"])
        .args(["--elicitation", "accept-defaults"])
        .output()
        .unwrap();
    assert_success(&out);
    let answers: Vec<_> = events(&out.stdout)
        .into_iter()
        .filter(|e| e["type"] == "elicitation_answered")
        .collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(answers.iter().all(|a| a["automatic"] == true));
    let result = |id| mock.requests()[2].tool_result(id);
    let accepted = result("c1");
    let values: serde_json::Value =
        serde_json::from_str(accepted.strip_prefix("accepted: ").unwrap()).unwrap();
    assert_eq!(
        values,
        json!({"name": "Ada", "colour": "green", "subscribe": false}),
        "the defaults, typed; the field without one is left out"
    );
    assert_eq!(
        result("c2"),
        "declined",
        "a required field without a default"
    );
}

#[tokio::test]
async fn prompts_are_listed_again_after_prompts_list_changed() {
    let manager = start(json!({"fx": fixture_stdio(&["--prompts"])})).await;
    let names = |prompts: Vec<antler::protocol::PromptInfo>| {
        prompts.into_iter().map(|p| p.command()).collect::<Vec<_>>()
    };
    assert_eq!(names(manager.prompts().await), ["fx:greet"]);
    let out = call(&manager, "fx_change_prompts", json!({})).await;
    assert_eq!(out.content, "changed");
    assert_eq!(
        names(manager.prompts().await),
        ["fx:greet", "fx:farewell"],
        "the notification marks the list stale; the next look lists again"
    );
}

/// A server that announces resources but lists none (as mcp-server-time does) adds no
/// resource tools: neither connected nor idle on its manifest, which keeps the count. One
/// that lists some adds them, from its manifest too.
#[test]
fn a_server_that_lists_no_resources_adds_no_resource_tools() {
    let names = |sandbox: &Sandbox| {
        let (tools, code, stderr) = sandbox.json(&["tools", "list", "--json"]);
        assert_eq!(code, 0, "{stderr}");
        names_of(&tools)
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<String>>()
    };
    for (flag, offered) in [("--empty-resources", false), ("--resources", true)] {
        let sandbox = Sandbox::new();
        write_extensions(&sandbox, json!({"fx": fixture_stdio(&[flag])}));
        // The first listing starts the server and writes its manifest; the second is idle.
        for listing in ["connected", "idle"] {
            let names = names(&sandbox);
            assert!(names.iter().any(|n| n == "fx_echo"), "{names:?}");
            for tool in ["list_mcp_resources", "read_mcp_resource"] {
                assert_eq!(
                    names.iter().any(|n| n == tool),
                    offered,
                    "{flag}, {listing}: {names:?}"
                );
            }
        }
        let manifests = sandbox.path().join("xdg-data/antler/mcp-manifests");
        let manifest = std::fs::read_dir(&manifests)
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(manifest.path()).unwrap()).unwrap();
        let count = manifest["resources"].as_u64().unwrap();
        assert_eq!(count > 0, offered, "{flag}: {count}");
    }
}

/// A server that never answers its resource listing still connects within its start-up
/// time, with its tools: the count has a share of that time of its own, and an unknown
/// count keeps the resource tools the server announced.
#[test]
fn a_server_silent_on_resources_keeps_its_tools() {
    let sandbox = Sandbox::new();
    let mut entry = fixture_stdio(&["--hang-resources"]);
    entry["startup_timeout_secs"] = json!(2);
    write_extensions(&sandbox, json!({"fx": entry}));
    let (list, code, stderr) = sandbox.json(&["mcp", "list", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(status_of(&list, "fx")["status"], "connected", "{list}");
    let (tools, _, _) = sandbox.json(&["tools", "list", "--json"]);
    let names = names_of(&tools);
    assert!(names.contains(&"fx_echo"), "{names:?}");
    assert!(names.contains(&"list_mcp_resources"), "{names:?}");
}

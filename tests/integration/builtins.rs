//! Built-in tools and the output budget through the real binary against the mock model.

use serde_json::{Value, json};

use crate::mock_openai::{MockOpenAi, Reply};
use crate::support::*;

fn json_result(out: &std::process::Output) -> Value {
    assert_success(out);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn present_files_lists_the_output_and_one_shot_never_offers_clarification() {
    let sandbox = Sandbox::new();
    sandbox.write("report.md", "# Report\n");
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("p", "present_files", json!({"filepaths": ["report.md"]}))]),
        Reply::text("Done."),
        Reply::tool_calls(&[("p", "present_files", json!({"filepaths": ["report.md"]}))]),
        Reply::text("Done again."),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "write a report", "--output-format", "json"])
        .output()
        .unwrap();
    let result = json_result(&out);
    assert_eq!(result["files"], json!(["report.md"]));
    let tools = mock.requests()[0].tool_names();
    assert!(tools.contains(&"present_files".to_string()), "{tools:?}");
    assert!(
        !tools.contains(&"task".to_string()),
        "subagents are opt-in: {tools:?}"
    );
    assert!(
        !tools.contains(&"ask_clarification".to_string()),
        "{tools:?}"
    );
    assert!(
        !tools.contains(&"view_image".to_string()),
        "not a vision model: {tools:?}"
    );

    agent(&sandbox, &mock)
        .args(["-p", "again"])
        .assert()
        .success()
        .stdout("Done again.\n")
        .stderr(predicates::str::contains("Files:\n  report.md"));
}

#[test]
fn view_image_is_offered_to_vision_models_and_attaches_the_image() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path().join("pic.png"), b"\x89PNG\r\n\x1a\n0000").unwrap();
    sandbox.write(
        "config.yaml",
        "models:\n  - name: eyes\n    model: mock-model\n    base_url: $MOCK_URL\n    supports_vision: true\n",
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("v", "view_image", json!({"image_path": "pic.png"}))]),
        Reply::text("A tiny PNG."),
    ]);
    sandbox
        .antler()
        .env("MOCK_URL", mock.base_url())
        .args(["-p", "what is in pic.png?"])
        .assert()
        .success()
        .stdout("A tiny PNG.\n");
    let requests = mock.requests();
    assert!(requests[0].tool_names().contains(&"view_image".to_string()));
    let last = requests[1].messages().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    let url = last["content"][1]["image_url"]["url"].as_str().unwrap();
    assert!(
        url.starts_with("data:image/png;base64,iVBORw0KGgo"),
        "{url}"
    );
}

#[test]
fn a_task_runs_a_subagent_whose_events_are_nested_and_whose_answer_returns() {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    sandbox.write(
        "config.yaml",
        "tool_search:\n  enabled: true\nsubagents:\n  enabled: true\n  max_total_per_run: 1\n",
    );
    fn task(id: &'static str) -> (&'static str, &'static str, Value) {
        (
            id,
            "task",
            json!({"description": "add", "prompt": "add 2 and 3"}),
        )
    }
    let mock = MockOpenAi::start(vec![
        // The parent delegates twice in one step; the run allows one subagent.
        Reply::tool_calls(&[task("t1"), task("t2")]),
        Reply::tool_calls(&[("s", "tool_search", json!({"query": "select:fx_add"}))]),
        Reply::tool_calls(&[("a", "fx_add", json!({"a": 2, "b": 3}))]),
        Reply::text("5"),
        Reply::text("The sum is 5."),
    ]);
    let out = agent(&sandbox, &mock)
        .args([
            "-p",
            "add 2 and 3 with a subagent",
            "--output-format",
            "stream-json",
        ])
        .output()
        .unwrap();
    assert_success(&out);
    let events = events(&out.stdout);
    let requests = mock.requests();
    assert!(
        requests[1]
            .system_prompt()
            .starts_with("You are a subagent")
    );
    assert!(!requests[1].tool_names().contains(&"task".to_string()));
    assert_eq!(requests[2].tool_names().last().unwrap(), "fx_add");
    let parent = &requests[4];
    assert!(
        !parent.tool_names().contains(&"fx_add".to_string()),
        "no leak"
    );
    let results: Vec<&Value> = parent
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(results[0]["content"], "5");
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("max_total_per_run"),
        "{}",
        results[1]
    );
    let nested: Vec<&Value> = events.iter().filter(|e| e["type"] == "subagent").collect();
    assert!(
        nested
            .iter()
            .any(|e| e["event"]["type"] == "tool_call_finished"
                && e["event"]["name"] == "fx_add"
                && e["event"]["content"] == "5")
    );
    assert!(nested.iter().all(|e| e["description"] == "add"));
    assert_eq!(events.last().unwrap()["result"], "The sum is 5.");
}

#[test]
fn a_long_tool_result_is_cut_and_saved_for_the_model_to_read() {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    sandbox.write("config.yaml", "tool_output:\n  max_chars: 100\n");
    let long = format!("{}{}", "a".repeat(150), "z".repeat(150));
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("e", "fx_echo", json!({"text": long}))]),
        Reply::text("ok"),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "echo", "--output-format", "json"])
        .output()
        .unwrap();
    let result = json_result(&out);
    let seen = mock.requests()[1].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        seen.starts_with(&"a".repeat(75)) && seen.ends_with(&"z".repeat(25)),
        "{seen}"
    );
    assert!(seen.contains("200 characters omitted"), "{seen}");
    let path = sandbox
        .path()
        .join("xdg-data/antler/outputs")
        .join(result["thread_id"].as_str().unwrap())
        .join("fx_echo-e.txt");
    assert!(seen.contains(&path.display().to_string()), "{seen}");
    assert_eq!(std::fs::read_to_string(path).unwrap(), long);
}

#[test]
fn a_script_written_and_run_in_one_reply_runs_after_it_is_written() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "config.yaml",
        "sandbox:\n  allow_host_bash: true\ntools:\n  - {name: write_file, use: antler.sandbox:write_file}\n  - {name: bash, use: antler.sandbox:bash}\n",
    );
    // Both calls in one reply: `bash` may not start before `write_file` has finished.
    let script = format!(
        "#!/bin/sh\necho written-then-run\n{}",
        "# padding\n".repeat(2000)
    );
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[
            (
                "w",
                "write_file",
                json!({"path": "job.sh", "content": script}),
            ),
            ("b", "bash", json!({"command": "sh job.sh"})),
        ]),
        Reply::text("done"),
    ]);
    agent(&sandbox, &mock)
        .args(["-p", "write and run"])
        .assert()
        .success();
    let results: Vec<String> = mock.requests()[1]
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert!(results[1].contains("written-then-run"), "{}", results[1]);
}

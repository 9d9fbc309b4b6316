//! The context ledger through the real binary: `run_finished.ledger` against the tokens of
//! what the mock server received, and the thread's ledger in `threads show --ledger`.

use serde_json::json;

use crate::mock_openai::{MockOpenAi, Recorded, Reply};
use crate::stable_binding::{call_tool, sandbox};
use crate::support::*;

/// Tokens as a run's ledger counts them: estimated, no tokenizer loaded.
fn tokens(text: &str) -> u64 {
    antler::deferred::estimate_tokens(text) as u64
}

/// What the ledger should say a request was sent: system, tools, history, results.
fn sent(request: &Recorded) -> [u64; 4] {
    let mut parts = [tokens(&request.system_prompt()), 0, 0, 0];
    parts[1] = tokens(&request.body["tools"].to_string());
    for message in &request.messages()[1..] {
        let content = message["content"].as_str().unwrap_or_default();
        if message["role"] == "tool" {
            parts[3] += tokens(content);
            continue;
        }
        parts[2] += tokens(content);
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            parts[2] += tokens(call["function"]["name"].as_str().unwrap());
            parts[2] += tokens(call["function"]["arguments"].as_str().unwrap());
        }
    }
    parts
}

#[test]
fn the_ledger_matches_what_was_sent() {
    for binding in ["native", "stable"] {
        let sandbox = sandbox(binding);
        let echo = if binding == "stable" {
            call_tool("c2", "fx_echo", json!({"text": "hello"}))
        } else {
            Reply::tool_calls(&[("c2", "fx_echo", json!({"text": "hello"}))])
        };
        let mock = MockOpenAi::start(vec![
            Reply::tool_calls(&[("c1", "tool_search", json!({"query": "select:fx_echo"}))]),
            echo,
            Reply::text("done"),
        ]);
        let out = agent(&sandbox, &mock)
            .args(["-p", "go", "--output-format", "stream-json"])
            .output()
            .unwrap();
        assert_success(&out);
        let events = events(&out.stdout);
        let ledger = &events.last().unwrap()["ledger"];
        assert_eq!(ledger["counted"], "estimate", "{ledger}");
        let calls = ledger["calls"].as_array().unwrap();
        let requests = mock.requests();
        assert_eq!(calls.len(), requests.len());
        for (call, request) in calls.iter().zip(&requests) {
            let got: Vec<u64> = ["system", "tools", "history", "results"]
                .iter()
                .map(|k| call[k].as_u64().unwrap())
                .collect();
            assert_eq!(got, sent(request), "{binding}: {call}");
        }
        let totals = &ledger["totals"];
        assert_eq!(totals["calls"], 3);
        let results: u64 = calls.iter().map(|c| c["results"].as_u64().unwrap()).sum();
        assert_eq!(totals["results"], results);
        // The echo tool: listed by name, promoted once, called once with a 1-token result.
        let tools = ledger["tools"].as_array().unwrap();
        let echo = tools.iter().find(|t| t["name"] == "fx_echo").unwrap();
        assert_eq!(echo["server"], "fx");
        assert_eq!(
            (&echo["listed"], &echo["promoted"], &echo["calls"]),
            (&json!(true), &json!(1), &json!(1))
        );
        assert_eq!(echo["listed_tokens"], tokens("fx_echo"));
        assert_eq!(echo["result_tokens"], tokens("hello"));
        let search = tools.iter().find(|t| t["name"] == "tool_search").unwrap();
        assert_eq!(
            (&search["calls"], &search["listed"]),
            (&json!(1), &json!(false))
        );
        let server = &ledger["servers"][0];
        assert_eq!(
            (&server["name"], &server["promoted"], &server["calls"]),
            (&json!("fx"), &json!(1), &json!(1))
        );
        assert_eq!(server["schema_tokens"], echo["schema_tokens"]);
        assert!(server["listed_tokens"].as_u64().unwrap() > 0);
    }
}

#[test]
fn the_threads_ledger_adds_up_its_runs_and_shows_the_biggest_first() {
    let sandbox = sandbox("native");
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "tool_search", json!({"query": "select:fx_echo"}))]),
        Reply::tool_calls(&[("c2", "fx_echo", json!({"text": "hello"}))]),
        Reply::text("first"),
        Reply::tool_calls(&[("c3", "fx_echo", json!({"text": "again and again"}))]),
        Reply::text("second"),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-p", "go", "--output-format", "json"])
        .output()
        .unwrap();
    assert_success(&out);
    let first: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let thread = first["thread_id"].as_str().unwrap().to_string();
    // Text output: the listing loaded the tokenizer, so this run is counted too.
    agent(&sandbox, &mock)
        .args(["--continue", "-p", "more"])
        .assert()
        .success();
    let (ledger, code, _) = sandbox.json(&["threads", "show", &thread, "--ledger", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(ledger["runs"], 2);
    assert!(ledger.get("runs_without_ledger").is_none(), "{ledger}");
    assert_eq!(ledger["totals"]["calls"], 5);
    assert!(ledger.get("calls").is_none(), "a thread keeps totals only");
    let run_calls: u64 = first["ledger"]["totals"]["results"].as_u64().unwrap();
    assert!(ledger["totals"]["results"].as_u64().unwrap() > run_calls);
    let echo = ledger["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "fx_echo")
        .unwrap()
        .clone();
    assert_eq!((&echo["calls"], &echo["promoted"]), (&json!(2), &json!(1)));
    assert_eq!(
        echo["result_tokens"],
        tokens("hello") + tokens("again and again")
    );

    let table = sandbox
        .antler()
        .args(["threads", "show", &thread, "--ledger"])
        .output()
        .unwrap();
    assert!(table.status.success());
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains("This thread: 2 runs, 5 model calls"),
        "{text}"
    );
    let (echo_row, search_row) = (
        text.find("fx_echo").unwrap(),
        text.find("tool_search").unwrap(),
    );
    assert!(echo_row < search_row, "fx_echo brought in more: {text}");
}

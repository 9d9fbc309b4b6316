//! `antler tools search`, `tools stats` and the deferred column of `tools list`.

use predicates::prelude::*;
use serde_json::{Value, json};

use crate::support::*;

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/support/catalog-sample.json"
);

#[test]
fn search_over_a_catalog_file_prints_ranked_json() {
    let sb = Sandbox::new();
    let (report, code, _) = sb.json(&[
        "tools",
        "search",
        "--catalog",
        SAMPLE,
        "--json",
        "list all components",
    ]);
    assert_eq!(code, 0);
    assert_eq!(report["query"], "list all components");
    let results = report["results"].as_array().unwrap();
    assert!(!results.is_empty() && results.len() <= 5);
    assert_eq!(results[0]["name"], "Ant_Design_Components_list-components");
    assert!(results[0]["score"].as_f64().unwrap() > 0.0);
    assert!(results[0]["description"].is_string());
    let scores: Vec<f64> = results
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "rank order: {scores:?}"
    );

    let (report, _, _) = sb.json(&[
        "tools",
        "search",
        "--catalog",
        SAMPLE,
        "--json",
        "--limit",
        "1",
        "火车票",
    ]);
    assert_eq!(report["results"].as_array().unwrap().len(), 1);
    assert!(
        report["results"][0]["name"]
            .as_str()
            .unwrap()
            .starts_with("12306-mcp_")
    );

    let (report, _, _) = sb.json(&[
        "tools",
        "search",
        "--catalog",
        SAMPLE,
        "--json",
        "select:time_convert_time,time_get_current_time",
    ]);
    let names = names_of(&report["results"]);
    assert_eq!(
        names,
        ["time_get_current_time", "time_convert_time"],
        "catalog order"
    );
    assert_eq!(report["results"][0]["score"], Value::Null);
}

#[test]
fn queries_file_gives_one_json_line_per_query_in_order() {
    let sb = Sandbox::new();
    sb.write(
        "q.jsonl",
        "{\"id\": 1, \"query\": \"current time\"}\n\n{\"query\": \"nothing matches zzqx\"}\n",
    );
    let out = sb
        .antler()
        .args([
            "tools",
            "search",
            "--catalog",
            SAMPLE,
            "--queries",
            "q.jsonl",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["query"], "current time");
    assert_eq!(lines[0]["results"][0]["name"], "time_get_current_time");
    assert_eq!(lines[1]["results"], json!([]));

    sb.write("bad.jsonl", "{\"query\": \"ok\"}\n{\"q\": 1}\n");
    sb.antler()
        .args([
            "tools",
            "search",
            "--catalog",
            SAMPLE,
            "--queries",
            "bad.jsonl",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "bad.jsonl: line 2: expected an object with a string \"query\"",
        ));
}

#[test]
fn search_and_stats_over_the_configured_mcp_tools() {
    let sb = Sandbox::new();
    write_extensions(&sb, json!({"fx": fixture_stdio(&[])}));
    let (report, code, _) = sb.json(&["tools", "search", "--json", "add two numbers"]);
    assert_eq!(code, 0);
    assert_eq!(report["results"][0]["name"], "fx_add");
    let (stats, code, _) = sb.json(&["tools", "stats", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(stats["tools"], 9);
    let full = stats["full_tokens"].as_u64().unwrap();
    let deferred = stats["deferred_tokens"].as_u64().unwrap();
    assert!(full > 0 && deferred > 0);
    let reduction = stats["reduction_percent"].as_f64().unwrap();
    assert!((reduction - 100.0 * (1.0 - deferred as f64 / full as f64)).abs() < 1e-9);
    // The estimate a run decides by is reported beside the exact count, and is close.
    for (exact, estimate) in [(full, "full_estimate"), (deferred, "deferred_estimate")] {
        let estimate = stats[estimate].as_u64().unwrap() as f64;
        let error = (estimate - exact as f64).abs() / exact as f64;
        assert!(error < 0.25, "{estimate} for {exact}: {stats}");
    }
}

#[test]
fn stats_of_the_sample_catalog_and_a_bad_catalog() {
    let sb = Sandbox::new();
    sb.antler()
        .args(["tools", "stats", "--catalog", SAMPLE])
        .assert()
        .success()
        .stdout(predicate::str::contains("reduction"));
    sb.write("broken.json", "{\"s\": [{\"description\": 1}]}");
    sb.antler()
        .args(["tools", "stats", "--catalog", "broken.json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("broken.json:1:"));
}

#[test]
fn tools_list_shows_what_is_deferred() {
    let sb = Sandbox::new();
    sb.write(
        "config.yaml",
        "tools: [{name: ls, use: antler.sandbox:ls}]\ntool_search:\n  enabled: true\n",
    );
    write_extensions(&sb, json!({"fx": fixture_stdio(&[])}));
    let (tools, code, _) = sb.json(&["tools", "list", "--json"]);
    assert_eq!(code, 0);
    let rows = tools.as_array().unwrap();
    let deferred: Vec<&str> = rows
        .iter()
        .filter(|r| r["deferred"] == true)
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(deferred.len(), 9);
    assert!(deferred.iter().all(|n| n.starts_with("fx_")));
    let ls = rows.iter().find(|r| r["name"] == "ls").unwrap();
    assert_eq!(ls["deferred"], false);
    let search = rows.iter().find(|r| r["name"] == "tool_search").unwrap();
    assert_eq!(
        (search["tier"].as_str(), &search["deferred"]),
        (Some("built-in"), &json!(false))
    );

    let table = sb.antler().args(["tools", "list"]).output().unwrap();
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains("DEFERRED") && text.contains("12 tools, 9 deferred"),
        "{text}"
    );
}

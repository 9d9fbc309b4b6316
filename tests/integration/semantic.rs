//! The sentence encoder end to end: `models fetch --from` installs the model where tool
//! search looks, `doctor` reports it, and `tools search` ranks with it (tool vectors cached
//! in the data folder).

use serde_json::Value;

use crate::support::{Sandbox, interop_dir};

/// A catalog none of whose words the query uses.
const CATALOG: &str = r#"{
  "notes": [{"name": "create_note", "description": "Write a new note."}],
  "weather": [{"name": "get_forecast", "description": "Weather forecast for a city.",
               "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
  "shop": [{"name": "list_orders", "description": "The customer's past orders."}]
}"#;

const QUERY: &str = "will it rain in Paris tomorrow";

/// `tools search` for [`QUERY`] over [`CATALOG`], with `--json`.
const SEARCH: [&str; 6] = [
    "tools",
    "search",
    "--catalog",
    "catalog.json",
    "--json",
    QUERY,
];

fn first_result(sb: &Sandbox) -> Option<String> {
    sb.write("catalog.json", CATALOG);
    let (report, code, _) = sb.json(&SEARCH);
    assert_eq!(code, 0, "{report}");
    report["results"][0]["name"].as_str().map(String::from)
}

fn encoder_check(sb: &Sandbox) -> Value {
    let (report, _, _) = sb.json(&["doctor", "--json"]);
    encoder_check_of(&report)
}

/// The sentence encoder's line of a `doctor --json` report.
fn encoder_check_of(report: &Value) -> Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "sentence encoder")
        .cloned()
        .unwrap()
}

#[test]
fn fetched_model_is_reported_and_ranks_the_search() {
    let sb = Sandbox::new();
    let check = encoder_check(&sb);
    assert_eq!(check["status"], "warn", "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap()
            .contains("antler models fetch"),
        "{check}"
    );
    assert_eq!(
        first_result(&sb),
        None,
        "no shared word: nothing without the encoder"
    );

    let from = interop_dir().join("models/all-MiniLM-L6-v2");
    let out = sb
        .antler()
        .args(["models", "fetch", "--from"])
        .arg(&from)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let installed = sb.path().join("xdg-cache/antler/models/all-MiniLM-L6-v2");
    assert!(
        stdout.contains(&installed.display().to_string()),
        "{stdout}"
    );
    assert!(installed.join("model.safetensors").is_file());

    let check = encoder_check(&sb);
    assert_eq!(check["status"], "ok", "{check}");
    assert!(
        check["detail"].as_str().unwrap().contains("384 dimensions"),
        "{check}"
    );

    assert_eq!(first_result(&sb).as_deref(), Some("weather_get_forecast"));
    let cache = sb.path().join("xdg-data/antler/embeddings.sqlite");
    assert!(cache.is_file(), "tool vectors are cached");
    // Cached: the same answer again, from the saved vectors.
    assert_eq!(first_result(&sb).as_deref(), Some("weather_get_forecast"));
}

#[test]
fn a_copy_that_is_not_the_pinned_model_installs_nothing() {
    let sb = Sandbox::new();
    let copy = sb.path().join("copy");
    std::fs::create_dir_all(copy.join("1_Pooling")).unwrap();
    let from = interop_dir().join("models/all-MiniLM-L6-v2");
    for file in [
        "config.json",
        "vocab.txt",
        "model.safetensors",
        "sentence_bert_config.json",
        "modules.json",
        "1_Pooling/config.json",
    ] {
        std::fs::copy(from.join(file), copy.join(file)).unwrap();
    }
    std::fs::write(copy.join("config.json"), r#"{"hidden_size": 1}"#).unwrap();
    let out = sb
        .antler()
        .args(["models", "fetch", "--from", "copy"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("config.json") && stderr.contains("not the pinned"),
        "{stderr}"
    );
    assert!(
        !sb.path()
            .join("xdg-cache/antler/models")
            .join("all-MiniLM-L6-v2")
            .exists()
    );
}

#[test]
fn the_model_setting_is_followed_and_can_be_turned_off() {
    let sb = Sandbox::new();
    sb.write(
        "config.yaml",
        "tool_search:\n  semantic:\n    model: nowhere/model\n",
    );
    let check = encoder_check(&sb);
    assert_eq!(check["status"], "warn", "{check}");
    let detail = check["detail"].as_str().unwrap();
    assert!(detail.contains("nowhere/model/config.json"), "{check}");

    sb.write(
        "config.yaml",
        "tool_search:\n  semantic:\n    enabled: false\n",
    );
    assert_eq!(encoder_check(&sb)["status"], "skip");
    let out = sb
        .antler()
        .args(["models", "fetch", "--from", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("turned off"));
}

#[test]
fn a_model_in_the_models_folder_is_used_without_fetching() {
    let sb = Sandbox::new();
    sb.write("catalog.json", CATALOG);
    // The two encoders only: the interop folder's chat model would make doctor load it.
    let models = sb.path().join("models");
    std::fs::create_dir(&models).unwrap();
    for name in ["all-MiniLM-L6-v2", "multilingual-e5-small"] {
        std::os::unix::fs::symlink(interop_dir().join("models").join(name), models.join(name))
            .unwrap();
    }
    // doctor exits 1 on the sandbox's other warnings; its report is what counts here.
    let run = |args: &[&str]| {
        let out = sb
            .antler()
            .env("ANTLER_MODELS_DIR", &models)
            .args(args)
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let report = run(&["doctor", "--json"]);
    let check = encoder_check_of(&report);
    assert_eq!(check["status"], "ok", "{check}");
    assert_eq!(run(&SEARCH)["results"][0]["name"], "weather_get_forecast");
    // The multilingual encoder installed beside it ranks a Chinese query for English tools
    // ("will it rain in Paris tomorrow"), which the English one cannot read.
    let multilingual = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "multilingual encoder")
        .unwrap();
    assert_eq!(multilingual["status"], "ok", "{multilingual}");
    let mut chinese = SEARCH;
    chinese[5] = "明天巴黎会下雨吗";
    assert_eq!(run(&chinese)["results"][0]["name"], "weather_get_forecast");
    assert!(
        !sb.path().join("xdg-cache/antler/models").exists(),
        "nothing was installed"
    );
}

#[test]
fn the_multilingual_model_is_fetched_from_a_copy_and_checked() {
    let sb = Sandbox::new();
    let e5 = interop_dir().join("models/multilingual-e5-small");
    let models = sb.path().join("models");
    let fetch = |from: &std::path::Path| {
        sb.antler()
            .env("ANTLER_MODELS_DIR", &models)
            .args(["models", "fetch", "multilingual-e5-small", "--from"])
            .arg(from)
            .output()
            .unwrap()
    };
    // A copy whose tokenizer is not the pinned one installs nothing.
    let tampered = sb.path().join("tampered");
    std::fs::create_dir(&tampered).unwrap();
    std::os::unix::fs::symlink(e5.join("e5-small-q4.bin"), tampered.join("e5-small-q4.bin"))
        .unwrap();
    let mut tokenizer = std::fs::read(e5.join("tokenizer.json")).unwrap();
    tokenizer[100] ^= 1;
    std::fs::write(tampered.join("tokenizer.json"), tokenizer).unwrap();
    let out = fetch(&tampered);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tokenizer.json")
            && stderr.contains("not the pinned multilingual-e5-small"),
        "{stderr}"
    );
    assert!(!models.join("multilingual-e5-small").exists());

    let out = fetch(&e5);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let installed = models.join("multilingual-e5-small");
    for file in ["e5-small-q4.bin", "tokenizer.json"] {
        let meta = std::fs::symlink_metadata(installed.join(file)).unwrap();
        assert!(meta.file_type().is_file(), "{file} is a copy, not a link");
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains("installed multilingual-e5-small"));
}

#[test]
fn the_dictionary_is_fetched_checked_and_glosses_a_chinese_query() {
    let sb = Sandbox::new();
    sb.write("catalog.json", CATALOG);
    let cedict = interop_dir().join("models/cc-cedict");
    let file = "cedict_1_0_ts_utf-8_mdbg.txt.gz";
    // The English encoder only: it cannot read Chinese, so the gloss is what finds the tool.
    let models = sb.path().join("models");
    std::fs::create_dir(&models).unwrap();
    std::os::unix::fs::symlink(
        interop_dir().join("models/all-MiniLM-L6-v2"),
        models.join("all-MiniLM-L6-v2"),
    )
    .unwrap();
    let antler = || {
        let mut command = sb.antler();
        command.env("ANTLER_MODELS_DIR", &models);
        command
    };
    let mut chinese = SEARCH;
    chinese[5] = "巴黎的天气预报";
    let search = || {
        let out = antler().args(chinese).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let before = search();
    assert_ne!(
        before["results"][0]["name"], "weather_get_forecast",
        "{before}"
    );

    // A copy that is not the pinned file installs nothing.
    let tampered = sb.path().join("tampered");
    std::fs::create_dir(&tampered).unwrap();
    let mut bytes = std::fs::read(cedict.join(file)).unwrap();
    bytes[1000] ^= 1;
    std::fs::write(tampered.join(file), bytes).unwrap();
    let fetch = |from: &std::path::Path| {
        antler()
            .args(["models", "fetch", "cc-cedict", "--from"])
            .arg(from)
            .output()
            .unwrap()
    };
    let out = fetch(&tampered);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not the pinned cc-cedict"), "{stderr}");
    assert!(!models.join("cc-cedict").exists());

    let out = fetch(&cedict);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("installed cc-cedict"));
    assert_eq!(search()["results"][0]["name"], "weather_get_forecast");
    let out = antler().args(["doctor", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "dictionary")
        .cloned()
        .unwrap();
    assert_eq!(check["status"], "ok", "{check}");
    assert!(
        check["detail"].as_str().unwrap().contains("headwords"),
        "{check}"
    );
}

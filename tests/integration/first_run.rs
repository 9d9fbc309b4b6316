//! The first run of a new user: config.example.yaml copied to the user's config folder,
//! no `OPENAI_API_KEY` set. Only the model in use needs its variables.

use crate::mock_openai::{MockOpenAi, Reply};
use crate::support::*;

/// A sandbox whose user config is the example config, its `local` model pointed at `mock`.
fn copied_example(mock: &MockOpenAi) -> Sandbox {
    let sandbox = Sandbox::new();
    let example =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config.example.yaml"))
            .unwrap();
    assert!(example.contains("http://localhost:11434/v1"));
    let config = example.replace("http://localhost:11434/v1", &mock.base_url());
    let folder = sandbox.path().join("xdg-config/antler");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("config.yaml"), config).unwrap();
    sandbox
}

#[test]
fn the_copied_example_works_without_the_default_models_key() {
    let mock = MockOpenAi::start(vec![Reply::text("Hello from local.")]);
    let sandbox = copied_example(&mock);
    for args in [
        &["tools", "list"][..],
        &["mcp", "list"],
        &["-m", "local", "doctor", "--offline"],
    ] {
        let out = sandbox.antler().args(args).output().unwrap();
        assert_success(&out);
    }
    sandbox
        .antler()
        .args(["-m", "local", "-p", "hi"])
        .assert()
        .success()
        .stdout("Hello from local.\n");
    assert_eq!(mock.requests()[0].body["model"], "qwen3:8b");

    let replay = sandbox.write("turns.jsonl", "{\"content\": \"replayed\"}\n");
    sandbox
        .antler()
        .args(["-p", "hi", "--replay"])
        .arg(&replay)
        .assert()
        .success()
        .stdout("replayed\n");

    // The model that needs the variable says so, with file and key, when it is used.
    let out = sandbox.antler().args(["-p", "hi"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "config.yaml: models[0].api_key: environment variable $OPENAI_API_KEY is not set"
        ),
        "{stderr}"
    );
    let out = sandbox
        .antler()
        .args(["doctor", "--offline"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("$OPENAI_API_KEY is not set"));
}

#[test]
fn the_environment_still_serves_a_model_id_that_is_not_configured() {
    let mock = MockOpenAi::start(vec![Reply::text("raw id")]);
    let sandbox = copied_example(&mock);
    sandbox
        .antler()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .args(["-m", "some-raw-model", "-p", "hi"])
        .assert()
        .success()
        .stdout("raw id\n");
    assert_eq!(mock.requests()[0].body["model"], "some-raw-model");
}

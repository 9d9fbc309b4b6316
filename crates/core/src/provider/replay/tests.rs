use std::sync::Mutex;

use super::*;

fn request() -> ModelRequest {
    ModelRequest {
        system: String::new(),
        messages: vec![],
        tools: vec![],
        max_tokens: None,
        callable: Default::default(),
    }
}

fn write(dir: &tempfile::TempDir, text: &str) -> std::path::PathBuf {
    let path = dir.path().join("turns.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

async fn play(provider: &dyn Provider) -> (Result<ModelReply, ProviderError>, Vec<ModelEvent>) {
    let events = Mutex::new(Vec::new());
    let reply = provider
        .complete(&request(), &|e| events.lock().unwrap().push(e))
        .await;
    (reply, events.into_inner().unwrap())
}

const TURNS: &str = r#"
# a comment, then a blank line

{"reasoning": "think", "content": "looking", "tool_calls": [{"name": "ls", "arguments": {"path": "."}}, {"id": "mine", "name": "cat", "arguments": "{\"f\": 1}"}, {"name": "now"}], "usage": {"input_tokens": 10, "cached_input_tokens": 4, "output_tokens": 3}}
{"content": "done", "finish_reason": "length"}
{"content": ""}
"#;

#[tokio::test]
async fn turns_play_in_order_with_generated_ids_and_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, TURNS);
    let replay = ReplayProvider::open(&path).unwrap();
    assert_eq!(replay.model(), "replay");
    assert_eq!(replay.endpoint(), path.display().to_string());

    let (reply, events) = play(&replay).await;
    let reply = reply.unwrap();
    assert_eq!(
        events,
        [
            ModelEvent::ReasoningDelta("think".into()),
            ModelEvent::TextDelta("looking".into())
        ]
    );
    let calls: Vec<_> = reply
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_1_1", "ls", r#"{"path":"."}"#),
            ("mine", "cat", r#"{"f": 1}"#),
            ("call_1_3", "now", "{}")
        ]
    );
    assert_eq!(reply.finish_reason, FinishReason::ToolCalls);
    assert_eq!(reply.usage.unwrap().cached_input_tokens, 4);

    let (reply, _) = play(&replay).await;
    let reply = reply.unwrap();
    assert_eq!(
        (reply.content.as_str(), reply.finish_reason),
        ("done", FinishReason::Length)
    );
    assert_eq!(reply.usage, None);

    let (reply, events) = play(&replay).await;
    assert_eq!(reply.unwrap().finish_reason, FinishReason::Stop);
    assert!(events.is_empty());

    let error = play(&replay).await.0.unwrap_err().to_string();
    assert!(
        error.contains("no turn left: the file holds 3 turns"),
        "{error}"
    );
}

#[test]
fn bad_lines_name_the_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (r#"{"content": 3}"#, "content: invalid type"),
        (
            r#"{"tool_calls": [{"arguments": {}}]}"#,
            "tool_calls[0]: missing field `name`",
        ),
        (
            r#"{"content": "x", "usage": {"input_tokens": "a"}}"#,
            "usage.input_tokens",
        ),
        (r#"{"contnet": "x"}"#, "unknown field `contnet`"),
        (r#"{"reasoning": "x"}"#, "needs `content` or `tool_calls`"),
        ("not json", "expected"),
    ];
    for (line, expected) in cases {
        let path = write(&dir, &format!("{{\"content\": \"ok\"}}\n\n{line}\n"));
        let error = ReplayProvider::open(&path).unwrap_err().to_string();
        let location = format!("{}:3", path.display());
        assert!(error.contains(&location), "{error}");
        assert!(error.contains(expected), "{line}: {error}");
    }
    let missing = dir.path().join("missing.jsonl");
    let error = ReplayProvider::open(&missing).unwrap_err().to_string();
    assert!(error.contains("cannot read"), "{error}");
}

/// The reply with each call's arguments in compact form when they are a JSON object (a
/// recording keeps the object, not the model's spacing).
fn compact(mut reply: ModelReply) -> ModelReply {
    for call in &mut reply.tool_calls {
        if let Ok(value @ serde_json::Value::Object(_)) = serde_json::from_str(&call.arguments) {
            call.arguments = value.to_string();
        }
    }
    reply
}

#[tokio::test]
async fn a_recording_replays_identically() {
    let dir = tempfile::tempdir().unwrap();
    let source = write(
        &dir,
        &format!(
            "{TURNS}{}\n",
            r#"{"tool_calls": [{"id": "x", "name": "f", "arguments": "not json"}, {"id": "y", "name": "g", "arguments": "[1]"}], "finish_reason": "weird"}"#
        ),
    );
    let inner: Arc<dyn Provider> = Arc::new(ReplayProvider::open(&source).unwrap());
    let recorded = dir.path().join("recorded.jsonl");
    let recorder = RecordingProvider::create(&recorded, inner).unwrap();
    assert_eq!(recorder.model(), "replay");
    let mut originals = Vec::new();
    for _ in 0..4 {
        originals.push(play(&recorder).await);
    }
    assert!(play(&recorder).await.0.is_err());
    let lines = std::fs::read_to_string(&recorded).unwrap();
    assert_eq!(lines.lines().count(), 4, "{lines}");
    assert!(
        lines.contains(r#""arguments":{"f":1}"#),
        "spaced arguments are written as an object: {lines}"
    );
    assert!(lines.contains(r#""arguments":"not json""#), "{lines}");

    let replay = ReplayProvider::open(&recorded).unwrap();
    for (reply, events) in originals {
        let (again, again_events) = play(&replay).await;
        assert_eq!(compact(again.unwrap()), compact(reply.unwrap()));
        assert_eq!(again_events, events);
    }
}

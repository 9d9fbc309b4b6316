//! The scripted OpenAI mock (`tests/support/mock_openai`) over plain HTTP: replies in
//! order, realistic streams, cut and stalled streams, an exhausted script, and recording.

use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Value, json};

use crate::mock_openai::{MockOpenAi, Reply, reply};

const WAIT: Duration = Duration::from_secs(5);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn client() -> reqwest::Client {
    antler::base::http::http_client().unwrap()
}

/// A chat-completion request body with a system prompt, a user message and two tools.
fn request_body(user: &str) -> Value {
    json!({
        "model": "mock-model",
        "stream": true,
        "messages": [
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": user},
        ],
        "tools": [
            {"type": "function", "function": {"name": "fx__echo", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "search_tools", "parameters": {"type": "object"}}},
        ],
    })
}

/// POSTs `body` to `url` and returns the status, the response headers and the whole body.
async fn post(url: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, String) {
    let response = client()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

fn completions(mock: &MockOpenAi) -> String {
    format!("{}/chat/completions", mock.base_url())
}

/// The payloads of the `data:` lines of an SSE body.
fn sse_data(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter(|event| !event.is_empty())
        .map(|event| {
            event
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data event: {event:?}"))
                .to_owned()
        })
        .collect()
}

/// Parses SSE payloads up to `[DONE]` as chat-completion chunks.
fn chunks(data: &[String]) -> Vec<Value> {
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{data:?}");
    data[..data.len() - 1]
        .iter()
        .map(|d| {
            let chunk: Value = serde_json::from_str(d).unwrap();
            assert_eq!(chunk["object"], "chat.completion.chunk", "{chunk}");
            assert!(chunk["choices"].is_array(), "{chunk}");
            chunk
        })
        .collect()
}

#[test]
fn replies_are_served_in_order_on_both_routes() {
    let mock = MockOpenAi::start(vec![
        Reply::Json(json!({"n": 1})),
        Reply::Json(json!({"n": 2})),
        Reply::Status {
            status: 429,
            body: "slow down".into(),
            retry_after: Some("7".into()),
        },
    ]);
    let base = mock.base_url();
    assert!(
        base.starts_with("http://127.0.0.1:") && base.ends_with("/v1"),
        "{base}"
    );
    let without_v1 = format!("{}/chat/completions", base.trim_end_matches("/v1"));
    runtime().block_on(async {
        let (status, _, body) = post(&completions(&mock), &request_body("a")).await;
        assert_eq!((status, body.as_str()), (200, r#"{"n":1}"#));
        let (status, _, body) = post(&without_v1, &request_body("b")).await;
        assert_eq!((status, body.as_str()), (200, r#"{"n":2}"#));
        let (status, headers, body) = post(&completions(&mock), &request_body("c")).await;
        assert_eq!((status, body.as_str()), (429, "slow down"));
        assert_eq!(headers["retry-after"], "7");

        let models = client()
            .get(format!("{base}/models"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let models: Value = serde_json::from_str(&models).unwrap();
        assert_eq!(models["data"][0]["id"], "mock-model");
    });
    let users: Vec<Value> = mock
        .requests()
        .iter()
        .map(|r| r.messages()[1]["content"].clone())
        .collect();
    assert_eq!(users, [json!("a"), json!("b"), json!("c")]);
}

#[test]
fn text_stream_is_valid_chunks_whose_content_is_the_text() {
    let text = "Hello from the mock — ünïcode and all.";
    let mock = MockOpenAi::start(vec![Reply::text_with_usage(text, 1200, 15, 1024)]);
    let (status, headers, body) =
        runtime().block_on(post(&completions(&mock), &request_body("hi")));
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/event-stream");
    let chunks = chunks(&sse_data(&body));

    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let contents: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .filter(|c| !c.is_empty())
        .collect();
    assert!((2..=3).contains(&contents.len()), "{contents:?}");
    assert_eq!(contents.concat(), text);

    let finish: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish, [&json!("stop")]);

    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 1200);
    assert_eq!(usage["usage"]["completion_tokens"], 15);
    assert_eq!(
        usage["usage"]["prompt_tokens_details"]["cached_tokens"],
        1024
    );
}

#[test]
fn tool_call_argument_fragments_concatenate_to_the_json() {
    let calls = [
        ("call_1", "fx__echo", json!({"text": "hi", "n": [1, 2]})),
        ("call_2", "search_tools", json!({"query": "weather"})),
    ];
    let mock = MockOpenAi::start(vec![Reply::tool_calls(&calls)]);
    let (_, _, body) = runtime().block_on(post(&completions(&mock), &request_body("go")));
    let chunks = chunks(&sse_data(&body));

    // Accumulate deltas per index the way a client does.
    let mut acc: Vec<(String, String, String, usize)> = vec![Default::default(); 2];
    for chunk in &chunks {
        for call in chunk["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let slot = &mut acc[call["index"].as_u64().unwrap() as usize];
            if let Some(id) = call["id"].as_str() {
                assert_eq!(call["type"], "function");
                assert_eq!(call["function"]["arguments"], "");
                slot.0 = id.to_owned();
                slot.1 = call["function"]["name"].as_str().unwrap().to_owned();
            } else {
                slot.2
                    .push_str(call["function"]["arguments"].as_str().unwrap());
                slot.3 += 1;
            }
        }
    }
    for ((id, name, args), (got_id, got_name, got_args, fragments)) in calls.iter().zip(&acc) {
        assert_eq!((got_id.as_str(), got_name.as_str()), (*id, *name));
        assert_eq!(*fragments, 2);
        assert_eq!(&serde_json::from_str::<Value>(got_args).unwrap(), args);
    }
    let finish = &chunks[chunks.len() - 2]["choices"][0]["finish_reason"];
    assert_eq!(finish, "tool_calls");
    assert!(
        chunks.last().unwrap()["usage"]["completion_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
}

/// Reads a streamed body until it ends or fails: the text received and whether it failed.
async fn read_stream(response: reqwest::Response) -> (String, bool) {
    let mut stream = response.bytes_stream();
    let mut text = String::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(bytes) => text.push_str(std::str::from_utf8(&bytes).unwrap()),
            Err(_) => return (text, true),
        }
    }
    (text, false)
}

#[test]
fn cut_stream_sends_its_events_then_drops_the_connection() {
    let events = reply::text_events("partial answer", 10, 3, 0);
    let mock = MockOpenAi::start(vec![Reply::Cut(events[..3].to_vec())]);
    let (text, failed) = runtime().block_on(async {
        let response = client()
            .post(completions(&mock))
            .header("content-type", "application/json")
            .body(request_body("x").to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        read_stream(response).await
    });
    assert!(failed, "a cut stream must end in a body error: {text:?}");
    assert_eq!(sse_data(&text), events[..3]);
    assert!(!text.contains("[DONE]"));
}

#[test]
fn stalled_stream_delivers_its_events_and_ends_when_the_mock_is_dropped() {
    let events = reply::text_events("never finished", 10, 3, 0);
    let mock = MockOpenAi::start(vec![Reply::Stall(events[..2].to_vec())]);
    runtime().block_on(async {
        let response = client()
            .post(completions(&mock))
            .header("content-type", "application/json")
            .body(request_body("x").to_string())
            .send()
            .await
            .unwrap();
        let mut stream = response.bytes_stream();
        let mut text = String::new();
        while sse_data(&text).len() < 2 {
            let bytes = stream.next().await.unwrap().unwrap();
            text.push_str(std::str::from_utf8(&bytes).unwrap());
        }
        assert_eq!(sse_data(&text), events[..2]);

        drop(mock);
        // The connection closes with the server; the timeout only guards against a hang.
        let next = tokio::time::timeout(WAIT, stream.next()).await;
        assert!(
            matches!(next, Ok(None | Some(Err(_)))),
            "the stalled stream outlived the mock"
        );
    });
}

#[test]
fn an_exhausted_script_answers_500_until_more_is_pushed() {
    let mock = MockOpenAi::start(vec![]);
    let url = completions(&mock);
    runtime().block_on(async {
        let (status, _, body) = post(&url, &request_body("1")).await;
        assert_eq!(
            (status, body.as_str()),
            (500, "mock: no scripted reply left for request 1")
        );

        mock.push(Reply::error(401, "bad key"));
        let (status, headers, body) = post(&url, &request_body("2")).await;
        assert_eq!(status, 401);
        assert_eq!(headers["content-type"], "application/json");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"]["message"], "bad key");
        assert!(body["error"]["type"].is_string());

        let (status, _, body) = post(&url, &request_body("3")).await;
        assert_eq!(
            (status, body.as_str()),
            (500, "mock: no scripted reply left for request 3")
        );
    });
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn wait_for_requests_returns_the_recorded_bodies_and_headers() {
    let mock = MockOpenAi::start(vec![Reply::text("one"), Reply::text("two")]);
    let url = completions(&mock);
    let sender = std::thread::spawn(move || {
        runtime().block_on(async {
            for user in ["first", "second"] {
                let response = client()
                    .post(&url)
                    .bearer_auth("sk-test")
                    .header("X-Antler-Test", user)
                    .header("content-type", "application/json")
                    .body(request_body(user).to_string())
                    .send()
                    .await
                    .unwrap();
                response.text().await.unwrap();
            }
        });
    });
    let requests = mock.wait_for_requests(2, WAIT);
    sender.join().unwrap();

    assert_eq!(requests.len(), 2);
    assert!(requests[0].at <= requests[1].at);
    for (request, user) in requests.iter().zip(["first", "second"]) {
        assert_eq!(request.body, request_body(user));
        assert_eq!(request.system_prompt(), "You are a test.");
        assert_eq!(request.messages().len(), 2);
        assert_eq!(request.tool_names(), ["fx__echo", "search_tools"]);
        assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
        assert_eq!(request.header("x-antler-test"), Some(user));
        assert_eq!(request.header("Content-Type"), Some("application/json"));
    }
}

#[test]
#[should_panic(expected = "mock_openai: waited")]
fn wait_for_requests_panics_clearly_on_timeout() {
    let mock = MockOpenAi::start(vec![]);
    mock.wait_for_requests(1, Duration::from_millis(20));
}

#[test]
fn the_prompt_cache_serves_the_longest_prefix_of_any_earlier_request() {
    use crate::mock_openai::cache::{PromptCache, serialize};
    let mut cache = PromptCache::default();
    let first = json!({"tools": [{"a": 1}], "messages": [{"role": "system"}]});
    let use_ = cache.lookup(&first);
    assert_eq!(use_.cached_tokens, 0);
    assert_eq!(
        use_.prompt_tokens,
        (serialize(&first).len() as u64).div_ceil(4)
    );
    // The same request plus a message: all of the first but its closing bracket.
    let longer = json!({"tools": [{"a": 1}], "messages": [{"role": "system"}, {"role": "user"}]});
    let shared = serialize(&first).len() - 1;
    assert!(serialize(&longer).starts_with(&serialize(&first)[..shared]));
    assert_eq!(cache.lookup(&longer).cached_tokens, shared as u64 / 4);
    // Tools come first: another tool list shares almost nothing, whatever the messages.
    let other = json!({"tools": [{"b": 1}], "messages": [{"role": "system"}, {"role": "user"}]});
    assert_eq!(cache.lookup(&other).cached_tokens, 0);
    // Any earlier request counts, not only the last one.
    let again = cache.lookup(&longer);
    assert_eq!(again.cached_tokens, serialize(&longer).len() as u64 / 4);
}

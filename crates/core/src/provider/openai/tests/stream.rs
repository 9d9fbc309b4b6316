//! Streams that succeed: server quirks, tool calls, usage, what is sent.

use serde_json::json;

use super::*;
use crate::protocol::ToolCall;
use crate::protocol::{FinishReason, Usage};
use crate::provider::ToolSpec;

/// Each case: the chunks (with or without `[DONE]`), and the content, reasoning and finish
/// reason the reply must have.
#[tokio::test]
async fn server_quirks_are_tolerated() {
    let cases: Vec<(&str, String, &str, &str, FinishReason)> = vec![
        (
            "no id, object, model or index; float created; unknown fields",
            sse(
                &[
                    r#"{"created":1.7e9,"x_extra":{"a":1},"choices":[{"delta":{"role":"assistant","content":"a"},"logprobs":null}]}"#,
                    r#"{"choices":[{"delta":{"content":"b"},"finish_reason":"stop"}]}"#,
                ],
                true,
            ),
            "ab",
            "",
            FinishReason::Stop,
        ),
        (
            "empty-string and null finish_reason until the end",
            sse(
                &[
                    r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":""}]}"#,
                    r#"{"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":null}]}"#,
                    r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
                ],
                true,
            ),
            "ab",
            "",
            FinishReason::Length,
        ),
        (
            "usage {} and null",
            sse(
                &[
                    r#"{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}],"usage":null}"#,
                    r#"{"choices":[],"usage":{}}"#,
                ],
                true,
            ),
            "a",
            "",
            FinishReason::Stop,
        ),
        (
            "reasoning_content and reasoning",
            sse(
                &[
                    r#"{"choices":[{"delta":{"reasoning_content":"r1"}}]}"#,
                    r#"{"choices":[{"delta":{"reasoning":"r2"}}]}"#,
                    r#"{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
                ],
                true,
            ),
            "a",
            "r1r2",
            FinishReason::Stop,
        ),
        (
            "finish_reason then EOF without [DONE]",
            sse(
                &[r#"{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}"#],
                false,
            ),
            "a",
            "",
            FinishReason::Stop,
        ),
        (
            "[DONE] without any finish_reason",
            sse(&[r#"{"choices":[{"delta":{"content":"a"}}]}"#], true),
            "a",
            "",
            FinishReason::Stop,
        ),
        (
            "keep-alive comments, CRLF lines and data: without a space",
            String::from(
                ": ping\r\n\r\ndata:{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\n: ping\n\ndata:[DONE]\n\n",
            ),
            "a",
            "",
            FinishReason::Stop,
        ),
    ];
    let replies = cases
        .iter()
        .map(|case| Reply::stream(vec![Part::Raw(case.1.clone())]));
    let server = Server::start(replies.collect()).await;
    let provider = OpenAiProvider::new(settings(&server)).unwrap();
    for (name, _, content, reasoning, finish) in cases {
        let (reply, events) = call_with(&provider, &hello()).await;
        let reply = reply.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(reply.content, content, "{name}");
        assert_eq!(reply.reasoning, reasoning, "{name}");
        assert_eq!(reply.finish_reason, finish, "{name}");
        assert!(reply.usage.is_none(), "{name}");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, ModelEvent::Retrying { .. })),
            "{name}"
        );
    }
    assert_eq!(server.received().len(), 7);
}

#[tokio::test]
async fn tool_calls_accumulate_over_chunks() {
    let server = Server::start(vec![Reply::chunks(&[
        r#"{"choices":[{"delta":{"content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"ls"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a\"}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
    ])])
    .await;
    let (reply, events) = call(settings(&server), &hello()).await;
    let reply = reply.unwrap();
    assert_eq!(
        reply.tool_calls,
        [
            ToolCall {
                id: "call_a".into(),
                name: "read".into(),
                arguments: r#"{"path":"a"}"#.into()
            },
            ToolCall {
                id: "call_b".into(),
                name: "ls".into(),
                arguments: "{}".into()
            },
        ]
    );
    assert_eq!(reply.finish_reason, FinishReason::ToolCalls);
    assert!(reply.content.is_empty() && events.is_empty());
}

#[tokio::test]
async fn usage_is_read_with_cached_tokens() {
    let server = Server::start(vec![
        Reply::chunks(&[
            r#"{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":64}}}"#,
        ]),
        Reply::chunks(&[
            r#"{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}],"usage":{"prompt_tokens":50.0,"completion_tokens":2,"prompt_cache_hit_tokens":32,"prompt_cache_miss_tokens":18}}"#,
        ]),
    ])
    .await;
    let provider = OpenAiProvider::new(settings(&server)).unwrap();
    let usage = |input, cached, output| Usage {
        input_tokens: input,
        cached_input_tokens: cached,
        output_tokens: output,
    };
    let (reply, _) = call_with(&provider, &hello()).await;
    assert_eq!(reply.unwrap().usage, Some(usage(100, 64, 7)));
    let (reply, _) = call_with(&provider, &hello()).await;
    assert_eq!(reply.unwrap().usage, Some(usage(50, 32, 2)));
}

#[tokio::test]
async fn deltas_are_reported_as_they_arrive() {
    let server = Server::start(vec![Reply::chunks(&[
        r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#,
        r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
        r#"{"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
    ])])
    .await;
    let (reply, events) = call(settings(&server), &hello()).await;
    assert_eq!(reply.unwrap().content, "Hello");
    assert_eq!(
        events,
        [
            ModelEvent::ReasoningDelta("hm".into()),
            ModelEvent::TextDelta("Hel".into()),
            ModelEvent::TextDelta("lo".into()),
        ]
    );
}

#[tokio::test]
async fn the_request_sent_is_a_streamed_chat_completion() {
    let server = Server::start(vec![Reply::chunks(&[
        r#"{"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}"#,
    ])])
    .await;
    let request = ModelRequest {
        system: String::from("sys"),
        messages: vec![
            Message::User {
                content: String::from("list"),
            },
            Message::Assistant {
                content: String::new(),
                reasoning: String::from("not sent back"),
                tool_calls: vec![ToolCall {
                    id: String::from("c1"),
                    name: String::from("ls"),
                    arguments: String::from("{}"),
                }],
            },
            Message::Tool {
                call_id: String::from("c1"),
                name: String::from("ls"),
                content: String::from("a.txt"),
                is_error: false,
            },
        ],
        tools: vec![ToolSpec {
            name: String::from("ls"),
            description: String::from("List"),
            parameters: json!({"type": "object"}),
        }],
        max_tokens: Some(1),
        callable: Default::default(),
    };
    let (reply, _) = call(settings(&server), &request).await;
    reply.unwrap();
    let received = server.received();
    let sent = &received[0];
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(sent.body["model"], "test-model");
    assert_eq!(sent.body["max_tokens"], 1);
    assert_eq!(
        sent.body["messages"][2],
        json!({"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "id": "c1", "function": {"name": "ls", "arguments": "{}"}}
        ]})
    );
    assert!(!sent.body.to_string().contains("not sent back"));
    assert_eq!(sent.body["tools"][0]["function"]["name"], "ls");
    assert!(
        sent.headers.get("authorization").is_none(),
        "no key, no header"
    );
}

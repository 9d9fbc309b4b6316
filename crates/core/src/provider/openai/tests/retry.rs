//! Calls that fail: retries, timeouts, errors, and the key kept out of them.

use std::time::Duration;

use super::*;

const OK: &str = r#"{"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}"#;
const PARTIAL: &str = r#"{"choices":[{"delta":{"content":"par"}}]}"#;

fn retries(events: &[ModelEvent]) -> Vec<(u32, String)> {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::Retrying {
                attempt, reason, ..
            } => Some((*attempt, reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried() {
    let server = Server::start(vec![
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("retry-after", "0"),
        Reply::status(500, "boom"),
        Reply::chunks(&[OK]),
    ])
    .await;
    let (reply, events) = call(settings(&server), &hello()).await;
    assert_eq!(reply.unwrap().content, "ok");
    let retries = retries(&events);
    assert_eq!(retries.len(), 2, "{retries:?}");
    assert_eq!(retries[0], (2, String::from("HTTP 429: slow down")));
    assert_eq!(retries[1], (3, String::from("HTTP 500: boom")));
    let first_delay = events.iter().find_map(|e| match e {
        ModelEvent::Retrying { delay, .. } => Some(*delay),
        _ => None,
    });
    assert_eq!(
        first_delay,
        Some(Duration::ZERO),
        "Retry-After: 0 is honoured"
    );
    assert_eq!(server.received().len(), 3);
}

#[tokio::test]
async fn cut_streams_are_retried_and_their_text_voided() {
    let server = Server::start(vec![
        Reply::stream(vec![Part::Raw(sse(&[PARTIAL], false))]),
        Reply::chunks(&[OK]),
    ])
    .await;
    let (reply, events) = call(settings(&server), &hello()).await;
    assert_eq!(reply.unwrap().content, "ok");
    assert_eq!(
        events,
        [
            ModelEvent::TextDelta("par".into()),
            ModelEvent::Retrying {
                attempt: 2,
                delay: match events[1] {
                    ModelEvent::Retrying { delay, .. } => delay,
                    _ => Duration::MAX,
                },
                reason: String::from("the stream ended before the reply was complete"),
            },
            ModelEvent::TextDelta("ok".into()),
        ]
    );
}

#[tokio::test]
async fn a_connection_reset_mid_stream_is_retried() {
    let reset = Arc::new(tokio::sync::Notify::new());
    let server = Server::start(vec![
        Reply::stream(vec![
            Part::Raw(sse(&[PARTIAL], false)),
            Part::AbortWhen(reset.clone()),
        ]),
        Reply::chunks(&[OK]),
    ])
    .await;
    let provider = OpenAiProvider::new(settings(&server)).unwrap();
    let events = Mutex::new(Vec::new());
    let on_event = |event: ModelEvent| {
        if event == ModelEvent::TextDelta("par".into()) {
            reset.notify_one();
        }
        events.lock().unwrap().push(event);
    };
    let reply = provider.complete(&hello(), &on_event).await;
    assert_eq!(reply.unwrap().content, "ok");
    let retries = retries(&events.into_inner().unwrap());
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert!(retries[0].1.contains("the stream broke"), "{retries:?}");
}

#[tokio::test]
async fn client_errors_fail_at_once_with_the_server_message() {
    let server = Server::start(vec![
        Reply::status(
            400,
            r#"{"error":{"message":"context length exceeded","type":"invalid_request_error"}}"#,
        ),
        Reply::chunks(&[OK]),
    ])
    .await;
    let (reply, events) = call(settings(&server), &hello()).await;
    let error = reply.unwrap_err();
    assert!(
        matches!(&error, ProviderError::Status { status: 400, message, .. } if message == "context length exceeded"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!("{}: HTTP 400: context length exceeded", server.base_url)
    );
    assert!(events.is_empty());
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn the_last_failure_names_the_endpoint_and_the_tries() {
    let server = Server::start(vec![Reply::status(503, "busy"); 3]).await;
    let (reply, events) = call(settings(&server), &hello()).await;
    let error = reply.unwrap_err().to_string();
    assert_eq!(
        error,
        format!("{}: HTTP 503: busy (after 3 tries)", server.base_url)
    );
    assert_eq!(retries(&events).len(), 2);
}

#[tokio::test]
async fn a_stalled_stream_times_out_and_is_retried() {
    let server = Server::start(vec![
        Reply::stream(vec![Part::Raw(sse(&[PARTIAL], false)), Part::Hang]),
        Reply::chunks(&[OK]),
    ])
    .await;
    let mut settings = settings(&server);
    settings.stream_idle_timeout = Duration::from_millis(100);
    let (reply, events) = call(settings.clone(), &hello()).await;
    assert_eq!(reply.unwrap().content, "ok");
    assert!(
        retries(&events)[0].1.contains("stream idle timeout"),
        "{events:?}"
    );

    let server = Server::start(vec![Reply::stream(vec![Part::Hang])]).await;
    settings.base_url = server.base_url.clone();
    settings.max_retries = 0;
    let error = call(settings, &hello()).await.0.unwrap_err();
    assert!(
        matches!(error, ProviderError::Transport { .. }),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("sent nothing for 100ms"),
        "{error}"
    );
}

#[tokio::test]
async fn missing_headers_hit_the_request_timeout() {
    let server = Server::start(vec![Reply::stall()]).await;
    let mut settings = settings(&server);
    settings.request_timeout = Duration::from_millis(100);
    settings.max_retries = 0;
    let error = call(settings, &hello()).await.0.unwrap_err().to_string();
    assert!(error.contains("request timeout"), "{error}");
}

#[tokio::test]
async fn an_unreachable_endpoint_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let mut settings = OpenAiSettings::new(format!("http://{address}/v1"), "m");
    settings.max_retries = 1;
    settings.backoff_base = Duration::from_millis(1);
    let (reply, events) = call(settings, &hello()).await;
    let error = reply.unwrap_err();
    assert!(
        matches!(error, ProviderError::Transport { .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .starts_with(&format!("http://{address}/v1: ")),
        "{error}"
    );
    assert_eq!(retries(&events).len(), 1);
}

#[tokio::test]
async fn the_key_never_appears_in_errors() {
    const KEY: &str = "sk-test-DO-NOT-LEAK-0123456789";
    // The server echoes the key it was sent, as some do ("Incorrect API key: ...").
    let echo = |status| {
        Reply::status(
            status,
            &format!(r#"{{"error":{{"message":"bad key Bearer {KEY}"}}}}"#),
        )
    };
    let server = Server::start(vec![echo(500), echo(401)]).await;
    let mut settings = settings(&server);
    settings.api_key = Some(KEY.to_string());
    settings.base_url = server.base_url.replace("http://", "http://user:pw@");
    settings.max_retries = 1;
    let provider = OpenAiProvider::new(settings).unwrap();
    let (reply, events) = call_with(&provider, &hello()).await;
    let error = reply.unwrap_err();
    let texts = [
        error.to_string(),
        format!("{error:?}"),
        format!("{events:?}"),
        format!("{provider:?}"),
    ];
    for text in &texts {
        assert!(!text.contains(KEY), "{text}");
        assert!(!text.contains("pw@"), "{text}");
    }
    assert!(
        texts[0].contains("bad key Bearer <redacted>"),
        "{}",
        texts[0]
    );
    let received = server.received();
    assert_eq!(received.len(), 2);
    let sent = received[0]
        .headers
        .get("authorization")
        .unwrap()
        .to_str()
        .unwrap();
    assert_eq!(sent, format!("Bearer {KEY}"));
}

#[tokio::test]
async fn keep_alive_comments_keep_a_slow_stream_alive() {
    // Eight comments 60 ms apart: 480 ms with nothing parsed, three times the idle limit.
    let mut parts: Vec<Part> = (0..8)
        .map(|_| Part::After(Duration::from_millis(60), String::from(": keep-alive\n\n")))
        .collect();
    parts.push(Part::Raw(sse(&[OK], true)));
    let server = Server::start(vec![Reply::stream(parts)]).await;
    let mut settings = settings(&server);
    settings.stream_idle_timeout = Duration::from_millis(150);
    settings.max_retries = 0;
    let (reply, events) = call(settings, &hello()).await;
    assert_eq!(reply.unwrap().content, "ok");
    assert!(retries(&events).is_empty(), "{events:?}");
}

#[tokio::test]
async fn an_abandoned_stream_closes_its_connection_before_the_retry() {
    let closed = Arc::new(tokio::sync::Notify::new());
    let server = Server::start(vec![
        Reply::stream(vec![
            Part::Raw(sse(&[PARTIAL], false)),
            Part::HangUntilClosed(closed.clone()),
        ]),
        Reply::chunks(&[OK]),
    ])
    .await;
    let mut settings = settings(&server);
    settings.stream_idle_timeout = Duration::from_millis(100);
    let (reply, events) = call(settings, &hello()).await;
    assert_eq!(reply.unwrap().content, "ok");
    assert_eq!(retries(&events).len(), 1);
    tokio::time::timeout(Duration::from_secs(5), closed.notified())
        .await
        .expect("the server saw the abandoned connection close");
}

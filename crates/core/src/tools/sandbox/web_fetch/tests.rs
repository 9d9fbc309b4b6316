//! Loopback tests: pages served by axum on 127.0.0.1, fetched through the configured tool.

use crate::tools::CallStandalone;
use std::path::Path;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect};
use axum::routing::get;

use super::*;
use crate::config::parse_app_config;
use crate::tools::build_configured_tools;

const ARTICLE_PAGE: &str = r#"<!doctype html>
<html><head><title>Test Page</title><style>body { color: red }</style>
<script>var secret = "tracking";</script></head>
<body>
<nav><a href="/">Home</a> <a href="/about">About us</a></nav>
<article>
  <h2>Findings</h2>
  <p>The result is in <a href="/docs/result">the docs</a>, see also
  <a href="https://example.org/x">elsewhere</a>.</p>
  <script>document.write("injected")</script>
</article>
<footer>Copyright footer</footer>
</body></html>"#;

/// A chunk of the endless body.
static CHUNK: [u8; 1024] = [b'a'; 1024];

fn router() -> Router {
    Router::new()
        .route(
            "/article",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    ARTICLE_PAGE,
                )
            }),
        )
        .route("/r1", get(|| async { Redirect::temporary("/r2") }))
        .route("/r2", get(|| async { Redirect::permanent("/r3") }))
        .route("/r3", get(|| async { Redirect::to("/plain") }))
        .route("/loop", get(|| async { Redirect::temporary("/loop") }))
        .route(
            "/to-metadata",
            get(|| async { Redirect::temporary("http://169.254.169.254/latest/meta-data/") }),
        )
        .route(
            "/plain",
            get(|| async { ([(header::CONTENT_TYPE, "text/plain")], "hello\nworld\n") }),
        )
        .route(
            "/json",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    r#"{"b":1,"a":[true,null]}"#,
                )
            }),
        )
        .route(
            "/missing",
            get(|| async {
                (
                    StatusCode::NOT_FOUND,
                    [(header::CONTENT_TYPE, "text/html")],
                    "<html><body><h1>Not here</h1><p>No such page, sorry.</p></body></html>",
                )
            }),
        )
        .route(
            "/image",
            get(|| async { ([(header::CONTENT_TYPE, "image/png")], vec![0u8; 1234]) }),
        )
        .route(
            "/endless",
            get(|| async {
                let chunks = futures::stream::repeat_with(|| {
                    Ok::<_, std::io::Error>(Bytes::from_static(&CHUNK))
                });
                (
                    [(header::CONTENT_TYPE, "text/plain")],
                    Body::from_stream(chunks),
                )
            }),
        )
        .route(
            "/untyped",
            get(|| async {
                let mut response =
                    "<!DOCTYPE html><title>Sniffed</title><p>body</p>".into_response();
                response.headers_mut().remove(header::CONTENT_TYPE);
                response
            }),
        )
        .route(
            "/hang",
            get(|| async { std::future::pending::<&'static str>().await }),
        )
}

/// Serves [`router`] on a fresh loopback port; returns its base URL.
async fn serve() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router()).await });
    format!("http://{address}")
}

/// The tool's config; the test servers are on loopback, so private networks are allowed
/// (the tests of the network policy below build the tool without that).
fn config(extra: &str) -> crate::config::AppConfig {
    let yaml = format!(
        "sandbox:\n  web_fetch:\n    allow_private_networks: true\ntools:\n  - {{name: web_fetch, use: antler.sandbox:web_fetch{extra}}}\n"
    );
    parse_app_config(&yaml, Path::new("c.yaml"), &|_| None)
        .unwrap()
        .value
}

fn tool(extra: &str) -> Arc<dyn Tool> {
    build_configured_tools(&config(extra), Path::new("."), &Default::default(), None)
        .unwrap()
        .tools
        .remove(0)
}

async fn fetch(tool: &Arc<dyn Tool>, url: &str) -> ToolOutput {
    tool.call_standalone(json!({ "url": url })).await
}

#[tokio::test]
async fn html_article_becomes_markdown_with_title_and_links() {
    let base = serve().await;
    let out = fetch(&tool(""), &format!("{base}/article")).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        out.content,
        format!(
            "URL: {base}/article\nStatus: 200 OK\nContent-Type: text/html; charset=utf-8\n\n\
             # Test Page\n\n## Findings\n\nThe result is in [the docs]({base}/docs/result), \
             see also [elsewhere](https://example.org/x)."
        )
    );
}

#[tokio::test]
async fn redirects_are_followed_up_to_a_limit() {
    let base = serve().await;
    let web_fetch = tool("");
    let out = fetch(&web_fetch, &format!("{base}/r1")).await;
    assert_eq!(
        out,
        ToolOutput::ok(format!(
            "URL: {base}/plain\nRedirected from: {base}/r1\nStatus: 200 OK\n\
             Content-Type: text/plain\n\nhello\nworld"
        ))
    );
    let out = fetch(&web_fetch, &format!("{base}/loop")).await;
    assert!(out.is_error, "{out:?}");
    assert_eq!(
        out.content,
        format!("Error: more than 5 redirects when fetching `{base}/loop`")
    );
}

/// The tool as built by default (private networks refused), except that the test server's
/// own address may be reached: a stand-in for a public site.
fn public_only(except: std::net::IpAddr) -> WebFetch {
    let tool = tool("");
    let info = tool.info().clone();
    WebFetch {
        info,
        client: crate::base::http::http_client_builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap(),
        policy: NetworkPolicy::new(false).with_exception(except),
        timeout: DEFAULT_TIMEOUT,
        max_bytes: DEFAULT_MAX_BYTES,
        max_chars: DEFAULT_MAX_CHARS,
    }
}

#[tokio::test]
async fn private_addresses_are_refused_on_every_hop() {
    let base = serve().await;
    let web_fetch = public_only("127.0.0.1".parse().unwrap());
    assert!(web_fetch.fetch(&format!("{base}/plain")).await.is_ok());
    let err = web_fetch
        .fetch(&format!("{base}/to-metadata"))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "refused to fetch `http://169.254.169.254/latest/meta-data/` (a redirect from \
             `{base}/to-metadata`): 169.254.169.254 is a link-local address; web_fetch reaches \
             public addresses only (set sandbox.web_fetch.allow_private_networks: true in \
             config.yaml to allow it)"
        )
    );
}

#[tokio::test]
async fn json_is_pretty_printed_and_text_is_capped_in_characters() {
    let base = serve().await;
    let out = fetch(&tool(""), &format!("{base}/json")).await;
    assert!(!out.is_error, "{out:?}");
    assert!(
        out.content.ends_with(
            "Content-Type: application/json\n\n{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null\n  ]\n}"
        ),
        "{}",
        out.content
    );
    let out = fetch(&tool(", max_chars: 3"), &format!("{base}/plain")).await;
    assert!(
        out.content.ends_with(
            "\n\nhel\n\n[... 8 of 11 characters cut here (the tool's `max_chars` is 3)]"
        ),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn http_errors_give_the_status_and_an_excerpt() {
    let base = serve().await;
    let out = fetch(&tool(""), &format!("{base}/missing")).await;
    assert_eq!(
        out,
        ToolOutput::error(format!(
            "Error: HTTP 404 Not Found from {base}/missing: # Not here No such page, sorry."
        ))
    );
}

#[tokio::test]
async fn binary_content_is_refused_with_its_type_and_size() {
    let base = serve().await;
    let out = fetch(&tool(""), &format!("{base}/image")).await;
    assert_eq!(
        out,
        ToolOutput::error(format!(
            "Error: {base}/image is binary content (image/png, 1234 bytes); only web pages, \
             text, JSON and XML can be fetched"
        ))
    );
}

#[tokio::test]
async fn an_untyped_body_is_sniffed() {
    let base = serve().await;
    let out = fetch(&tool(""), &format!("{base}/untyped")).await;
    assert!(!out.is_error, "{out:?}");
    assert!(
        out.content
            .ends_with("Content-Type: (not given)\n\n# Sniffed\n\nbody"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn the_download_stops_at_max_bytes() {
    let base = serve().await;
    // The body never ends: only stopping at the cap lets this call return.
    let out = fetch(&tool(", max_bytes: 1500"), &format!("{base}/endless")).await;
    assert!(!out.is_error, "{out:?}");
    let (head, body) = out.content.split_once("\n\n").unwrap();
    assert!(
        head.ends_with(
            "Truncated: only the first 1500 bytes were downloaded (the tool's `max_bytes`)"
        ),
        "{head}"
    );
    assert_eq!(body, "a".repeat(1500));
}

#[tokio::test]
async fn a_silent_server_times_out_naming_the_host() {
    let base = serve().await;
    let host = base.trim_start_matches("http://");
    let out = fetch(&tool(", timeout_seconds: 1"), &format!("{base}/hang")).await;
    assert_eq!(
        out,
        ToolOutput::error(format!(
            "Error: `{host}` did not answer within 1 s (the tool's `timeout_seconds`)"
        ))
    );
}

#[tokio::test]
async fn a_refused_connection_names_the_host() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let out = fetch(&tool(""), &format!("http://{address}/")).await;
    assert!(out.is_error, "{out:?}");
    assert!(
        out.content.starts_with(&format!(
            "Error: cannot connect to `{address}`: tcp connect error: "
        )),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn bad_urls_and_other_schemes_are_refused() {
    let web_fetch = tool("");
    let cases = [
        (
            "ftp://example.com/file",
            "Error: cannot fetch `ftp://example.com/file`: the `ftp` scheme is not supported, \
             only http and https URLs are",
        ),
        (
            "file:///etc/passwd",
            "Error: cannot fetch `file:///etc/passwd`: the `file` scheme is not supported, \
             only http and https URLs are",
        ),
        (
            "example.com/page",
            "Error: invalid URL `example.com/page`: it has no scheme; give an absolute URL \
             such as https://example.com/",
        ),
        ("http://", "Error: invalid URL `http://`: empty host"),
        (
            "http://exa mple.com/",
            "Error: invalid URL `http://exa mple.com/`: invalid international domain name",
        ),
    ];
    for (url, expected) in cases {
        assert_eq!(fetch(&web_fetch, url).await, ToolOutput::error(expected));
    }
    let out = web_fetch
        .call_standalone(json!({"link": "https://example.com/"}))
        .await;
    assert!(
        out.is_error && out.content.contains("invalid arguments"),
        "{out:?}"
    );
}

#[test]
fn invalid_settings_are_build_errors_naming_the_key() {
    for (extra, key) in [
        (", timeout_seconds: 0", "timeout_seconds"),
        (", timeout_seconds: -3", "timeout_seconds"),
        (", timeout_seconds: soon", "timeout_seconds"),
        (", max_bytes: 0", "max_bytes"),
        (", max_bytes: 1.5", "max_bytes"),
        (", max_chars: lots", "max_chars"),
    ] {
        let err = build_configured_tools(&config(extra), Path::new("."), &Default::default(), None)
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("tools[0] `web_fetch`: ") && text.contains(&format!("`{key}`")),
            "{extra}: {text}"
        );
    }
    let fine = ", timeout_seconds: 2.5, max_bytes: 10, max_chars: 10";
    assert!(
        build_configured_tools(&config(fine), Path::new("."), &Default::default(), None).is_ok()
    );
}

#[test]
fn schema_requires_the_url() {
    let web_fetch = tool("");
    let info = web_fetch.info();
    assert_eq!(info.name, "web_fetch");
    assert_eq!(info.parameters["required"], json!(["url"]));
    assert_eq!(info.parameters["properties"]["url"]["type"], "string");
    assert!(info.description.contains("50000 characters"));
}

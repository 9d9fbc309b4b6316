//! `web_fetch(url)`: one web page, as text the model can read. HTML becomes markdown of
//! the page's main content; text, JSON and XML come back as text; binary content is
//! refused. Downloads are capped in time and size, and the text in length.

mod html;
mod network;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, LOCATION};
use reqwest::{StatusCode, Url};
use serde::Deserialize;
use serde_json::{Value, json};

use self::network::{FilteringResolver, HopError, NetworkPolicy};
use super::common::{positive_setting, tool_info};
use crate::base::process::PROXY_ENV;
use crate::tools::Effect;
use crate::tools::registry::{ToolBuildContext, ToolFactory};
use crate::tools::{Tool, ToolContext, ToolFuture, ToolInfo, ToolOutput};

/// The registry entry for `antler.sandbox:web_fetch`.
pub const WEB_FETCH: ToolFactory = ToolFactory {
    id: "antler.sandbox:web_fetch",
    tool_name: "web_fetch",
    settings: &["timeout_seconds", "max_bytes", "max_chars"],
    build,
};

/// The whole fetch, redirects and body included, is abandoned after this long unless
/// `timeout_seconds` says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);
/// At most this many body bytes are downloaded unless `max_bytes` says otherwise.
const DEFAULT_MAX_BYTES: usize = 2 * 1024 * 1024;
/// At most this many characters of text are returned unless `max_chars` says otherwise.
const DEFAULT_MAX_CHARS: usize = 50_000;
/// Redirects followed before giving up.
const MAX_REDIRECTS: usize = 5;
/// How much of an error page is read.
const ERROR_BODY_BYTES: usize = 16 * 1024;
/// How much of an error page's text is quoted in the error.
const ERROR_EXCERPT_CHARS: usize = 300;
/// What the tool can use, best first.
const ACCEPTED: &str = "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,\
                        application/json;q=0.9,application/xml;q=0.8,text/*;q=0.7,*/*;q=0.1";

struct WebFetch {
    info: ToolInfo,
    client: reqwest::Client,
    policy: NetworkPolicy,
    timeout: Duration,
    max_bytes: usize,
    max_chars: usize,
}

#[derive(Deserialize)]
struct Args {
    url: String,
}

/// Why a fetch gave nothing usable; shown to the model after `Error: `.
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("invalid URL `{url}`: {reason}")]
    InvalidUrl { url: String, reason: String },
    #[error(
        "cannot fetch `{url}`: the `{scheme}` scheme is not supported, only http and https URLs are"
    )]
    Scheme { url: String, scheme: String },
    #[error("`{host}` did not answer within {seconds} s (the tool's `timeout_seconds`)")]
    Timeout { host: String, seconds: f64 },
    #[error("cannot connect to `{host}`: {detail}")]
    Connect { host: String, detail: String },
    #[error("more than {MAX_REDIRECTS} redirects when fetching `{url}`")]
    Redirects { url: String },
    #[error("refused to fetch `{url}`{via}: {reason}")]
    Blocked {
        url: String,
        via: String,
        reason: String,
    },
    #[error("`{url}` redirects to `{location}`, which is not a usable http(s) URL")]
    BadRedirect { url: String, location: String },
    #[error("the request to `{host}` failed: {detail}")]
    Request { host: String, detail: String },
    #[error("HTTP {status} from {url}{excerpt}")]
    Status {
        status: StatusCode,
        url: String,
        excerpt: String,
    },
    #[error(
        "{url} is binary content ({content_type}, {size}); only web pages, text, JSON and XML \
         can be fetched"
    )]
    Binary {
        url: String,
        content_type: String,
        size: String,
    },
    #[error("cannot convert the HTML of {url}: {detail}")]
    Html { url: String, detail: String },
}

/// How a body is turned into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Json,
    Text,
    Binary,
    /// No content type given: decided by looking at the body.
    Unknown,
}

impl Kind {
    /// Classifies a `Content-Type` header value.
    fn of(content_type: Option<&str>) -> Self {
        let Some(content_type) = content_type else {
            return Self::Unknown;
        };
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "" => Self::Unknown,
            "text/html" | "application/xhtml+xml" => Self::Html,
            "application/json" => Self::Json,
            e if e.ends_with("+json") => Self::Json,
            e if e.starts_with("text/") || e.ends_with("+xml") => Self::Text,
            "application/xml"
            | "application/javascript"
            | "application/x-javascript"
            | "application/ecmascript"
            | "application/x-ndjson"
            | "application/yaml"
            | "application/x-yaml"
            | "application/toml"
            | "application/x-sh" => Self::Text,
            _ => Self::Binary,
        }
    }

    /// Guesses the kind of a body that came without a content type.
    fn sniff(body: &[u8]) -> Self {
        let Ok(text) = std::str::from_utf8(body) else {
            return Self::Binary;
        };
        if text.contains('\0') {
            return Self::Binary;
        }
        let head: String = text.trim_start().chars().take(64).collect();
        let head = head.to_ascii_lowercase();
        if head.starts_with("<!doctype html") || head.starts_with("<html") {
            Self::Html
        } else if (head.starts_with('{') || head.starts_with('['))
            && serde_json::from_str::<Value>(text).is_ok()
        {
            Self::Json
        } else {
            Self::Text
        }
    }
}

fn build(ctx: &ToolBuildContext<'_>) -> Result<Arc<dyn Tool>, String> {
    let extra = &ctx.entry.extra;
    let timeout = match extra.get("timeout_seconds") {
        None => DEFAULT_TIMEOUT,
        Some(v) => v
            .as_f64()
            .filter(|s| *s > 0.0)
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or_else(|| {
                format!("`timeout_seconds` must be a positive number of seconds, got {v}")
            })?,
    };
    let max_bytes = positive_setting(ctx, "max_bytes", DEFAULT_MAX_BYTES)?;
    let max_chars = positive_setting(ctx, "max_chars", DEFAULT_MAX_CHARS)?;
    let policy = NetworkPolicy::new(ctx.app.sandbox.web_fetch.allow_private_networks)
        .with_proxies(&proxy_urls());
    // Redirects are followed by hand, so that every hop is checked; a connection made
    // directly can only reach allowed addresses.
    let mut builder = crate::base::http::http_client_builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none());
    if !policy.allows_all() {
        builder = builder.dns_resolver(FilteringResolver::new(policy.clone()));
    }
    let client = builder
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
    let info = tool_info(
        ctx,
        &WEB_FETCH,
        format!(
            "Fetch a web page or text document by URL (http or https) and return its \
             content: HTML as markdown of the main content (title as heading, links kept), \
             plain text, markdown, JSON (pretty-printed) and XML as text. Binary content \
             (images, PDFs, archives) is refused. The result starts with the final URL \
             after redirects, the status and the content type; text beyond {max_chars} \
             characters is cut."
        ),
        json!({
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "description": "The absolute http:// or https:// URL to fetch."
                }
            },
            "required": ["url"]
        }),
        true,
    );
    Ok(Arc::new(WebFetch {
        info,
        client,
        policy,
        timeout,
        max_bytes,
        max_chars,
    }))
}

/// The proxies reqwest would send requests through (it reads these variables).
fn proxy_urls() -> Vec<String> {
    PROXY_ENV
        .iter()
        .filter(|name| !name.eq_ignore_ascii_case("no_proxy"))
        .filter_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        .collect()
}

impl Tool for WebFetch {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn effect(&self) -> Effect {
        Effect::Network
    }

    fn call<'a>(&'a self, _ctx: ToolContext<'a>, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let args: Args = match serde_json::from_value(arguments) {
                Ok(a) => a,
                Err(e) => return ToolOutput::error(format!("Error: invalid arguments: {e}")),
            };
            match self.fetch(&args.url).await {
                Ok(text) => ToolOutput::ok(text),
                Err(e) => {
                    tracing::debug!(url = %args.url, error = %e, "web_fetch failed");
                    ToolOutput::error(format!("Error: {e}"))
                }
            }
        })
    }
}

impl WebFetch {
    /// Fetches `raw` and renders the result with its header, all within the time limit.
    async fn fetch(&self, raw: &str) -> Result<String, FetchError> {
        let url = parse_url(raw)?;
        match tokio::time::timeout(self.timeout, self.fetch_url(&url)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout {
                host: host_of(&url),
                seconds: self.timeout.as_secs_f64(),
            }),
        }
    }

    /// Requests `url`, following redirects one hop at a time, each hop checked against
    /// the network policy before anything is sent to it.
    async fn follow(&self, url: &Url) -> Result<reqwest::Response, FetchError> {
        let mut current = url.clone();
        for hop in 0..=MAX_REDIRECTS {
            if let Err(err) = self.policy.check_url(&current).await {
                let via = if hop == 0 {
                    String::new()
                } else {
                    format!(" (a redirect from `{url}`)")
                };
                return Err(match err {
                    HopError::Blocked(blocked) => FetchError::Blocked {
                        url: current.to_string(),
                        via,
                        reason: blocked.to_string(),
                    },
                    HopError::Resolve(host, detail) => FetchError::Connect {
                        host,
                        detail: format!("the name does not resolve ({detail})"),
                    },
                });
            }
            let response = self
                .client
                .get(current.clone())
                .header(ACCEPT, ACCEPTED)
                .send()
                .await
                .map_err(|e| self.request_error(&e, &current))?;
            let location = response
                .headers()
                .get(LOCATION)
                .filter(|_| response.status().is_redirection());
            let Some(location) = location else {
                return Ok(response);
            };
            let shown = String::from_utf8_lossy(location.as_bytes()).into_owned();
            let next = location
                .to_str()
                .ok()
                .and_then(|l| current.join(l).ok())
                .filter(|next| matches!(next.scheme(), "http" | "https"))
                .ok_or_else(|| FetchError::BadRedirect {
                    url: current.to_string(),
                    location: shown,
                })?;
            tracing::debug!(from = %current, to = %next, "web_fetch redirect");
            current = next;
        }
        Err(FetchError::Redirects {
            url: url.to_string(),
        })
    }

    async fn fetch_url(&self, url: &Url) -> Result<String, FetchError> {
        tracing::debug!(url = %url, "web_fetch");
        let mut response = self.follow(url).await?;
        let final_url = response.url().clone();
        let status = response.status();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut kind = Kind::of(content_type.as_deref());

        if status.is_client_error() || status.is_server_error() {
            return Err(status_error(response, kind, &final_url).await);
        }
        if kind == Kind::Binary {
            return Err(FetchError::Binary {
                url: final_url.to_string(),
                content_type: content_type.unwrap_or_default(),
                size: response
                    .content_length()
                    .map_or_else(|| "size not given".to_string(), |n| format!("{n} bytes")),
            });
        }

        let (body, truncated) = read_capped(&mut response, self.max_bytes)
            .await
            .map_err(|e| self.request_error(&e, &final_url))?;
        if kind == Kind::Unknown {
            kind = Kind::sniff(&body);
            if kind == Kind::Binary {
                let at_least = if truncated { "at least " } else { "" };
                return Err(FetchError::Binary {
                    url: final_url.to_string(),
                    content_type: "no content type given, and the body is not text".into(),
                    size: format!("{at_least}{} bytes", body.len()),
                });
            }
        }
        let text = readable(kind, &body, &final_url).await?;
        tracing::debug!(url = %final_url, %status, bytes = body.len(), truncated, "web_fetch done");

        let mut out = format!("URL: {final_url}\n");
        if final_url != *url {
            out.push_str(&format!("Redirected from: {url}\n"));
        }
        out.push_str(&format!(
            "Status: {status}\nContent-Type: {}\n",
            content_type.as_deref().unwrap_or("(not given)")
        ));
        if truncated {
            out.push_str(&format!(
                "Truncated: only the first {} bytes were downloaded (the tool's `max_bytes`)\n",
                self.max_bytes
            ));
        }
        out.push('\n');
        let text = text.trim();
        if text.is_empty() {
            out.push_str("(no readable text)");
        } else {
            out.push_str(&cap_chars(text, self.max_chars));
        }
        Ok(out)
    }

    /// Turns a transport error into one that names the host and what went wrong.
    fn request_error(&self, e: &reqwest::Error, url: &Url) -> FetchError {
        let at = e.url().unwrap_or(url);
        let host = host_of(at);
        if e.is_timeout() {
            FetchError::Timeout {
                host,
                seconds: self.timeout.as_secs_f64(),
            }
        } else if e.is_connect() {
            FetchError::Connect {
                host,
                detail: causes(e),
            }
        } else {
            FetchError::Request {
                host,
                detail: causes(e),
            }
        }
    }
}

/// An HTTP error status, with an excerpt of the page when it is text: an unreadable error
/// page still has a status worth reporting.
async fn status_error(mut response: reqwest::Response, kind: Kind, final_url: &Url) -> FetchError {
    let excerpt = if kind == Kind::Binary {
        String::new()
    } else {
        let body = read_capped(&mut response, ERROR_BODY_BYTES)
            .await
            .map(|(body, _)| body)
            .unwrap_or_default();
        excerpt(&body, kind, final_url)
    };
    FetchError::Status {
        status: response.status(),
        url: final_url.to_string(),
        excerpt,
    }
}

/// The body as the model reads it: HTML as Markdown, JSON pretty-printed, text as it is.
async fn readable(kind: Kind, body: &[u8], final_url: &Url) -> Result<String, FetchError> {
    Ok(match kind {
        Kind::Html => {
            let html = String::from_utf8_lossy(body).into_owned();
            let page = final_url.clone();
            // The parse can take a while on a large page; keep it off the async workers.
            tokio::task::spawn_blocking(move || html::to_markdown(&html, &page))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| e.to_string()))
                .map_err(|detail| FetchError::Html {
                    url: final_url.to_string(),
                    detail,
                })?
        }
        Kind::Json => serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned()),
        Kind::Text | Kind::Binary | Kind::Unknown => String::from_utf8_lossy(body).into_owned(),
    })
}

/// Parses a URL the model gave, accepting only http and https.
fn parse_url(raw: &str) -> Result<Url, FetchError> {
    let raw = raw.trim();
    let url = Url::parse(raw).map_err(|e| FetchError::InvalidUrl {
        url: raw.to_string(),
        reason: match e {
            url::ParseError::RelativeUrlWithoutBase => {
                "it has no scheme; give an absolute URL such as https://example.com/".into()
            }
            other => other.to_string(),
        },
    })?;
    match url.scheme() {
        "http" | "https" => {}
        scheme => {
            return Err(FetchError::Scheme {
                url: raw.to_string(),
                scheme: scheme.to_string(),
            });
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(FetchError::InvalidUrl {
            url: raw.to_string(),
            reason: "it has no host".into(),
        });
    }
    Ok(url)
}

/// The host (and port, when one is written) of a URL, for error messages.
fn host_of(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

/// The causes below a reqwest error, which carry the useful part ("Connection refused").
fn causes(e: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        // hyper's wrapper ("client error (Connect)") says nothing its causes do not.
        if !text.starts_with("client error (") && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    if parts.is_empty() {
        e.to_string()
    } else {
        parts.join(": ")
    }
}

/// Reads the body, stopping once `cap` bytes are in; says whether more was left unread.
async fn read_capped(
    response: &mut reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            // Do not leave half a character at the cut.
            if let Err(e) = std::str::from_utf8(&body)
                && e.error_len().is_none()
            {
                body.truncate(e.valid_up_to());
            }
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// A short, readable quote of an error page.
fn excerpt(body: &[u8], kind: Kind, url: &Url) -> String {
    let text = String::from_utf8_lossy(body);
    let text = match kind {
        Kind::Html => html::to_markdown(&text, url).unwrap_or_else(|_| text.to_string()),
        Kind::Unknown if Kind::sniff(body) == Kind::Binary => return String::new(),
        _ => text.into_owned(),
    };
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return String::new();
    }
    let mut quote: String = flat.chars().take(ERROR_EXCERPT_CHARS).collect();
    if quote.len() < flat.len() {
        quote.push_str(" ...");
    }
    format!(": {quote}")
}

/// Cuts text to `max` characters, saying how much was cut.
fn cap_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((end, _)) => {
            let total = text.chars().count();
            format!(
                "{}\n\n[... {} of {total} characters cut here (the tool's `max_chars` is {max})]",
                &text[..end],
                total - max
            )
        }
    }
}

//! The OpenAI-compatible chat-completions provider: OpenAI itself, and the many servers
//! that speak its streaming protocol (Ollama, vLLM, llama.cpp, DeepSeek, OpenRouter, ...).
//!
//! Requests are built with async-openai's types and streamed through its byte-level entry
//! point into our own lenient chunk types ([`chunk`]); the HTTP layer under it is ours
//! ([`service`]) and so are the retries ([`call`]), which honour `Retry-After`.

mod accumulate;
mod call;
mod chunk;
mod failure;
mod request;
mod service;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use async_openai::config::OpenAIConfig;

use crate::config::ToolCallFormat;

use super::{ModelEvent, ModelRequest, Provider, ProviderError, ReplyFuture};

/// Everything the OpenAI-compatible provider needs: where to send calls, with which key and
/// model, and how patiently. Built by `provider::resolve_model` from the configuration.
#[derive(Clone, PartialEq)]
pub struct OpenAiSettings {
    /// The endpoint's base URL, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// The API key; local servers need none. Never printed (see the `Debug` impl).
    pub api_key: Option<String>,
    /// The model identifier sent to the endpoint.
    pub model: String,
    /// The most tokens one answer may take, unless the request says otherwise.
    pub max_tokens: Option<u32>,
    /// Sampling temperature; the server's default when absent.
    pub temperature: Option<f32>,
    /// How long to wait for the response headers of one attempt.
    pub request_timeout: Duration,
    /// The longest the stream may send nothing at all (SSE comments count).
    pub stream_idle_timeout: Duration,
    /// The longest the stream may send only comments before its first chunk.
    pub first_chunk_timeout: Duration,
    /// The longest one call may take in all, its retries included.
    pub call_timeout: Duration,
    /// How often a failed call is tried again.
    pub max_retries: u32,
    /// The first retry's backoff ceiling; it doubles per retry.
    pub backoff_base: Duration,
    /// The most any backoff ceiling grows to.
    pub backoff_cap: Duration,
    /// How tool calls come back.
    pub tool_call_format: ToolCallFormat,
}

impl OpenAiSettings {
    /// How long a request may wait for its stream to open (a slow local model reads a long
    /// prompt first).
    pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
    /// How long a stream may stay silent (keep-alive comments count) before it is retried.
    pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
    /// The default first chunk timeout: generous, since a local server reading a long
    /// prompt on a CPU sends only keep-alives until it is done.
    pub const DEFAULT_FIRST_CHUNK_TIMEOUT: Duration = Duration::from_secs(10 * 60);
    /// The default bound on one call.
    pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30 * 60);
    /// Tries after the first, for errors worth retrying: four attempts at most.
    pub const DEFAULT_MAX_RETRIES: u32 = 3;

    /// Settings for `model` at `base_url` with no key and the default limits.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            max_tokens: None,
            temperature: None,
            request_timeout: Self::DEFAULT_REQUEST_TIMEOUT,
            stream_idle_timeout: Self::DEFAULT_STREAM_IDLE_TIMEOUT,
            first_chunk_timeout: Self::DEFAULT_FIRST_CHUNK_TIMEOUT,
            call_timeout: Self::DEFAULT_CALL_TIMEOUT,
            max_retries: Self::DEFAULT_MAX_RETRIES,
            backoff_base: Duration::from_millis(500),
            backoff_cap: Duration::from_secs(30),
            tool_call_format: ToolCallFormat::Native,
        }
    }
}

impl fmt::Debug for OpenAiSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiSettings")
            .field("base_url", &display_endpoint(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .field("request_timeout", &self.request_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("first_chunk_timeout", &self.first_chunk_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff_base", &self.backoff_base)
            .field("backoff_cap", &self.backoff_cap)
            .finish()
    }
}

/// A chat model behind an OpenAI-compatible `/chat/completions` endpoint.
pub struct OpenAiProvider {
    settings: OpenAiSettings,
    /// The base URL without credentials or query, for errors and logs.
    endpoint: String,
    http: reqwest::Client,
    config: OpenAIConfig,
    /// Numbers the ids of tool calls the server sent without one.
    ids: AtomicU64,
}

impl OpenAiProvider {
    /// How its tool calls come back.
    pub fn tool_call_format(&self) -> ToolCallFormat {
        self.settings.tool_call_format
    }

    /// Checks the base URL and prepares the HTTP client; nothing is sent yet.
    pub fn new(settings: OpenAiSettings) -> Result<Self, ProviderError> {
        let endpoint = display_endpoint(&settings.base_url);
        let invalid = |message: String| ProviderError::Transport {
            endpoint: endpoint.clone(),
            message,
        };
        let base = settings.base_url.trim().trim_end_matches('/');
        match reqwest::Url::parse(base) {
            Ok(url) if matches!(url.scheme(), "http" | "https") => {}
            _ => {
                return Err(invalid(String::from(
                    "the base URL is not an http(s) URL (e.g. http://localhost:11434/v1)",
                )));
            }
        }
        let http = crate::base::http::http_client()
            .map_err(|error| invalid(format!("cannot build the HTTP client: {error}")))?;
        // Every value is set explicitly: `OpenAIConfig::new()` reads OPENAI_* variables,
        // and a key meant for OpenAI must not reach another server.
        let config = OpenAIConfig::new()
            .with_api_base(base)
            .with_api_key(settings.api_key.clone().unwrap_or_default())
            .with_org_id("")
            .with_project_id("");
        Ok(Self {
            settings,
            endpoint,
            http,
            config,
            // Seeded from the clock, so ids generated for servers that send none stay
            // unique across processes and providers of one thread.
            ids: AtomicU64::new(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_micros() as u64)
                    << 16,
            ),
        })
    }
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Provider for OpenAiProvider {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a (dyn Fn(ModelEvent) + Send + Sync),
    ) -> ReplyFuture<'a> {
        Box::pin(self.run(request, events))
    }

    fn model(&self) -> &str {
        &self.settings.model
    }

    fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

/// A base URL as shown in errors and logs: without userinfo, query or fragment.
pub(crate) fn display_endpoint(base_url: &str) -> String {
    let trimmed = base_url.trim();
    let without_query = trimmed.split(['?', '#']).next().unwrap_or_default();
    let shown = match without_query.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => without_query.to_string(),
    };
    shown.trim_end_matches('/').to_string()
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn endpoints_lose_credentials_and_queries() {
        assert_eq!(
            display_endpoint("https://user:pw@api.example.com/v1/?key=abc#x"),
            "https://api.example.com/v1"
        );
        assert_eq!(
            display_endpoint("http://localhost:11434/v1"),
            "http://localhost:11434/v1"
        );
        assert_eq!(display_endpoint("http://a@b@host"), "http://host");
        assert_eq!(display_endpoint("not a url?x=1"), "not a url");
    }

    #[test]
    fn debug_output_redacts_the_key() {
        let mut settings = OpenAiSettings::new("http://u:pw@localhost:1/v1", "m");
        settings.api_key = Some(String::from("sk-very-secret"));
        let provider = OpenAiProvider::new(settings.clone()).unwrap();
        for text in [format!("{settings:?}"), format!("{provider:?}")] {
            assert!(!text.contains("sk-very-secret"), "{text}");
            assert!(!text.contains("pw"), "{text}");
            assert!(text.contains("<redacted>"), "{text}");
        }
        assert_eq!(provider.endpoint(), "http://localhost:1/v1");
        assert_eq!(provider.model(), "m");
    }

    #[test]
    fn a_base_url_without_scheme_is_rejected() {
        let error = OpenAiProvider::new(OpenAiSettings::new("localhost:11434/v1", "m"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("not an http(s) URL"), "{error}");
    }
}

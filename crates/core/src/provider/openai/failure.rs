//! Why one attempt failed, whether that is worth another try, and how long to wait first.

use std::time::Duration;

use async_openai::error::{OpenAIError, StreamError};

use super::service::HttpStatusError;
use crate::provider::ProviderError;

/// The HTTP statuses that mean "try again later" rather than "this request is wrong".
const RETRYABLE_STATUSES: &[u16] = &[408, 409, 429, 500, 502, 503, 504, 529];

/// The longest wait a server's `Retry-After` may impose.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

/// One failed attempt, before it is known whether another follows.
#[derive(Debug, thiserror::Error)]
pub(super) enum AttemptError {
    /// The server answered with an error status.
    #[error("HTTP {}: {}", .0.status, .0.message)]
    Status(HttpStatusError),
    /// The request could not be sent or the connection broke.
    #[error("{message}")]
    Transport {
        /// What went wrong.
        message: String,
        /// Whether a new connection may fare better.
        retryable: bool,
    },
    /// No response headers arrived in time.
    #[error("no response within {0:?} (request timeout)")]
    RequestTimeout(Duration),
    /// The stream stalled between two chunks.
    #[error("the stream sent nothing for {0:?} (stream idle timeout)")]
    IdleTimeout(Duration),
    /// The stream sent only keep-alive comments for too long before its first chunk.
    #[error(
        "the stream sent only keep-alive comments for {0:?}, no reply (first chunk timeout: \
         the model's first_chunk_timeout_seconds)"
    )]
    FirstChunkTimeout(Duration),
    /// The stream ended before `[DONE]` or a finish reason.
    #[error("the stream ended before the reply was complete")]
    CutStream,
    /// The server reported an error inside the stream.
    #[error("the server reported an error mid-stream: {0}")]
    MidStream(String),
    /// The stream was not a chat-completions stream.
    #[error("{0}")]
    Protocol(String),
}

impl AttemptError {
    /// Classifies an error from the async-openai client.
    pub(super) fn from_client(error: OpenAIError) -> Self {
        match error {
            OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpStatusError>() {
                Ok(status) => Self::Status(*status),
                Err(other) => Self::Transport {
                    message: other.to_string(),
                    retryable: true,
                },
            },
            OpenAIError::Reqwest(error) => Self::from_reqwest(error),
            OpenAIError::StreamError(stream) => match *stream {
                StreamError::EventStream(message) => Self::Transport {
                    message: format!("the stream broke: {message}"),
                    retryable: true,
                },
                StreamError::UnknownEvent(event) => {
                    Self::Protocol(format!("unexpected event `{}`", event.event))
                }
            },
            OpenAIError::JSONDeserialize(error, _) => {
                Self::Protocol(format!("a chunk could not be read: {error}"))
            }
            other => Self::Protocol(other.to_string()),
        }
    }

    /// Classifies a transport error; its URL is dropped (it may carry a query secret).
    pub(super) fn from_reqwest(error: reqwest::Error) -> Self {
        let retryable = !error.is_builder();
        let message = crate::base::describe::error_chain(&error.without_url());
        Self::Transport { message, retryable }
    }

    /// Whether another attempt may succeed.
    pub(super) fn is_retryable(&self) -> bool {
        match self {
            Self::Status(status) => RETRYABLE_STATUSES.contains(&status.status),
            Self::Transport { retryable, .. } => *retryable,
            Self::RequestTimeout(_)
            | Self::IdleTimeout(_)
            | Self::FirstChunkTimeout(_)
            | Self::CutStream => true,
            Self::MidStream(_) => true,
            Self::Protocol(_) => false,
        }
    }

    /// The wait the server asked for, capped.
    pub(super) fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Status(status) => status.retry_after.map(|d| d.min(RETRY_AFTER_CAP)),
            _ => None,
        }
    }

    /// The final error, naming the endpoint; `secret` is scrubbed from every message.
    pub(super) fn into_provider_error(
        self,
        endpoint: &str,
        tries: u32,
        secret: Option<&str>,
    ) -> ProviderError {
        let endpoint = endpoint.to_string();
        let after = if tries > 1 {
            format!(" (after {tries} tries)")
        } else {
            String::new()
        };
        match self {
            Self::Status(status) => ProviderError::Status {
                endpoint,
                status: status.status,
                message: format!("{}{after}", scrub(&status.message, secret)),
            },
            Self::Protocol(message) | Self::MidStream(message) => ProviderError::Protocol {
                endpoint,
                message: format!("{}{after}", scrub(&message, secret)),
            },
            other => {
                let message = scrub(&other.to_string(), secret);
                let hint = if unreachable(&message) {
                    format!(
                        ": nothing answers at {endpoint}; start its server, or point the \
                         model's `base_url` (config.yaml) or OPENAI_BASE_URL at one (`-m \
                         embedded` needs none)"
                    )
                } else {
                    String::new()
                };
                ProviderError::Transport {
                    endpoint,
                    message: format!("{message}{after}{hint}"),
                }
            }
        }
    }
}

/// Whether a transport error means no server is there (refused, or the name unknown).
fn unreachable(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    [
        "connection refused",
        "dns error",
        "failed to lookup address",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

/// Replaces every occurrence of `secret` in `text`: a server may echo the key it was sent.
pub(super) fn scrub(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if !secret.is_empty() => text.replace(secret, "<redacted>"),
        _ => text.to_string(),
    }
}

/// How long to wait before attempt `retry` (1 for the first retry): the server's
/// `Retry-After` when it sent one, else exponential backoff with full jitter.
pub(super) fn backoff_delay(
    retry: u32,
    base: Duration,
    cap: Duration,
    retry_after: Option<Duration>,
) -> Duration {
    if let Some(wait) = retry_after {
        return wait;
    }
    let factor = 2u32.saturating_pow(retry.saturating_sub(1));
    let ceiling = base.saturating_mul(factor).min(cap);
    ceiling.mul_f64(fastrand::f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_stays_under_its_ceiling_and_honours_retry_after() {
        let base = Duration::from_millis(500);
        let cap = Duration::from_secs(30);
        for retry in 1..=12 {
            let ceiling = base.saturating_mul(2u32.pow(retry - 1)).min(cap);
            for _ in 0..20 {
                assert!(backoff_delay(retry, base, cap, None) <= ceiling);
            }
        }
        assert!(backoff_delay(40, base, cap, None) <= cap);
        let wait = Some(Duration::from_secs(7));
        assert_eq!(backoff_delay(1, base, cap, wait), Duration::from_secs(7));
    }

    #[test]
    fn statuses_are_classified() {
        let status = |code| {
            AttemptError::Status(HttpStatusError {
                status: code,
                retry_after: Some(Duration::from_secs(600)),
                message: String::from("m"),
            })
        };
        for code in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(status(code).is_retryable(), "{code}");
        }
        for code in [400, 401, 403, 404, 422] {
            assert!(!status(code).is_retryable(), "{code}");
        }
        assert_eq!(status(429).retry_after(), Some(RETRY_AFTER_CAP));
        assert!(AttemptError::CutStream.is_retryable());
        assert!(!AttemptError::Protocol(String::from("x")).is_retryable());
    }

    #[test]
    fn final_errors_name_the_endpoint_and_scrub_the_key() {
        let error = AttemptError::Status(HttpStatusError {
            status: 401,
            retry_after: None,
            message: String::from("bad key sk-123"),
        })
        .into_provider_error("http://h/v1", 1, Some("sk-123"));
        assert_eq!(
            error.to_string(),
            "http://h/v1: HTTP 401: bad key <redacted>"
        );
        let error = AttemptError::CutStream.into_provider_error("http://h/v1", 4, None);
        assert_eq!(
            error.to_string(),
            "http://h/v1: the stream ended before the reply was complete (after 4 tries)"
        );
        let refused = AttemptError::Transport {
            message: String::from("error sending request: tcp connect error: Connection refused"),
            retryable: true,
        }
        .into_provider_error("http://localhost:11434/v1", 4, None);
        assert!(
            refused.to_string().ends_with(
                "Connection refused (after 4 tries): nothing answers at \
                 http://localhost:11434/v1; start its server, or point the model's `base_url` \
                 (config.yaml) or OPENAI_BASE_URL at one (`-m embedded` needs none)"
            ),
            "{refused}"
        );
    }
}

//! What a streamable-HTTP server's last 401 or 403 said, read by type as rmcp's HTTP client
//! reports it (`StreamableHttpError::AuthRequired` / `InsufficientScope`) on its way into
//! rmcp's worker, which passes errors on only as text. Whoever sees a request fail (the
//! handshake, a listing, a call) asks [`Challenges::last`] why, and tells the user to sign
//! in, or to grant the scope the server asked for, in words that do not depend on rmcp's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;

use crate::config::{Grant, McpServerConfig};
use crate::mcp::McpError;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

/// What the server asked for when it refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    /// 401: it needs a (new) sign-in.
    SignIn,
    /// 403 `insufficient_scope`: a token with these scopes (as the challenge names them;
    /// empty when it names none).
    Scope(Vec<String>),
}

/// The last challenge of one connection.
#[derive(Debug, Clone, Default)]
pub(crate) struct Challenges(Arc<Mutex<Option<Challenge>>>);

impl Challenges {
    /// The last challenge, if a request was refused for want of authorization.
    pub(crate) fn last(&self) -> Option<Challenge> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Why the server refused, when a request failed for want of authorization (a 401, or a
    /// 403 for more scope): the advice to sign in, or why signing in again will not help.
    /// A demand for scope is kept for the next `antler mcp login`.
    pub(crate) fn refusal(
        &self,
        config: &McpServerConfig,
        tokens: Option<&super::TokenStore>,
    ) -> Option<McpError> {
        let name = config.name.clone();
        let by_grant = config
            .oauth
            .as_ref()
            .is_some_and(|o| o.grant != Grant::AuthorizationCode);
        match self.last()? {
            // No login helps a token antler got without one.
            _ if by_grant => Some(McpError::Connect(String::from(
                "the server refused the token of the grant the `oauth` object names (check \
                 the client's scopes and registration with the authorization server)",
            ))),
            Challenge::SignIn => Some(McpError::LoginNeeded(name)),
            Challenge::Scope(scopes) => {
                let url = config.url.as_deref()?;
                let demand = tokens.map(|tokens| tokens.demand_scopes(url, &scopes));
                let scope = crate::base::text::short_line(&scopes.join(" "), 200).0;
                Some(match demand {
                    Some(Ok(demand)) if demand.sign_ins >= super::MAX_STEP_UPS => {
                        McpError::ScopeRefused {
                            server: name,
                            scope,
                            sign_ins: demand.sign_ins,
                        }
                    }
                    Some(Err(err)) => McpError::OAuth {
                        server: name,
                        reason: err.to_string(),
                    },
                    _ => McpError::ScopeNeeded {
                        server: name,
                        scope,
                    },
                })
            }
        }
    }

    fn clear(&self) {
        let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if last.is_some() {
            *last = None;
        }
    }

    fn note<E: std::error::Error + Send + Sync + 'static>(&self, error: &StreamableHttpError<E>) {
        let challenge = match error {
            StreamableHttpError::AuthRequired(_) => Challenge::SignIn,
            // rmcp takes every 403 with a challenge for this; only `insufficient_scope`
            // asks for scope (RFC 6750 §3.1).
            StreamableHttpError::InsufficientScope(refused)
                if refused
                    .www_authenticate_header
                    .contains("insufficient_scope") =>
            {
                Challenge::Scope(
                    refused
                        .required_scope
                        .as_deref()
                        .or_else(|| scope_of(&refused.www_authenticate_header))
                        .map(|s| s.split_whitespace().map(str::to_string).collect())
                        .unwrap_or_default(),
                )
            }
            _ => return,
        };
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(challenge);
    }
}

/// The `scope` parameter of a `WWW-Authenticate` value (RFC 6750 §3): the first
/// `scope=` that starts a parameter (not `xscope=`).
fn scope_of(header: &str) -> Option<&str> {
    let at = header.match_indices("scope=").find_map(|(at, _)| {
        let before = header[..at].chars().next_back();
        matches!(before, None | Some(' ' | ',')).then_some(at)
    })?;
    let rest = &header[at + "scope=".len()..];
    match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next(),
        None => rest.split([',', ' ']).next(),
    }
}

/// An HTTP client that notes the server's challenges in [`Challenges`].
#[derive(Clone)]
pub(crate) struct Watched<C> {
    inner: C,
    challenges: Challenges,
}

impl<C> Watched<C> {
    /// `inner`, its challenges noted in `challenges`.
    pub(crate) fn new(inner: C, challenges: Challenges) -> Self {
        Self { inner, challenges }
    }

    /// Notes a refusal; a request that went through clears the last one, so that a later
    /// failure of another kind is not taken for it.
    fn noted<T, E: std::error::Error + Send + Sync + 'static>(
        &self,
        result: Result<T, StreamableHttpError<E>>,
    ) -> Result<T, StreamableHttpError<E>> {
        match &result {
            Err(error) => self.challenges.note(error),
            Ok(_) => self.challenges.clear(),
        }
        result
    }
}

type SseStream = BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>;

impl<C> StreamableHttpClient for Watched<C>
where
    C: StreamableHttpClient + Send + Sync,
{
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let result = self
            .inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        self.noted(result)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let result = self
            .inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.noted(result)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let result = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        self.noted(result)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        let result = self
            .inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await;
        self.noted(result)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<SseStream, StreamableHttpError<Self::Error>> {
        let result = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await;
        self.noted(result)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<SseStream, StreamableHttpError<Self::Error>> {
        let result = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        self.noted(result)
    }
}

#[cfg(test)]
mod tests {
    use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};

    use super::*;

    #[test]
    fn challenges_are_read_by_type() {
        let challenges = Challenges::default();
        assert_eq!(challenges.last(), None);
        let other: StreamableHttpError<std::io::Error> = StreamableHttpError::SessionExpired;
        challenges.note(&other);
        assert_eq!(challenges.last(), None, "not a challenge");
        challenges.note(&StreamableHttpError::<std::io::Error>::AuthRequired(
            AuthRequiredError::new(String::from("Bearer")),
        ));
        assert_eq!(challenges.last(), Some(Challenge::SignIn));
        challenges.note(&StreamableHttpError::<std::io::Error>::InsufficientScope(
            InsufficientScopeError::new(
                String::from(
                    r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="x""#,
                ),
                None,
            ),
        ));
        assert_eq!(
            challenges.last(),
            Some(Challenge::Scope(vec!["a".into(), "b".into()]))
        );
    }

    #[test]
    fn a_403_that_asks_for_no_scope_is_no_demand_and_success_clears_a_refusal() {
        let challenges = Challenges::default();
        challenges.note(&StreamableHttpError::<std::io::Error>::InsufficientScope(
            InsufficientScopeError::new(String::from(r#"Bearer error="invalid_token""#), None),
        ));
        assert_eq!(challenges.last(), None);
        challenges.note(&StreamableHttpError::<std::io::Error>::AuthRequired(
            AuthRequiredError::new(String::from("Bearer")),
        ));
        challenges.clear();
        assert_eq!(challenges.last(), None);
    }

    #[test]
    fn the_scope_parameter_quoted_or_not() {
        assert_eq!(scope_of(r#"Bearer xscope="no", scope="x y""#), Some("x y"));
        assert_eq!(scope_of(r#"Bearer scope="x y", error="e""#), Some("x y"));
        assert_eq!(scope_of("Bearer scope=x, error=e"), Some("x"));
        assert_eq!(scope_of("Bearer error=e"), None);
    }
}

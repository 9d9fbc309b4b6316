//! Where a server's authorization server is and what it says of itself: the server's
//! challenge, asked for with an unauthenticated `initialize`; rmcp's discovery from it
//! (RFC 9728, RFC 8414 / OIDC); the 2025-03-26 fallback to the server's own origin; and,
//! for the grants without a browser, the check that credentials go only to the issuer's
//! own token endpoint.

use std::time::Duration;

use rmcp::transport::auth::{AuthError, AuthorizationManager, AuthorizationMetadata};

use super::{OAuthError, flow};
use crate::config::McpServerConfig;

/// How long the request that asks the server for its challenge may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The authorization server's metadata, found from `challenge` (or the well-known places)
/// by rmcp; or, for a 2025-03-26 server with no protected resource metadata, the document
/// at the root of the server's own origin even when its `issuer` names another path of
/// that origin (the revision's discovery has the MCP server be its own authorization
/// server, and such servers put their OAuth endpoints under a path).
pub(super) async fn discover(
    manager: &AuthorizationManager,
    config: &McpServerConfig,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, OAuthError> {
    let url = config.url.as_deref().unwrap_or_default();
    let metadata = match manager.resolve_metadata_from_challenge(challenge).await {
        Ok(resolution) => Ok(resolution.metadata),
        Err(AuthError::AuthorizationServerMismatch { .. }) => {
            let found = same_origin_metadata(url).await;
            found.ok_or_else(|| {
                OAuthError::Flow(String::from(
                    "the authorization server's metadata names another issuer than the \
                     address it was found at",
                ))
            })
        }
        Err(err) => Err(flow(err)),
    }?;
    let pinned = config.oauth.as_ref().and_then(|o| o.issuer.as_deref());
    let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
    match (pinned, metadata.issuer.as_deref()) {
        (Some(pin), Some(found)) if same(pin, found) => Ok(metadata),
        (Some(pin), found) => Err(OAuthError::Flow(format!(
            "the server sends antler to the authorization server {}, not to {pin}, the \
             `issuer` its `oauth` object names; nothing was sent there",
            crate::base::text::short_line(found.unwrap_or("(no issuer)"), 120).0
        ))),
        (None, _) => Ok(metadata),
    }
}

/// The client id of a grant without a browser, and the metadata of the authorization
/// server of the server at `url`.
pub(super) async fn client_and_server<'a>(
    config: &McpServerConfig,
    oauth: &'a crate::config::OAuthSettings,
) -> Result<(&'a str, AuthorizationMetadata), OAuthError> {
    let url = config.url.as_deref().unwrap_or_default();
    let client_id = oauth
        .client_id
        .as_deref()
        .ok_or_else(|| OAuthError::Flow(String::from("the `oauth` object has no client_id")))?;
    crate::base::http::install_crypto_provider();
    let manager = AuthorizationManager::new(url).await.map_err(flow)?;
    let metadata = discover(&manager, config, None).await?;
    // The client's secret, its assertion (addressed to the issuer) or an identity
    // assertion goes to the token endpoint: it must be the issuer's own, over TLS (or on
    // this machine), or a server's metadata could name a real issuer and collect what is
    // meant for it.
    let issuer = metadata.issuer.as_deref().ok_or_else(|| {
        OAuthError::Flow(String::from(
            "the authorization server's metadata names no issuer",
        ))
    })?;
    let origin = |address: &str| url::Url::parse(address).ok().map(|u| u.origin());
    let endpoint = &metadata.token_endpoint;
    if origin(issuer).is_none() || origin(issuer) != origin(endpoint) || !secure(endpoint) {
        return Err(OAuthError::Flow(format!(
            "the token endpoint {} is not an https address of the issuer {}; antler sends \
             no credentials there",
            crate::base::text::short_line(endpoint, 120).0,
            crate::base::text::short_line(issuer, 120).0
        )));
    }
    Ok((client_id, metadata))
}

/// `https`, or `http` to this machine, without a user or a fragment.
pub(super) fn secure(address: &str) -> bool {
    let Ok(parsed) = url::Url::parse(address) else {
        return false;
    };
    let loopback = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name == "localhost",
        None => false,
    };
    let scheme_ok = match parsed.scheme() {
        "https" => true,
        "http" => loopback,
        _ => false,
    };
    scheme_ok
        && parsed.username().is_empty()
        && parsed.password().is_none()
        && parsed.fragment().is_none()
}

/// The metadata at `{origin}/.well-known/oauth-authorization-server` of the server at
/// `url`, if its issuer and its endpoints are all on that origin.
async fn same_origin_metadata(url: &str) -> Option<AuthorizationMetadata> {
    let server = url::Url::parse(url).ok()?;
    let origin = server.origin();
    let document = server
        .join("/.well-known/oauth-authorization-server")
        .ok()?;
    let client = crate::base::http::http_client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(PROBE_TIMEOUT)
        .build()
        .ok()?;
    let answer = client.get(document).send().await.ok()?;
    if !answer.status().is_success() {
        return None;
    }
    let body = read_capped(answer, MAX_DOCUMENT_BYTES).await.ok()?;
    let metadata: AuthorizationMetadata = serde_json::from_slice(&body).ok()?;
    let on_origin = |address: &str| url::Url::parse(address).is_ok_and(|u| u.origin() == origin);
    let all_here = on_origin(metadata.issuer.as_deref()?)
        && on_origin(&metadata.authorization_endpoint)
        && on_origin(&metadata.token_endpoint)
        && metadata
            .registration_endpoint
            .as_deref()
            .is_none_or(on_origin);
    all_here.then_some(metadata)
}

/// A larger metadata document or token response is refused.
pub(super) const MAX_DOCUMENT_BYTES: usize = 64 * 1024;

/// The body of `answer`, read a piece at a time and refused past `limit` bytes (a server
/// that sends without end costs that much, not the machine's memory).
pub(super) async fn read_capped(
    mut answer: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, OAuthError> {
    let mut body = Vec::new();
    while let Some(chunk) = answer.chunk().await.map_err(flow)? {
        if body.len() + chunk.len() > limit {
            return Err(OAuthError::Flow(format!(
                "the answer of {} is larger than {limit} bytes",
                crate::base::text::short_line(answer.url().as_str(), 120).0
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The server's challenge: the `WWW-Authenticate` of its answer to an unauthenticated
/// `initialize` (a 401 or 403), where discovery and the scopes to ask for start (RFC 9728
/// §5.1). `None` when it answers otherwise; discovery then probes the well-known places.
pub(super) async fn probe(config: &McpServerConfig, url: &str) -> Option<String> {
    let client = crate::base::http::http_client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(PROBE_TIMEOUT)
        .build()
        .ok()?;
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE.as_str(),
            "capabilities": {},
            "clientInfo": {"name": "antler", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let mut request = client
        .post(url)
        .header(http::header::ACCEPT, "application/json, text/event-stream")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(initialize.to_string());
    for (name, value) in &config.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let answer = request.send().await.ok()?;
    if !matches!(answer.status().as_u16(), 401 | 403) {
        return None;
    }
    let header = answer
        .headers()
        .get(http::header::WWW_AUTHENTICATE)?
        .to_str()
        .ok()?;
    // A challenge is a line; a longer one is not a challenge antler follows.
    (header.len() <= 4096).then(|| header.to_string())
}

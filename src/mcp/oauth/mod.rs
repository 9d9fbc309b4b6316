//! OAuth 2.1 for streamable-HTTP MCP servers, on rmcp's `auth` feature: `antler mcp
//! login NAME` discovers the server's authorization server (RFC 9728, RFC 8414 / OIDC),
//! registers antler dynamically (RFC 7591; antler hosts no client ID metadata document to
//! offer instead), sends the user's browser to the PKCE authorization URL, takes
//! the loopback redirect and keeps the tokens ([`TokenStore`]). A server with kept
//! credentials is connected through rmcp's `AuthClient`, which refreshes the access token
//! before it expires (and once on a 401) with the refresh token, keeping a rotated one.
//! Tokens and codes are never logged (rmcp's auth module is capped at `info` in the log
//! filter, see `main`) and never reach the model or a thread.

mod callback;
mod store;

use std::time::Duration;

use rmcp::transport::auth::{
    AuthClient, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
};

pub use store::{StoreError, TokenStore};

use crate::config::{McpServerConfig, TransportKind};

/// How long `antler mcp login` waits for the browser's redirect.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// Why a login, a logout or an authorized connection failed.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The server is not a streamable-HTTP server.
    #[error(
        "MCP server `{0}` is not a streamable HTTP server (`\"type\": \"http\"`); OAuth is for those"
    )]
    NotHttp(String),
    /// The server's entry sets its own `Authorization` header.
    #[error("MCP server `{0}` sets its own Authorization header; remove it to use OAuth")]
    OwnAuthorization(String),
    /// There is no data folder to keep tokens in.
    #[error("there is no data folder to keep OAuth tokens in (set HOME or XDG_DATA_HOME)")]
    NoDataFolder,
    /// Discovery, registration, the exchange or a refresh failed (rmcp's words).
    #[error("{0}")]
    Flow(String),
    /// The loopback listener failed.
    #[error("the sign-in redirect: {0}")]
    Callback(String),
    /// The authorization server refused.
    #[error("the authorization server refused the sign-in: {0}")]
    Denied(String),
    /// Nobody completed the sign-in in time.
    #[error("no sign-in within {}s", .0.as_secs())]
    Timeout(Duration),
    /// The tokens file.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn flow(err: impl std::fmt::Display) -> OAuthError {
    OAuthError::Flow(err.to_string())
}

/// The server's URL, if OAuth can apply to it.
fn oauth_url(config: &McpServerConfig) -> Result<&str, OAuthError> {
    if config.transport != TransportKind::Http {
        return Err(OAuthError::NotHttp(config.name.clone()));
    }
    if config
        .headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"))
    {
        return Err(OAuthError::OwnAuthorization(config.name.clone()));
    }
    config
        .url
        .as_deref()
        .ok_or_else(|| OAuthError::NotHttp(config.name.clone()))
}

/// Signs antler in to the server of `config`: `show` is given the URL the user must open
/// (and, with `open_browser`, the system's browser is asked to open it); returns once the
/// tokens are kept.
pub async fn login(
    config: &McpServerConfig,
    tokens: &TokenStore,
    show: &(dyn Fn(&str) + Sync),
    open_browser: bool,
) -> Result<(), OAuthError> {
    let url = oauth_url(config)?;
    // rmcp's OAuth requests go through reqwest's TLS set-up, which needs the provider.
    crate::http::install_crypto_provider();
    let mut manager = AuthorizationManager::new(url).await.map_err(flow)?;
    manager.set_credential_store(tokens.for_server(url));
    let resolution = manager.resolve_metadata().await.map_err(flow)?;
    manager.set_metadata(resolution.metadata);
    let callback = callback::Callback::bind().await?;
    let request = AuthorizationRequest::new(callback.redirect_uri())
        .with_client_name("antler")
        .with_initial_scope_selection();
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, err)| flow(err))?;
    let authorize = session.get_authorization_url().to_string();
    check_browser_url(&authorize)?;
    show(&authorize);
    if open_browser {
        open_in_browser(&authorize);
    }
    let state = url::Url::parse(&authorize)
        .ok()
        .and_then(|u| {
            u.query_pairs()
                .find(|(k, _)| k == "state")
                .map(|(_, v)| v.into_owned())
        })
        .ok_or_else(|| OAuthError::Flow(String::from("the sign-in address carries no state")))?;
    let redirected = callback.wait(LOGIN_TIMEOUT, &state).await?;
    session
        .handle_callback_url(&redirected)
        .await
        .map_err(flow)?;
    Ok(())
}

/// Forgets the tokens of the server of `config`; whether there were any. (The
/// authorization server is not told: rmcp has no revocation.)
pub fn logout(config: &McpServerConfig, tokens: &TokenStore) -> Result<bool, OAuthError> {
    let url = config
        .url
        .as_deref()
        .ok_or_else(|| OAuthError::NotHttp(config.name.clone()))?;
    Ok(tokens.remove(url)?)
}

/// The HTTP client for a server antler is signed in to (`None`: it is not): requests
/// carry its access token, refreshed when it is about to expire.
pub async fn authorized_client(
    config: &McpServerConfig,
    tokens: Option<&TokenStore>,
    client: reqwest::Client,
) -> Result<Option<AuthClient<reqwest::Client>>, OAuthError> {
    let (Some(tokens), Ok(url)) = (tokens, oauth_url(config)) else {
        return Ok(None);
    };
    if !tokens.has(url) {
        return Ok(None);
    }
    crate::http::install_crypto_provider();
    let mut manager = AuthorizationManager::new(url).await.map_err(flow)?;
    manager.set_credential_store(tokens.for_server(url));
    if !manager.initialize_from_store().await.map_err(flow)? {
        return Ok(None);
    }
    Ok(Some(AuthClient::new(client, manager)))
}

/// The authorization URL comes from the server's metadata: only `https`, or `http` to
/// this machine, is shown or opened (a `file:` or custom-scheme URL would run a handler).
fn check_browser_url(url: &str) -> Result<(), OAuthError> {
    let parsed = url::Url::parse(url).map_err(flow)?;
    let loopback = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name == "localhost",
        None => false,
    };
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(OAuthError::Flow(format!(
            "the authorization server's sign-in page is not an https address ({})",
            crate::text::short_line(url, 80).0
        ))),
    }
}

/// Asks the desktop to open `url`; quietly does nothing where there is none (the URL is
/// shown anyway).
fn open_in_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(err) = spawned {
        tracing::debug!("{opener}: {err}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_sign_in_pages_are_opened() {
        for good in [
            "https://auth.example/authorize?x=1",
            "http://127.0.0.1:9/authorize",
            "http://localhost/a",
        ] {
            assert!(check_browser_url(good).is_ok(), "{good}");
        }
        for bad in [
            "http://auth.example/authorize",
            "file:///etc/passwd",
            "smb://host/share",
            "x-handler:run",
        ] {
            assert!(check_browser_url(bad).is_err(), "{bad}");
        }
    }
}

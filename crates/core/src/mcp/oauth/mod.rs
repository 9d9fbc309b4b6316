//! OAuth 2.1 for streamable-HTTP MCP servers, on rmcp's `auth` feature: `antler mcp
//! login NAME` asks the server for its challenge (the `WWW-Authenticate` of a 401),
//! discovers its authorization server from it (RFC 9728, RFC 8414 / OIDC, the 2025-03-26
//! fallbacks), identifies antler as the entry's `oauth` object says — a client registered
//! in advance, a Client ID Metadata Document the user hosts, else dynamic registration
//! (RFC 7591) — sends the user's browser to the PKCE authorization URL, takes the loopback
//! redirect and keeps the tokens ([`TokenStore`]). A server with kept credentials is
//! connected through rmcp's `AuthClient`, which refreshes the access token before it
//! expires (and once on a 401) with the refresh token, keeping a rotated one. A server
//! that refuses a token for want of scope (403 `insufficient_scope`) has the scopes it
//! asked for kept ([`store::StepUp`]), and the next login asks for them too, at most
//! [`MAX_STEP_UPS`] times for one demand. The `client_credentials` grant needs no login:
//! a token is asked for at each connection ([`client_credentials`]).
//! Tokens and codes are never logged (rmcp's auth module is capped at `info` in the log
//! filter, see `main`) and never reach the model or a thread.

mod callback;
pub(crate) mod challenge;
mod client_credentials;
mod cross_app;
mod discovery;
mod jwt;
mod store;

use std::time::Duration;

use rmcp::transport::auth::{
    AuthClient, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
};

use discovery::{discover, probe, secure};

pub(crate) use store::{TokenStore, TokenStoreError};

use crate::config::{Grant, McpServerConfig, TransportKind};

/// How long `antler mcp login` waits for the browser's redirect.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// How many sign-ins antler asks for one demand of more scope: a server that still
/// refuses after that will not be satisfied by another.
pub(crate) const MAX_STEP_UPS: u32 = 2;

/// Why a login, a logout or an authorized connection failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OAuthError {
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
    /// The entry's grant needs no browser: there is nobody to sign in.
    #[error(
        "MCP server `{0}` gets its tokens by the grant its `oauth` object names, at each \
         connection: no sign-in needed"
    )]
    NoLogin(String),
    /// Nobody completed the sign-in in time.
    #[error("no sign-in within {}s", .0.as_secs())]
    Timeout(Duration),
    /// The credentials file could not be read or written.
    #[error(transparent)]
    Store(#[from] TokenStoreError),
}

/// rmcp's words for a failure, which may quote what a server sent: one escaped line, cut.
fn flow(err: impl std::fmt::Display) -> OAuthError {
    OAuthError::Flow(crate::base::text::short_line(&err.to_string(), 300).0)
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
pub(crate) async fn login(
    config: &McpServerConfig,
    tokens: &TokenStore,
    show: &(dyn Fn(&str) + Sync),
    open_browser: bool,
) -> Result<(), OAuthError> {
    let url = oauth_url(config)?;
    let settings = config.oauth.clone().unwrap_or_default();
    if !matches!(settings.grant, Grant::AuthorizationCode) {
        return Err(OAuthError::NoLogin(config.name.clone()));
    }
    // rmcp's OAuth requests go through reqwest's TLS set-up, which needs the provider.
    crate::base::http::install_crypto_provider();
    let challenge = probe(config, url).await;
    let mut manager = AuthorizationManager::new(url).await.map_err(flow)?;
    manager.set_credential_store(tokens.for_server(url));
    let metadata = discover(&manager, config, challenge.as_deref()).await?;
    manager.set_metadata(metadata);
    let callback = callback::Callback::bind().await?;
    let mut request = AuthorizationRequest::new(callback.redirect_uri())
        .with_client_name("antler")
        .with_initial_scope_selection();
    let step_up = tokens.step_up(url)?;
    let scopes = match &step_up {
        // A server that asked for more: what was configured or granted, and what it
        // asked for.
        Some(step_up) => union(
            &union(&settings.scopes, &granted(tokens, url)),
            &step_up.scopes,
        ),
        None => settings.scopes.clone(),
    };
    if !scopes.is_empty() {
        request = request.with_scopes(scopes);
    }
    if let Some(client_id) = &settings.client_id {
        request = request.with_preregistered_client(client_id);
        if let Some(secret) = &settings.client_secret {
            request = request.with_client_secret(secret);
        }
    }
    if let Some(document) = &settings.client_metadata_url {
        request = request.with_client_metadata_url(document);
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, err)| flow(err))?;
    let authorize = session.get_authorization_url().to_string();
    check_browser_url(&authorize)?;
    if step_up.is_some() {
        tokens.count_step_up(url)?;
    }
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

/// The scopes of the credentials kept for `url`.
fn granted(tokens: &TokenStore, url: &str) -> Vec<String> {
    tokens
        .load(url)
        .ok()
        .flatten()
        .map(|c| c.granted_scopes)
        .unwrap_or_default()
}

/// `a` then what `b` adds, each once.
fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut all = a.to_vec();
    for scope in b {
        if !all.contains(scope) {
            all.push(scope.clone());
        }
    }
    all
}

/// Forgets the tokens of the server of `config`; whether there were any. (The
/// authorization server is not told: rmcp has no revocation.)
pub(crate) fn logout(config: &McpServerConfig, tokens: &TokenStore) -> Result<bool, OAuthError> {
    let url = config
        .url
        .as_deref()
        .ok_or_else(|| OAuthError::NotHttp(config.name.clone()))?;
    Ok(tokens.remove(url)?)
}

/// How a connection to an OAuth server authorizes its requests.
pub(crate) enum Authorization {
    /// It does not: no tokens kept (a server that needs them answers 401).
    Anonymous,
    /// With the kept tokens, refreshed when they are about to expire.
    Signed(AuthClient<reqwest::Client>),
    /// With this access token of a grant without a browser, for this connection.
    Bearer(String),
}

/// How the connection to the server of `config` authorizes its requests.
pub(crate) async fn authorize(
    config: &McpServerConfig,
    tokens: Option<&TokenStore>,
    client: reqwest::Client,
) -> Result<Authorization, OAuthError> {
    let Ok(url) = oauth_url(config) else {
        return Ok(Authorization::Anonymous);
    };
    if let Some(settings) = &config.oauth {
        match &settings.grant {
            Grant::AuthorizationCode => {}
            Grant::ClientCredentials(key) => {
                let token =
                    client_credentials::access_token(config, url, settings, key.as_ref()).await?;
                return Ok(Authorization::Bearer(token));
            }
            Grant::CrossAppAccess(idp) => {
                let token = cross_app::access_token(config, url, settings, idp).await?;
                return Ok(Authorization::Bearer(token));
            }
        }
    }
    let Some(tokens) = tokens.filter(|t| t.has(url)) else {
        return Ok(Authorization::Anonymous);
    };
    crate::base::http::install_crypto_provider();
    let mut manager = AuthorizationManager::new(url).await.map_err(flow)?;
    manager.set_credential_store(tokens.for_server(url));
    if !manager.initialize_from_store().await.map_err(flow)? {
        return Ok(Authorization::Anonymous);
    }
    Ok(Authorization::Signed(AuthClient::new(client, manager)))
}

/// The authorization URL comes from the server's metadata: only `https`, or `http` to
/// this machine, is shown or opened (a `file:` or custom-scheme URL would run a handler).
fn check_browser_url(url: &str) -> Result<(), OAuthError> {
    match secure(url) {
        true => Ok(()),
        false => Err(OAuthError::Flow(format!(
            "the authorization server's sign-in page is not an https address ({})",
            crate::base::text::short_line(url, 80).0
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
            "https://user:pw@auth.example/authorize",
            "file:///etc/passwd",
            "smb://host/share",
            "x-handler:run",
        ] {
            assert!(check_browser_url(bad).is_err(), "{bad}");
        }
    }
}

//! Enterprise-managed authorization, MCP's cross-app access (SEP-990), on rmcp's
//! `enterprise` module: the user's ID token from their organisation's identity provider is
//! exchanged there for an identity assertion grant (ID-JAG, RFC 8693) bound to this server
//! and its authorization server, which that server takes for an access token (RFC 7523).
//! No browser: the organisation decided the user may reach the server. The token lives as
//! long as the connection.

use oauth2::ClientSecret;
use rmcp::transport::auth::default_oauth_http_client;
use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
};

use super::{OAuthError, flow};
use crate::config::{IdentityProvider, McpServerConfig, OAuthSettings};

/// An access token for the server at `url`, by way of the identity provider `idp`.
pub(super) async fn access_token(
    config: &McpServerConfig,
    url: &str,
    oauth: &OAuthSettings,
    idp: &IdentityProvider,
) -> Result<String, OAuthError> {
    let (client_id, metadata) = super::discovery::client_and_server(config, oauth).await?;
    // `client_and_server` made sure there is one, and that it owns the token endpoint.
    let issuer = metadata.issuer.clone().unwrap_or_default();
    let secret = |secret: &str, basic: bool| match basic {
        true => EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(secret.to_string())),
        false => EmaClientAuthentication::ClientSecretPost(ClientSecret::new(secret.to_string())),
    };
    let server_auth = match oauth.client_secret.as_deref() {
        Some(s) => secret(
            s,
            super::client_credentials::takes(&metadata, "client_secret_basic"),
        ),
        None => EmaClientAuthentication::None,
    };
    let idp_auth = match idp.client_secret.as_deref() {
        Some(s) => secret(s, true),
        None => EmaClientAuthentication::None,
    };
    let http = default_oauth_http_client().map_err(flow)?;
    let token = EmaExchangeRequest::new_with_id_token(
        EmaAuthorizationServer::new(&idp.issuer, &idp.token_endpoint, &idp.client_id)
            .with_client_authentication(idp_auth),
        EmaAuthorizationServer::new(issuer, &metadata.token_endpoint, client_id)
            .with_client_authentication(server_auth),
        url,
        &idp.id_token,
    )
    .with_scopes(oauth.scopes.iter().cloned())
    .exchange(&http, &http)
    .await
    .map_err(|err| OAuthError::Denied(err.to_string()))?;
    Ok(token.access_token.secret().clone())
}

//! The `client_credentials` grant (RFC 6749 §4.4, MCP's SEP-1046): a machine client (a CI
//! job) gets an access token with its own credentials, no browser and no person. The
//! authorization server is discovered as for a sign-in (rmcp's discovery); the token
//! request is antler's, with the secret in HTTP Basic (or the body, when the server
//! offers only that) or with a signed assertion ([`super::jwt`]). The token lives as long
//! as the connection: it is asked for again at the next one, and never written down.

use std::time::Duration;

use base64::Engine as _;
use rmcp::transport::auth::AuthorizationMetadata;
use serde::Deserialize;

use super::{OAuthError, flow};
use crate::config::{McpServerConfig, OAuthSettings, PrivateKey};

/// How long the token request may take.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);
/// A larger key file is refused (a PEM key is a few kilobytes).
const MAX_KEY_BYTES: u64 = 64 * 1024;

const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How the client proves itself at the token endpoint.
enum ClientAuth<'a> {
    /// `client_secret_basic`.
    Basic(&'a str),
    /// `client_secret_post`.
    Post(&'a str),
    /// `private_key_jwt`.
    Assertion(&'a PrivateKey),
}

/// An access token for the server at `url`, by the client's own credentials.
pub(super) async fn access_token(
    config: &McpServerConfig,
    url: &str,
    oauth: &OAuthSettings,
    key: Option<&PrivateKey>,
) -> Result<String, OAuthError> {
    let (client_id, metadata) = super::discovery::client_and_server(config, oauth).await?;
    let auth = client_auth(&metadata, oauth, key)?;
    let mut form: Vec<(&str, String)> = vec![
        ("grant_type", String::from("client_credentials")),
        ("resource", url.to_string()),
    ];
    if !oauth.scopes.is_empty() {
        form.push(("scope", oauth.scopes.join(" ")));
    }
    let client = crate::base::http::http_client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TOKEN_TIMEOUT)
        .build()
        .map_err(flow)?;
    let mut request = client.post(&metadata.token_endpoint);
    match auth {
        ClientAuth::Basic(secret) => {
            request = request.header(http::header::AUTHORIZATION, basic(client_id, secret));
        }
        ClientAuth::Post(secret) => {
            form.push(("client_id", client_id.to_string()));
            form.push(("client_secret", secret.to_string()));
        }
        ClientAuth::Assertion(key) => {
            form.push(("client_assertion_type", ASSERTION_TYPE.to_string()));
            form.push(("client_assertion", assertion(key, client_id, &metadata)?));
        }
    }
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&form)
        .finish();
    let answer = request
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body)
        .send()
        .await
        .map_err(flow)?;
    read_token(answer).await
}

/// RFC 6749 §2.3.1: each part form-encoded before Basic encoding.
fn basic(client_id: &str, secret: &str) -> String {
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", encode(client_id), encode(secret));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// A JWT signed with the client's key (`private_key_jwt`, RFC 7523), for this server only.
fn assertion(
    key: &PrivateKey,
    client_id: &str,
    metadata: &AuthorizationMetadata,
) -> Result<String, OAuthError> {
    let key_error = |err: &dyn std::fmt::Display| {
        OAuthError::Flow(format!(
            "the private key {}: {err}",
            crate::base::text::printable(&key.file.display().to_string())
        ))
    };
    let pem = crate::base::bounded_read::read_to_string(&key.file, MAX_KEY_BYTES, "private key")
        .map_err(|err| key_error(&err))?;
    let signer =
        super::jwt::Signer::from_pem(&pem, key.algorithm).map_err(|err| key_error(&err))?;
    // RFC 7523 §3: the audience is the authorization server (its issuer).
    let audience = metadata
        .issuer
        .clone()
        .unwrap_or_else(|| metadata.token_endpoint.clone());
    signer
        .assertion(client_id, &audience, crate::base::clock::now_secs())
        .map_err(flow)
}

/// The method the server takes, of those the settings can do: a key signs; a secret goes
/// in HTTP Basic unless the server lists only the body (RFC 8414: no list means Basic).
fn client_auth<'a>(
    metadata: &AuthorizationMetadata,
    oauth: &'a OAuthSettings,
    key: Option<&'a PrivateKey>,
) -> Result<ClientAuth<'a>, OAuthError> {
    let listed = |field: &str| -> Option<Vec<String>> {
        metadata.additional_fields.get(field).and_then(|v| {
            v.as_array().map(|a| {
                a.iter()
                    .filter_map(|m| m.as_str().map(str::to_string))
                    .collect()
            })
        })
    };
    if let Some(grants) = listed("grant_types_supported")
        && !grants.iter().any(|g| g == "client_credentials")
    {
        return Err(OAuthError::Flow(format!(
            "the authorization server does not offer the client_credentials grant (it offers {})",
            crate::base::text::short_line(&grants.join(", "), 200).0
        )));
    }
    let methods = listed("token_endpoint_auth_methods_supported");
    let offers = |method: &str| takes(metadata, method);
    let refused = |method: &str| {
        OAuthError::Flow(format!(
            "the authorization server does not take {method} (it takes {})",
            crate::base::text::short_line(&methods.as_deref().unwrap_or_default().join(", "), 200)
                .0
        ))
    };
    match (key, oauth.client_secret.as_deref()) {
        (Some(key), _) if offers("private_key_jwt") => Ok(ClientAuth::Assertion(key)),
        (Some(_), _) => Err(refused("private_key_jwt")),
        (None, Some(secret)) if offers("client_secret_basic") => Ok(ClientAuth::Basic(secret)),
        (None, Some(secret)) if offers("client_secret_post") => Ok(ClientAuth::Post(secret)),
        (None, Some(_)) => Err(refused("client_secret_basic or client_secret_post")),
        (None, None) => Err(OAuthError::Flow(String::from(
            "the `oauth` object has neither client_secret nor private_key_file",
        ))),
    }
}

/// Whether the token endpoint takes the client authentication `method` (one that lists
/// none is taken at its word for any).
pub(super) fn takes(metadata: &AuthorizationMetadata, method: &str) -> bool {
    metadata
        .additional_fields
        .get("token_endpoint_auth_methods_supported")
        .and_then(|v| v.as_array())
        .is_none_or(|methods| methods.iter().any(|m| m.as_str() == Some(method)))
}

/// The token endpoint's answer.
#[derive(Deserialize)]
struct TokenAnswer {
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

/// The access token of a token endpoint's answer, or its error in words.
async fn read_token(answer: reqwest::Response) -> Result<String, OAuthError> {
    let status = answer.status();
    let body = super::discovery::read_capped(answer, super::discovery::MAX_DOCUMENT_BYTES).await?;
    let parsed: Option<TokenAnswer> = serde_json::from_slice(&body).ok();
    match parsed {
        Some(TokenAnswer {
            access_token: Some(token),
            ..
        }) if status.is_success() && !token.is_empty() => Ok(token),
        Some(TokenAnswer {
            error: Some(error),
            error_description,
            ..
        }) => Err(OAuthError::Denied(format!(
            "{}{}",
            crate::base::text::short_line(&error, 80).0,
            error_description
                .map(|d| format!(": {}", crate::base::text::short_line(&d, 200).0))
                .unwrap_or_default()
        ))),
        _ => Err(OAuthError::Flow(format!(
            "the token endpoint answered {status} without an access token"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn metadata(extra: serde_json::Value) -> AuthorizationMetadata {
        let mut m = json!({
            "authorization_endpoint": "https://as.example/authorize",
            "token_endpoint": "https://as.example/token",
        });
        m.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(m).unwrap()
    }

    fn secret() -> OAuthSettings {
        OAuthSettings {
            client_id: Some("ci".into()),
            client_secret: Some("s".into()),
            ..OAuthSettings::default()
        }
    }

    #[test]
    fn a_secret_goes_in_basic_unless_only_the_body_is_offered() {
        let settings = secret();
        let basic = client_auth(&metadata(json!({})), &settings, None).unwrap();
        assert!(matches!(basic, ClientAuth::Basic("s")));
        let post =
            metadata(json!({"token_endpoint_auth_methods_supported": ["client_secret_post"]}));
        assert!(matches!(
            client_auth(&post, &settings, None).unwrap(),
            ClientAuth::Post("s")
        ));
        let none = metadata(json!({"token_endpoint_auth_methods_supported": ["none"]}));
        assert!(client_auth(&none, &settings, None).is_err());
        let no_grant = metadata(json!({"grant_types_supported": ["authorization_code"]}));
        let err = client_auth(&no_grant, &settings, None).err().unwrap();
        assert!(err.to_string().contains("client_credentials"), "{err}");
    }
}

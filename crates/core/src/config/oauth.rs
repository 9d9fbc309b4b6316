//! A server entry's `oauth` object: how antler signs in to a streamable-HTTP server when
//! dynamic registration is not what the user wants — a client registered in advance
//! (`client_id`, `client_secret`), the scopes to ask for, a Client ID Metadata Document
//! the user hosts (`client_metadata_url`), or, for machine-to-machine use with no browser,
//! the `client_credentials` grant with a secret or a private key (`private_key_jwt`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The checked `oauth` object of a server entry.
#[derive(Clone, PartialEq, Default)]
pub struct OAuthSettings {
    /// A client registered with the authorization server in advance.
    pub client_id: Option<String>,
    /// Its secret (a confidential client), usually `$NAME`.
    pub client_secret: Option<String>,
    /// The scopes to ask for instead of those the server suggests.
    pub scopes: Vec<String>,
    /// The HTTPS address of a Client ID Metadata Document the user hosts: the client id
    /// where the authorization server supports them (else dynamic registration).
    pub client_metadata_url: Option<String>,
    /// The only authorization server (its issuer) antler signs in to for this server: a
    /// registered client's credentials then never go to another one the server names.
    pub issuer: Option<String>,
    /// How tokens are obtained.
    pub grant: Grant,
}

/// The secret stays out of logs and debug output.
impl std::fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("scopes", &self.scopes)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("issuer", &self.issuer)
            .field("grant", &self.grant)
            .finish()
    }
}

/// How antler obtains tokens for the server.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Grant {
    /// A person signs in with a browser (`antler mcp login`).
    #[default]
    AuthorizationCode,
    /// The client's own credentials, no person involved (RFC 6749 §4.4): at every
    /// connection, with the secret, or with a JWT signed by this key (RFC 7523).
    ClientCredentials(Option<PrivateKey>),
    /// Enterprise-managed authorization (MCP's cross-app access, SEP-990): the user's ID
    /// token from their organisation's identity provider is exchanged there for an
    /// identity assertion (RFC 8693), which the server's authorization server takes as a
    /// grant (RFC 7523), at every connection.
    CrossAppAccess(IdentityProvider),
}

impl Grant {
    /// Its `grant_type` in the `oauth` object.
    pub fn name(&self) -> &'static str {
        match self {
            Self::AuthorizationCode => "authorization_code",
            Self::ClientCredentials(_) => "client_credentials",
            Self::CrossAppAccess(_) => "cross_app_access",
        }
    }
}

/// The organisation's identity provider of [`Grant::CrossAppAccess`].
#[derive(Clone, PartialEq)]
pub struct IdentityProvider {
    /// Who issued the `id_token`, which its token endpoint exchanges for an ID-JAG.
    pub issuer: String,
    /// Where tokens are exchanged.
    pub token_endpoint: String,
    /// antler's client there.
    pub client_id: String,
    /// Its secret, if the client is confidential.
    pub client_secret: Option<String>,
    /// The user's ID token from signing in to it (usually `$NAME`).
    pub id_token: String,
}

/// The secret and the token stay out of logs and debug output.
impl std::fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl IdentityProvider {
    /// What must never reach the model.
    pub fn secrets(&self) -> impl Iterator<Item = &String> {
        self.client_secret
            .iter()
            .chain(std::iter::once(&self.id_token))
    }
}

/// A private key that signs the client's assertions (`private_key_jwt`).
#[derive(Debug, Clone, PartialEq)]
pub struct PrivateKey {
    /// The PEM file (PKCS#8), relative paths taken from the extensions file's folder.
    pub file: PathBuf,
    /// `signing_algorithm`: ES256 unless it says RS256.
    pub algorithm: SigningAlgorithm,
}

/// The JWS algorithms antler signs client assertions with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigningAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// ECDSA on P-256 with SHA-256.
    Es256,
}

impl SigningAlgorithm {
    /// Its JWS name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rs256 => "RS256",
            Self::Es256 => "ES256",
        }
    }
}

/// The object as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOAuth {
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    scopes: Option<Scopes>,
    #[serde(default)]
    client_metadata_url: Option<String>,
    #[serde(default)]
    issuer: Option<String>,
    #[serde(default)]
    grant_type: Option<String>,
    #[serde(default)]
    private_key_file: Option<PathBuf>,
    #[serde(default)]
    signing_algorithm: Option<String>,
    #[serde(default)]
    identity_provider: Option<RawIdentityProvider>,
}

/// `identity_provider` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIdentityProvider {
    issuer: String,
    token_endpoint: String,
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    id_token: String,
}

/// `scopes` as a list, or as one space-separated string (OAuth's own form).
#[derive(Deserialize)]
#[serde(untagged)]
enum Scopes {
    List(Vec<String>),
    Text(String),
}

/// What is wrong with an `oauth` object: the key at fault and why.
#[derive(Debug, PartialEq)]
pub(super) struct Invalid {
    pub key: &'static str,
    pub reason: String,
}

fn invalid(key: &'static str, reason: impl Into<String>) -> Invalid {
    Invalid {
        key,
        reason: reason.into(),
    }
}

impl RawOAuth {
    /// Checks the object; `folder` is the extensions file's, for a relative key file.
    pub(super) fn check(self, folder: Option<&Path>) -> Result<OAuthSettings, Invalid> {
        let non_empty = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
        let client_id = non_empty(self.client_id);
        let client_secret = non_empty(self.client_secret);
        let scopes = scopes_of(self.scopes)?;
        let client_metadata_url = non_empty(self.client_metadata_url);
        check_metadata_url(client_metadata_url.as_deref())?;
        let issuer = non_empty(self.issuer);
        if let Some(issuer) = &issuer
            && !url::Url::parse(issuer).is_ok_and(|u| matches!(u.scheme(), "https" | "http"))
        {
            return Err(invalid(
                "issuer",
                "expected the authorization server's issuer, an https:// address",
            ));
        }
        if client_secret.is_some() && client_id.is_none() {
            return Err(invalid(
                "client_secret",
                "a `client_secret` needs the `client_id` it belongs to",
            ));
        }
        let key = self.private_key_file.filter(|p| !p.as_os_str().is_empty());
        let mut identity_provider = self.identity_provider;
        let grant = match self.grant_type.as_deref() {
            None | Some("authorization_code") => {
                if key.is_some() {
                    return Err(invalid(
                        "private_key_file",
                        "a private key signs the `client_credentials` grant; set \
                         \"grant_type\": \"client_credentials\"",
                    ));
                }
                Grant::AuthorizationCode
            }
            Some("cross_app_access") => {
                cross_app_grant(identity_provider.take(), client_id.is_some())?
            }
            Some("client_credentials") => {
                if client_id.is_none() {
                    return Err(invalid(
                        "client_id",
                        "the `client_credentials` grant needs the `client_id` registered for it",
                    ));
                }
                let algorithm = self.signing_algorithm.as_deref();
                client_credentials_grant(key, client_secret.is_some(), folder, algorithm)?
            }
            Some(other) => {
                return Err(invalid(
                    "grant_type",
                    format!(
                        "unknown grant `{}` (expected \"authorization_code\", \
                         \"client_credentials\" or \"cross_app_access\")",
                        crate::base::text::quoted(other)
                    ),
                ));
            }
        };
        if identity_provider.is_some() {
            return Err(invalid(
                "identity_provider",
                "an identity provider is for \"grant_type\": \"cross_app_access\"",
            ));
        }
        Ok(OAuthSettings {
            client_id,
            client_secret,
            scopes,
            client_metadata_url,
            issuer,
            grant,
        })
    }
}

/// `scopes` as a list of scopes: a list, or OAuth's space-separated text.
fn scopes_of(scopes: Option<Scopes>) -> Result<Vec<String>, Invalid> {
    let scopes = match scopes {
        None => Vec::new(),
        Some(Scopes::List(list)) => list,
        Some(Scopes::Text(text)) => text.split_whitespace().map(str::to_string).collect(),
    };
    if let Some(bad) = scopes
        .iter()
        .find(|s| s.is_empty() || s.chars().any(|c| c.is_whitespace() || c == '"'))
    {
        return Err(invalid(
            "scopes",
            format!("`{}` is not a scope", crate::base::text::quoted(bad)),
        ));
    }
    Ok(scopes)
}

/// A client metadata document is published at an https address with a path.
fn check_metadata_url(url: Option<&str>) -> Result<(), Invalid> {
    let Some(url) = url else {
        return Ok(());
    };
    let https = url::Url::parse(url)
        .is_ok_and(|u| u.scheme() == "https" && u.path() != "/" && !u.path().is_empty());
    match https {
        true => Ok(()),
        false => Err(invalid(
            "client_metadata_url",
            "expected an https:// address with a path (where your client metadata \
             document is published)",
        )),
    }
}

/// `cross_app_access` needs the identity provider, with an ID token, and antler's client
/// at the server's authorization server.
fn cross_app_grant(
    idp: Option<RawIdentityProvider>,
    has_client_id: bool,
) -> Result<Grant, Invalid> {
    let Some(idp) = idp else {
        return Err(invalid(
            "identity_provider",
            "the `cross_app_access` grant needs the `identity_provider` object \
             (issuer, token_endpoint, client_id, id_token)",
        ));
    };
    if !has_client_id {
        return Err(invalid(
            "client_id",
            "the `cross_app_access` grant needs the `client_id` registered with \
             the server's authorization server",
        ));
    }
    if idp.id_token.trim().is_empty() {
        return Err(invalid(
            "identity_provider",
            "`id_token` is empty (is its environment variable set?)",
        ));
    }
    Ok(Grant::CrossAppAccess(IdentityProvider {
        issuer: idp.issuer,
        token_endpoint: idp.token_endpoint,
        client_id: idp.client_id,
        client_secret: idp.client_secret.filter(|s| !s.trim().is_empty()),
        id_token: idp.id_token,
    }))
}

/// `client_credentials` authenticates with exactly one of a secret and a private key (a
/// relative key file is in `folder`, the extensions file's).
fn client_credentials_grant(
    key: Option<PathBuf>,
    has_secret: bool,
    folder: Option<&Path>,
    signing_algorithm: Option<&str>,
) -> Result<Grant, Invalid> {
    let key = match (key, has_secret) {
        (Some(_), true) => {
            return Err(invalid(
                "private_key_file",
                "set either `client_secret` or `private_key_file`, not both",
            ));
        }
        (None, false) => {
            return Err(invalid(
                "client_secret",
                "the `client_credentials` grant needs a `client_secret` or a \
                 `private_key_file`",
            ));
        }
        (Some(file), false) => Some(PrivateKey {
            file: match folder {
                Some(folder) if file.is_relative() => folder.join(file),
                _ => file,
            },
            algorithm: algorithm(signing_algorithm)?,
        }),
        (None, true) => None,
    };
    Ok(Grant::ClientCredentials(key))
}

fn algorithm(name: Option<&str>) -> Result<SigningAlgorithm, Invalid> {
    match name {
        None | Some("ES256") => Ok(SigningAlgorithm::Es256),
        Some("RS256") => Ok(SigningAlgorithm::Rs256),
        Some(other) => Err(invalid(
            "signing_algorithm",
            format!(
                "antler signs with \"ES256\" or \"RS256\", not `{}`",
                crate::base::text::quoted(other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(value: serde_json::Value) -> Result<OAuthSettings, Invalid> {
        serde_json::from_value::<RawOAuth>(value)
            .unwrap()
            .check(Some(Path::new("/etc/antler")))
    }

    #[test]
    fn a_pre_registered_client_with_scopes() {
        let settings = check(json!({
            "client_id": "antler", "client_secret": "s3cret", "scopes": "read write"
        }))
        .unwrap();
        assert_eq!(settings.client_id.as_deref(), Some("antler"));
        assert_eq!(settings.scopes, ["read", "write"]);
        assert_eq!(settings.grant, Grant::AuthorizationCode);
        assert!(
            !format!("{settings:?}").contains("s3cret"),
            "no secret in debug output"
        );
    }

    #[test]
    fn client_credentials_with_a_key_or_a_secret() {
        let keyed = check(json!({
            "client_id": "ci", "grant_type": "client_credentials",
            "private_key_file": "key.pem", "signing_algorithm": "RS256"
        }))
        .unwrap();
        assert_eq!(
            keyed.grant,
            Grant::ClientCredentials(Some(PrivateKey {
                file: PathBuf::from("/etc/antler/key.pem"),
                algorithm: SigningAlgorithm::Rs256
            }))
        );
        let secret = check(json!({
            "client_id": "ci", "client_secret": "x", "grant_type": "client_credentials"
        }))
        .unwrap();
        assert_eq!(secret.grant, Grant::ClientCredentials(None));
    }

    #[test]
    fn cross_app_access_names_the_identity_provider() {
        let settings = check(json!({
            "client_id": "mcp-client", "client_secret": "s", "grant_type": "cross_app_access",
            "identity_provider": {
                "issuer": "https://idp.example", "token_endpoint": "https://idp.example/token",
                "client_id": "idp-client", "id_token": "eyJ.secret.token"
            }
        }))
        .unwrap();
        let Grant::CrossAppAccess(idp) = &settings.grant else {
            panic!("{:?}", settings.grant);
        };
        assert_eq!(idp.client_id, "idp-client");
        assert_eq!(idp.secrets().collect::<Vec<_>>(), ["eyJ.secret.token"]);
        assert!(
            !format!("{settings:?}").contains("eyJ"),
            "no token in debug output"
        );
        let stray = check(json!({"identity_provider": {
            "issuer": "i", "token_endpoint": "t", "client_id": "c", "id_token": "x"}}));
        assert_eq!(stray.unwrap_err().key, "identity_provider");
    }

    #[test]
    fn what_cannot_work_is_refused_with_its_key() {
        for (value, key) in [
            (json!({"client_secret": "x"}), "client_secret"),
            (json!({"grant_type": "client_credentials"}), "client_id"),
            (
                json!({"client_id": "a", "grant_type": "client_credentials"}),
                "client_secret",
            ),
            (
                json!({"client_id": "a", "client_secret": "x", "private_key_file": "k",
                       "grant_type": "client_credentials"}),
                "private_key_file",
            ),
            (
                json!({"client_id": "a", "private_key_file": "k"}),
                "private_key_file",
            ),
            (json!({"grant_type": "password"}), "grant_type"),
            (
                json!({"client_id": "a", "private_key_file": "k", "grant_type": "client_credentials",
                       "signing_algorithm": "none"}),
                "signing_algorithm",
            ),
            (
                json!({"client_metadata_url": "http://x.example/c.json"}),
                "client_metadata_url",
            ),
            (
                json!({"client_metadata_url": "https://x.example"}),
                "client_metadata_url",
            ),
            (json!({"scopes": ["a b"]}), "scopes"),
            (json!({"issuer": "not a url"}), "issuer"),
            (
                json!({"client_id": "a", "grant_type": "cross_app_access"}),
                "identity_provider",
            ),
            (
                json!({"client_id": "a", "grant_type": "cross_app_access", "identity_provider": {
                    "issuer": "https://idp", "token_endpoint": "https://idp/t",
                    "client_id": "c", "id_token": ""}}),
                "identity_provider",
            ),
        ] {
            assert_eq!(check(value.clone()).unwrap_err().key, key, "{value}");
        }
    }
}

//! `--oauth`: the fixture as its own OAuth 2.1 authorization server (loopback only, for
//! tests): protected-resource and authorization-server metadata, dynamic registration,
//! an authorize endpoint that approves at once (the test plays the browser), PKCE (S256)
//! code exchange, refresh with rotation, and `/mcp` guarded by bearer tokens. Every grant
//! is appended to `--oauth-log` so a test can see what the client did.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest as _;

/// The server's state.
pub(crate) struct OAuth {
    base: String,
    log: Option<PathBuf>,
    /// How long the first access token lives (0: expired at once, so the client must
    /// refresh before its first call goes through).
    first_lifetime: Duration,
    /// `--oauth-demand-scope`: every request with a live token is refused for want of
    /// this scope (403 `insufficient_scope`), as a server that wants more would.
    demand: Option<String>,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    /// Registered clients and their redirect URIs.
    clients: HashMap<String, Vec<String>>,
    /// Codes: client, redirect URI, PKCE challenge.
    codes: HashMap<String, (String, String, String)>,
    /// Access tokens and when they expire.
    access: HashMap<String, Instant>,
    /// Refresh tokens and their client.
    refresh: HashMap<String, String>,
}

impl OAuth {
    /// The server at `base` (`http://127.0.0.1:PORT`).
    pub(crate) fn new(
        base: String,
        log: Option<PathBuf>,
        first_lifetime: Duration,
        demand: Option<String>,
    ) -> Arc<Self> {
        Arc::new(Self {
            base,
            log,
            first_lifetime,
            demand,
            inner: Mutex::default(),
        })
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn note(&self, line: &str) {
        let Some(log) = &self.log else { return };
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()));
        if let Err(err) = written {
            eprintln!("fixture_mcp: --oauth-log: {err}");
        }
    }

    /// A new access and refresh token for `client`.
    fn tokens(&self, client: &str, lifetime: Duration) -> Value {
        let mut inner = self.inner();
        inner.next += 1;
        let n = inner.next;
        let access = format!("fixture-access-{n}-{}", fastrand::u64(..));
        let refresh = format!("fixture-refresh-{n}-{}", fastrand::u64(..));
        inner
            .access
            .insert(access.clone(), Instant::now() + lifetime);
        inner.refresh.insert(refresh.clone(), client.to_string());
        json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": lifetime.as_secs(),
            "refresh_token": refresh,
            "scope": "mcp",
        })
    }

    fn challenge(&self) -> HeaderValue {
        let value = format!(
            "Bearer error=\"invalid_token\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            self.base
        );
        HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("Bearer"))
    }
}

/// The OAuth endpoints.
pub(crate) fn router(oauth: Arc<OAuth>) -> Router {
    Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(resource_metadata),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get(server_metadata),
        )
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(oauth)
}

/// `/mcp` answers only with a live access token.
pub(crate) async fn require_bearer(
    State(oauth): State<Arc<OAuth>>,
    request: Request,
    next: Next,
) -> Response {
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let live = bearer.is_some_and(|token| {
        oauth
            .inner()
            .access
            .get(&token)
            .is_some_and(|expires| Instant::now() < *expires)
    });
    if live && let Some(scope) = &oauth.demand {
        let mut response = StatusCode::FORBIDDEN.into_response();
        let value = format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\"");
        if let Ok(value) = HeaderValue::from_str(&value) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        return response;
    }
    if live {
        return next.run(request).await;
    }
    let mut response = StatusCode::UNAUTHORIZED.into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, oauth.challenge());
    response
}

async fn resource_metadata(State(oauth): State<Arc<OAuth>>) -> Json<Value> {
    Json(json!({
        "resource": format!("{}/mcp", oauth.base),
        "authorization_servers": [oauth.base],
        "scopes_supported": ["mcp"],
    }))
}

async fn server_metadata(State(oauth): State<Arc<OAuth>>) -> Json<Value> {
    let base = &oauth.base;
    Json(json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
        "scopes_supported": ["mcp"],
    }))
}

async fn register(State(oauth): State<Arc<OAuth>>, Json(body): Json<Value>) -> Response {
    let redirects: Vec<String> = body["redirect_uris"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let client = {
        let mut inner = oauth.inner();
        inner.next += 1;
        let client = format!("client-{}", inner.next);
        inner.clients.insert(client.clone(), redirects.clone());
        client
    };
    oauth.note(&format!("register {client}"));
    let mut answer = body.clone();
    answer["client_id"] = json!(client);
    (StatusCode::CREATED, Json(answer)).into_response()
}

fn bad(error: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": error}))).into_response()
}

async fn authorize(
    State(oauth): State<Arc<OAuth>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let field = |k: &str| query.get(k).cloned().unwrap_or_default();
    let (client, redirect) = (field("client_id"), field("redirect_uri"));
    let known = oauth
        .inner()
        .clients
        .get(&client)
        .is_some_and(|uris| uris.contains(&redirect));
    let Ok(mut location) = url::Url::parse(&redirect) else {
        return bad("invalid_request");
    };
    if !known || field("code_challenge_method") != "S256" || field("response_type") != "code" {
        return bad("invalid_request");
    }
    let code = format!("code-{}", fastrand::u64(..));
    oauth.inner().codes.insert(
        code.clone(),
        (client, redirect.clone(), field("code_challenge")),
    );
    location
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &field("state"));
    let mut response = StatusCode::FOUND.into_response();
    if let Ok(value) = HeaderValue::from_str(location.as_str()) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// The client of the `client_credentials` grant, and its secret (HTTP Basic).
const MACHINE_CLIENT: (&str, &str) = ("ci-client", "ci-secret");

async fn token(
    State(oauth): State<Arc<OAuth>>,
    headers: axum::http::HeaderMap,
    body: Bytes,
) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let field = |k: &str| form.get(k).cloned().unwrap_or_default();
    match field("grant_type").as_str() {
        "authorization_code" => {
            let Some((client, redirect, challenge)) = oauth.inner().codes.remove(&field("code"))
            else {
                return bad("invalid_grant");
            };
            let verifier = field("code_verifier");
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()));
            if computed != challenge
                || redirect != field("redirect_uri")
                || client != field("client_id")
            {
                return bad("invalid_grant");
            }
            oauth.note(&format!("authorization_code {client}"));
            Json(oauth.tokens(&client, oauth.first_lifetime)).into_response()
        }
        "refresh_token" => {
            let used = field("refresh_token");
            let Some(client) = oauth.inner().refresh.remove(&used) else {
                return bad("invalid_grant");
            };
            oauth.note(&format!("refresh_token {used}"));
            Json(oauth.tokens(&client, Duration::from_secs(3600))).into_response()
        }
        "client_credentials" => {
            let expected = base64::engine::general_purpose::STANDARD
                .encode(format!("{}:{}", MACHINE_CLIENT.0, MACHINE_CLIENT.1));
            let basic = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Basic "));
            if basic != Some(expected.as_str()) {
                return (
                    StatusCode::UNAUTHORIZED,
                    Json(json!({"error": "invalid_client"})),
                )
                    .into_response();
            }
            oauth.note(&format!(
                "client_credentials {} resource={}",
                MACHINE_CLIENT.0,
                field("resource")
            ));
            Json(oauth.tokens(MACHINE_CLIENT.0, Duration::from_secs(3600))).into_response()
        }
        _ => bad("unsupported_grant_type"),
    }
}

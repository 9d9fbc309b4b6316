//! OAuth against the fixture's own authorization server (loopback only): a server that
//! answers 401 asks for `antler mcp login`; login discovers, registers, runs the PKCE code
//! flow (the test plays the browser), keeps the tokens privately; the first token is
//! expired, so the next connection refreshes it; calls work; logout forgets the tokens;
//! no token or code reaches the log or the threads database.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt as _;
use std::process::Stdio;

use serde_json::json;

use crate::mock_openai::{MockOpenAi, Reply};
use crate::support::*;

/// `GET url` over plain HTTP; the status code and the `Location` header.
fn get(url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    write!(
        stream,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).unwrap().parse().unwrap();
    let location = answer
        .lines()
        .find_map(|l| {
            l.strip_prefix("location: ")
                .or_else(|| l.strip_prefix("Location: "))
        })
        .map(str::to_string);
    (status, location)
}

/// `antler mcp login remote`, with the test as the browser: the address printed on stderr
/// is followed to antler's loopback redirect. Returns the authorization address.
fn sign_in(sandbox: &Sandbox) -> String {
    let mut login = sandbox
        .command()
        .args(["mcp", "login", "remote", "--no-browser"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(login.stderr.take().unwrap());
    let authorize = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "login ended before a URL"
        );
        if let Some(url) = line
            .trim()
            .strip_prefix("http://")
            .filter(|u| u.contains("/authorize?"))
        {
            break format!("http://{url}");
        }
    };
    let (code, redirect) = get(&authorize);
    assert_eq!(code, 302);
    let redirect = redirect.unwrap();
    assert!(redirect.starts_with("http://127.0.0.1:"), "{redirect}");
    let (code, _) = get(&redirect);
    assert_eq!(code, 200);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(login.wait().unwrap().success(), "{rest}");
    assert!(rest.contains("Signed in to MCP server `remote`."), "{rest}");
    authorize
}

fn status(sandbox: &Sandbox) -> serde_json::Value {
    let (list, _, _) = sandbox.json(&["mcp", "list", "--json"]);
    status_of(&list, "remote").clone()
}

#[test]
fn login_refresh_calls_and_logout_against_a_local_authorization_server() {
    let sandbox = Sandbox::new();
    let grants = sandbox.path().join("grants.log");
    let grants_arg = grants.display().to_string();
    let server = fixture_network(
        "http",
        &[
            "--oauth",
            "--oauth-log",
            &grants_arg,
            "--oauth-first-lifetime-secs",
            "0",
        ],
    );
    write_extensions(
        &sandbox,
        json!({"remote": {"type": "http", "url": server.url}}),
    );

    // Not signed in: the server's 401 becomes advice.
    let before = status(&sandbox);
    assert_eq!(before["status"], "failed");
    assert_eq!(
        before["error"],
        "it needs you to sign in: run `antler mcp login remote`"
    );

    let authorize = sign_in(&sandbox);
    assert!(
        authorize.contains("code_challenge_method=S256"),
        "{authorize}"
    );

    let tokens_file = sandbox.path().join("xdg-data/antler/mcp-oauth.json");
    let mode = std::fs::metadata(&tokens_file)
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tokens_file).unwrap()).unwrap();
    let first = kept["servers"][&server.url]["token_response"]["refresh_token"]
        .as_str()
        .unwrap()
        .to_string();

    // The first access token is expired already: the connection refreshes it with the
    // refresh token, and keeps the new one.
    assert_eq!(status(&sandbox)["status"], "connected");
    let log = std::fs::read_to_string(&grants).unwrap();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [
            "register client-1",
            "authorization_code client-1",
            &format!("refresh_token {first}")
        ]
    );
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&tokens_file).unwrap()).unwrap();
    let response = &kept["servers"][&server.url]["token_response"];
    let (access, refresh) = (
        response["access_token"].as_str().unwrap().to_string(),
        response["refresh_token"].as_str().unwrap().to_string(),
    );
    assert_ne!(refresh, first, "the rotated refresh token is kept");

    // A run calls the server's tool with the token, verbosely logged.
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "remote_echo", json!({"text": "hi"}))]),
        Reply::text("It echoed."),
    ]);
    let out = agent(&sandbox, &mock)
        .args(["-vv", "-p", "echo hi"])
        .output()
        .unwrap();
    assert_success(&out);
    let result = mock.requests()[1].tool_result("c1");
    assert_eq!(result, "hi");
    let log = std::fs::read_to_string(sandbox.log_file()).unwrap();
    let data = sandbox.path().join("xdg-data/antler");
    let mut db = std::fs::read(data.join("threads.db")).unwrap();
    db.extend(std::fs::read(data.join("threads.db-wal")).unwrap_or_default());
    let db = String::from_utf8_lossy(&db);
    assert!(
        db.contains("echo hi"),
        "the thread is stored where it is searched"
    );
    for secret in [access.as_str(), refresh.as_str(), first.as_str(), "code-"] {
        assert!(!log.contains(secret), "{secret} in the log");
        assert!(!db.contains(secret), "{secret} in the threads database");
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains(secret),
            "{secret} on stderr"
        );
    }

    // Logout forgets the tokens; the server asks for a login again.
    sandbox
        .antler()
        .args(["mcp", "logout", "remote"])
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "Signed out of MCP server `remote`",
        ));
    assert!(
        !std::fs::read_to_string(&tokens_file)
            .unwrap()
            .contains(&access)
    );
    assert_eq!(
        status(&sandbox)["error"],
        "it needs you to sign in: run `antler mcp login remote`"
    );
    // Hostile or mistaken names get a clear error, never a path.
    sandbox
        .antler()
        .args(["mcp", "login", "../../etc/passwd", "--no-browser"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "no MCP server `../../etc/passwd`",
        ));
}

/// A server that keeps refusing the token for want of scope (403 `insufficient_scope`):
/// the refusal is read by type and becomes advice; the next login asks for the scope; the
/// scope it names is bounded wherever it goes (the message, the token file); after two
/// such sign-ins antler says another will not help instead of asking again.
#[test]
fn a_server_that_wants_more_scope_gets_it_asked_for_a_bounded_number_of_times() {
    let sandbox = Sandbox::new();
    // 10,000 scopes, 59 KB: a server cannot fill the token file or the screen with them.
    let demand: String = (0..10_000).map(|i| format!("s{i} ")).collect();
    let server = fixture_network(
        "http",
        &["--oauth", "--oauth-demand-scope", demand.trim_end()],
    );
    write_extensions(
        &sandbox,
        json!({"remote": {"type": "http", "url": server.url}}),
    );
    assert_eq!(
        status(&sandbox)["error"],
        "it needs you to sign in: run `antler mcp login remote`"
    );
    let first = sign_in(&sandbox);
    assert!(!first.contains("s9999"), "nothing was demanded yet");

    let wants = status(&sandbox);
    let error = wants["error"].as_str().unwrap();
    assert!(
        error.starts_with("it needs more access than you granted (scope `s0 s1 s2")
            && error.ends_with("run `antler mcp login remote` to grant it"),
        "{error}"
    );
    assert!(
        error.len() < 400,
        "the message is bounded: {} bytes",
        error.len()
    );
    assert_eq!(wants["needs_login"], true);
    let demands_file = sandbox
        .path()
        .join("xdg-data/antler/mcp-oauth-demands.json");
    let kept: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&demands_file).unwrap()).unwrap();
    let scopes = kept["servers"][&server.url]["scopes"].as_array().unwrap();
    assert_eq!(scopes.len(), 64, "at most 64 scopes are kept");

    // The next sign-ins ask for what the server named (as far as it is kept).
    let second = sign_in(&sandbox);
    assert!(
        second.contains("scope=mcp+s0+s1") || second.contains("scope=mcp%20s0%20s1"),
        "{second}"
    );
    assert!(!second.contains("s64"), "{second}");
    assert!(
        status(&sandbox)["error"]
            .as_str()
            .unwrap()
            .contains("run `antler mcp login remote`")
    );
    sign_in(&sandbox);
    let refused = status(&sandbox);
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.contains("after 2 sign-ins that asked for it; signing in again will not help"),
        "{error}"
    );
    assert_eq!(refused["needs_login"], false, "no login is suggested");
}

/// A verbose `-p` run that calls the fixture's `authorization` tool (with the secret in
/// `CI_OAUTH_SECRET`): what the model was told, and antler's stderr.
fn call_authorization(sandbox: &Sandbox) -> (String, String) {
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "remote_authorization", json!({}))]),
        Reply::text("done"),
    ]);
    let out = agent(sandbox, &mock)
        .env("CI_OAUTH_SECRET", "ci-secret")
        .args(["-vv", "-p", "who am I?"])
        .output()
        .unwrap();
    assert_success(&out);
    let seen = mock.requests()[1].tool_result("c1");
    (seen, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The `client_credentials` grant, for CI: no login, a token at each connection from the
/// secret (HTTP Basic, with the resource), never written down; a server that echoes the
/// token it was sent hands the model `[redacted]`; the secret reaches no log or thread;
/// `mcp login` says it is not needed; a wrong secret is a clear failure.
#[test]
fn client_credentials_need_no_login_and_their_token_reaches_no_one() {
    let sandbox = Sandbox::new();
    let grants = sandbox.path().join("grants.log");
    let grants_arg = grants.display().to_string();
    let server = fixture_network("http", &["--oauth", "--oauth-log", &grants_arg]);
    let entry = |secret: &str| {
        json!({"remote": {"type": "http", "url": server.url, "oauth": {
            "client_id": "ci-client", "client_secret": secret, "grant_type": "client_credentials"
        }}})
    };
    write_extensions(&sandbox, entry("$CI_OAUTH_SECRET"));
    let (seen, stderr) = call_authorization(&sandbox);
    assert_eq!(
        seen, "Bearer [redacted]",
        "the server got a bearer token; the model does not see it"
    );
    let log = std::fs::read_to_string(&grants).unwrap();
    assert_eq!(
        log.lines().collect::<Vec<_>>(),
        [format!(
            "client_credentials ci-client resource={}",
            server.url
        )]
    );
    let antler_log = std::fs::read_to_string(sandbox.log_file()).unwrap();
    for secret in ["ci-secret", "fixture-access-"] {
        assert!(!antler_log.contains(secret), "{secret} in the log");
        assert!(!stderr.contains(secret), "{secret} on stderr");
    }
    let tokens_file = sandbox.path().join("xdg-data/antler/mcp-oauth.json");
    assert!(
        std::fs::read_to_string(&tokens_file).map_or(true, |t| !t.contains("fixture-access-")),
        "the token is not written down"
    );
    sandbox
        .antler()
        .env("CI_OAUTH_SECRET", "ci-secret")
        .args(["mcp", "login", "remote", "--no-browser"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("no sign-in needed"));

    // Its variable unset: the entry is skipped, with where and why.
    let (_, _, stderr) = sandbox.json(&["mcp", "list", "--json"]);
    assert!(
        stderr.contains(
            "oauth.client_secret: the `client_credentials` grant needs a `client_secret`"
        ),
        "{stderr}"
    );
    // A wrong secret: the call fails with the authorization server's refusal, in words.
    write_extensions(&sandbox, entry("not-the-secret"));
    let (error, _) = call_authorization(&sandbox);
    assert!(error.contains("invalid_client"), "{error}");
    assert!(!error.contains("not-the-secret"), "{error}");

    // Pinned to another authorization server: the secret is sent nowhere.
    let mut pinned = entry("ci-secret");
    pinned["remote"]["oauth"]["issuer"] = json!("https://as.example");
    write_extensions(&sandbox, pinned);
    let (error, _) = call_authorization(&sandbox);
    assert!(
        error.contains("not to https://as.example, the `issuer` its `oauth` object names"),
        "{error}"
    );
    let log = std::fs::read_to_string(&grants).unwrap();
    assert_eq!(log.lines().count(), 1, "no grant since the first: {log}");
}

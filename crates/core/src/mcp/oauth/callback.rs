//! The loopback redirect of `antler mcp login`: a one-shot HTTP listener on 127.0.0.1 that
//! takes the browser's `GET /callback?code=…&state=…` (or `?error=…`), answers with a
//! short page and hands the URL back. rmcp checks `state` (and `iss`) against the flow it
//! started, so a forged request from another local program fails the exchange.

use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use super::OAuthError;

/// The most of a request line and headers read.
const MAX_REQUEST_BYTES: usize = 16 * 1024;
/// A browser that connects has this long to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The listener, bound to a free port.
pub(super) struct Callback {
    listener: TcpListener,
    port: u16,
}

impl Callback {
    /// Binds 127.0.0.1 on a free port.
    pub(super) async fn bind() -> Result<Self, OAuthError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| OAuthError::Callback(format!("cannot listen on 127.0.0.1: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| OAuthError::Callback(e.to_string()))?
            .port();
        Ok(Self { listener, port })
    }

    /// The redirect URI to register and send.
    pub(super) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// Waits (at most `timeout`) for the redirect carrying `state` and returns its full
    /// URL. Requests for other paths or with another `state` (another local program, a
    /// web page that found the port) get an error page and the wait goes on; an `error`
    /// in the redirect ends it.
    pub(super) async fn wait(self, timeout: Duration, state: &str) -> Result<String, OAuthError> {
        tokio::time::timeout(timeout, self.accept_callback(state))
            .await
            .map_err(|_| OAuthError::Timeout(timeout))?
    }

    async fn accept_callback(&self, state: &str) -> Result<String, OAuthError> {
        loop {
            let (mut stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| OAuthError::Callback(e.to_string()))?;
            let Ok(Ok(target)) =
                tokio::time::timeout(REQUEST_TIMEOUT, request_target(&mut stream)).await
            else {
                continue;
            };
            let url = format!("http://127.0.0.1:{}{target}", self.port);
            let parsed = url::Url::parse(&url)
                .ok()
                .filter(|u| u.path() == "/callback");
            let Some(parsed) = parsed else {
                let _ = respond(&mut stream, "404 Not Found", "Not found.").await;
                continue;
            };
            let query: std::collections::HashMap<String, String> =
                parsed.query_pairs().into_owned().collect();
            if query.get("state").map(String::as_str) != Some(state) {
                let _ = respond(&mut stream, "400 Bad Request", "Not this sign-in.").await;
                continue;
            }
            if let Some(error) = query.get("error") {
                let _ = respond(
                    &mut stream,
                    "200 OK",
                    "antler: the sign-in was refused. You can close this tab.",
                )
                .await;
                let description = query
                    .get("error_description")
                    .map(String::as_str)
                    .unwrap_or("");
                return Err(OAuthError::Denied(
                    crate::base::text::short_line(&format!("{error} {description}"), 200).0,
                ));
            }
            let _ = respond(
                &mut stream,
                "200 OK",
                "antler: signed in. You can close this tab.",
            )
            .await;
            return Ok(url);
        }
    }
}

/// The target of a `GET` request (`/callback?...`).
async fn request_target(stream: &mut tokio::net::TcpStream) -> Result<String, std::io::Error> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buffer.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await?;
        if n == 0 || buffer.len() + n > MAX_REQUEST_BYTES {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buffer);
    let line = head.lines().next().unwrap_or_default();
    match line.split(' ').collect::<Vec<_>>()[..] {
        ["GET", target, version] if version.starts_with("HTTP/1.") && target.starts_with('/') => {
            Ok(target.to_string())
        }
        _ => Err(std::io::ErrorKind::InvalidData.into()),
    }
}

async fn respond(
    stream: &mut tokio::net::TcpStream,
    status: &str,
    text: &str,
) -> Result<(), std::io::Error> {
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        stream
            .write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn the_redirect_is_taken_and_other_requests_are_not() {
        let callback = Callback::bind().await.unwrap();
        let port = callback.port;
        assert_eq!(
            callback.redirect_uri(),
            format!("http://127.0.0.1:{port}/callback")
        );
        let waiting =
            tokio::spawn(async move { callback.wait(Duration::from_secs(10), "xyz").await });
        assert!(get(port, "/favicon.ico").await.starts_with("HTTP/1.1 404"));
        assert!(
            get(port, "/callback?error=access_denied&state=forged")
                .await
                .starts_with("HTTP/1.1 400")
        );
        assert!(
            get(port, "/callback?code=evil")
                .await
                .starts_with("HTTP/1.1 400")
        );
        assert!(
            get(port, "/callback?code=abc&state=xyz")
                .await
                .contains("signed in")
        );
        assert_eq!(
            waiting.await.unwrap().unwrap(),
            format!("http://127.0.0.1:{port}/callback?code=abc&state=xyz")
        );

        let callback = Callback::bind().await.unwrap();
        let port = callback.port;
        let waiting =
            tokio::spawn(async move { callback.wait(Duration::from_secs(10), "s").await });
        get(
            port,
            "/callback?error=access_denied&state=s&error_description=%1b%5b2Jno",
        )
        .await;
        let err = waiting.await.unwrap().unwrap_err().to_string();
        assert!(
            err.contains("access_denied") && !err.contains('\u{1b}'),
            "{err}"
        );
    }
}

//! Streamable HTTP: rmcp's client transport over the shared reqwest client, its requests
//! authorized as the entry's OAuth says and its 401/403s noted (`Challenges`). rmcp parses
//! the messages, so they reach the judge as [`Frame::Parsed`](super::Frame::Parsed).

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::{Parsing, header_map};
use crate::config::McpServerConfig;
use crate::mcp::McpError;
use crate::mcp::oauth::challenge::{Challenges, Watched};
use crate::mcp::oauth::{self, Authorization};

/// An opened connection: one type per way of authorizing.
pub(crate) enum Opened {
    /// With the kept OAuth tokens, refreshed as they expire.
    Signed(Parsing<StreamableHttpClientTransport<Watched<AuthClient<reqwest::Client>>>>),
    /// Anonymous, or with a bearer token of a grant that needs no browser.
    Plain(Parsing<StreamableHttpClientTransport<Watched<reqwest::Client>>>),
}

/// The connection to the server of `config`, and the access token a grant issued for it,
/// if any.
pub(crate) async fn open(
    config: &McpServerConfig,
    tokens: Option<&oauth::TokenStore>,
    challenges: &Challenges,
) -> Result<(Opened, Option<String>), McpError> {
    let url = config.url.clone().unwrap_or_default();
    let client = crate::base::http::http_client().map_err(|e| McpError::Http(e.to_string()))?;
    let mut transport_config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(header_map(&config.headers)?.into_iter().collect());
    let authorization = oauth::authorize(config, tokens, client.clone())
        .await
        .map_err(|err| McpError::OAuth {
            server: config.name.clone(),
            reason: err.to_string(),
        })?;
    match authorization {
        Authorization::Signed(client) => {
            let transport = StreamableHttpClientTransport::with_client(
                Watched::new(client, challenges.clone()),
                transport_config,
            );
            Ok((Opened::Signed(Parsing(transport)), None))
        }
        Authorization::Anonymous | Authorization::Bearer(_) => {
            let mut issued = None;
            if let Authorization::Bearer(token) = authorization {
                issued = Some(token.clone());
                transport_config = transport_config.auth_header(token);
            }
            let transport = StreamableHttpClientTransport::with_client(
                Watched::new(client, challenges.clone()),
                transport_config,
            );
            Ok((Opened::Plain(Parsing(transport)), issued))
        }
    }
}

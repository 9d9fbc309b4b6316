//! What a server offers besides tools: its resources and prompts, asked for when wanted.
//! Each request starts an idle server as a tool call does, and ends by its answer, the
//! server's `tool_timeout_secs` or the caller's cancellation.

use std::sync::atomic::Ordering;

use rmcp::ServiceError;
use rmcp::model::{
    ClientRequest, GetPromptRequest, GetPromptRequestParams, GetPromptResult, JsonObject,
    ListResourceTemplatesRequest, ListResourcesRequest, PaginatedRequestParams, Prompt,
    ReadResourceRequest, ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate,
    ServerResult,
};
use tokio_util::sync::CancellationToken;

use super::tool_call::LivePeer;
use super::{McpServer, State, call};
use crate::mcp::readable::readable_error;

/// A feature besides tools that a server may announce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// `resources/list`, `resources/read`.
    Resources,
    /// `prompts/list`, `prompts/get`.
    Prompts,
}

impl Feature {
    fn name(self) -> &'static str {
        match self {
            Self::Resources => "resources",
            Self::Prompts => "prompts",
        }
    }
}

/// At most this many pages of a resource listing are followed.
const MAX_PAGES: usize = 100;
/// At most this many resources of one server are kept from a listing.
const MAX_RESOURCES: usize = 2_000;

/// What a server lists of its resources.
#[derive(Debug, Default)]
pub struct ResourceListing {
    /// Its resources, all pages followed (up to [`MAX_PAGES`]).
    pub resources: Vec<Resource>,
    /// Its resource templates; none when it has no such list.
    pub templates: Vec<ResourceTemplate>,
    /// Whether more pages were left unread.
    pub truncated: bool,
}

impl McpServer {
    /// Whether the server announced `feature` (an idle server: when it was last listed)
    /// and, for resources, listed at least one when counted.
    pub async fn offers(&self, feature: Feature) -> bool {
        let state = self.state.lock().await;
        let announced = state.capabilities().iter().any(|c| c == feature.name());
        let empty = feature == Feature::Resources && state.resource_count() == Some(0);
        announced && !empty
    }

    /// Sends one request on the live connection (starting the server if it is idle),
    /// within the server's tool timeout; an error says why in words.
    async fn request<T>(
        &self,
        request: ClientRequest,
        cancel: &CancellationToken,
        answer: fn(ServerResult) -> Result<T, ServiceError>,
    ) -> Result<T, String> {
        let LivePeer {
            peer,
            progress,
            route,
            challenges,
            ..
        } = self
            .live_peer(None)
            .await
            .map_err(|err| format!("MCP server `{}` is not available: {err}", self.config.name))?
            .0;
        let listening = call::Listening {
            calls: &progress,
            report: &|_| {},
            route: &route,
            elicit: &call::decline_all,
        };
        let timeout = self.config.tool_timeout;
        match call::send(&peer, request, timeout, cancel, listening, answer).await {
            call::Ended::Answered(Ok(value)) => Ok(value),
            call::Ended::Answered(Err(err)) => Err(format!(
                "MCP server `{}` refused: {}",
                self.config.name,
                match self.refused(&challenges) {
                    Some(refused) => refused.to_string(),
                    None => readable_error(&err),
                }
            )),
            call::Ended::TimedOut => Err(format!(
                "MCP server `{}` did not answer within {:.1}s",
                self.config.name,
                timeout.as_secs_f64()
            )),
            call::Ended::Cancelled => Err(String::from("cancelled")),
        }
    }

    /// The server's resources and resource templates. A server without templates (or that
    /// refuses to list them) has none.
    pub async fn list_resources(
        &self,
        cancel: &CancellationToken,
    ) -> Result<ResourceListing, String> {
        let mut listing = ResourceListing::default();
        let mut cursor = None;
        for page in 0..=MAX_PAGES {
            if page == MAX_PAGES {
                listing.truncated = true;
                break;
            }
            let request = ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(
                paginated(cursor.take()),
            ));
            let result = self
                .request(request, cancel, |answer| match answer {
                    ServerResult::ListResourcesResult(result) => Ok(result),
                    _ => Err(ServiceError::UnexpectedResponse),
                })
                .await?;
            listing.resources.extend(result.resources);
            if listing.resources.len() >= MAX_RESOURCES {
                listing.resources.truncate(MAX_RESOURCES);
                listing.truncated = true;
                break;
            }
            match result.next_cursor {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => break,
            }
        }
        let templates = ClientRequest::ListResourceTemplatesRequest(
            ListResourceTemplatesRequest::with_param(paginated(None)),
        );
        match self
            .request(templates, cancel, |answer| match answer {
                ServerResult::ListResourceTemplatesResult(result) => Ok(result),
                _ => Err(ServiceError::UnexpectedResponse),
            })
            .await
        {
            Ok(mut result) => {
                result.resource_templates.truncate(MAX_RESOURCES);
                listing.templates = result.resource_templates;
            }
            Err(err) => tracing::debug!(server = %self.config.name, "no resource templates: {err}"),
        }
        Ok(listing)
    }

    /// Reads the resource at `uri`.
    pub async fn read_resource(
        &self,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<ReadResourceResult, String> {
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
            ReadResourceRequestParams::new(uri),
        ));
        self.request(request, cancel, |answer| match answer {
            ServerResult::ReadResourceResult(result) => Ok(result),
            _ => Err(ServiceError::UnexpectedResponse),
        })
        .await
    }

    /// The server's prompts: a connected server's as listed (again, if it announced a
    /// change since), an idle one's from its manifest.
    pub async fn prompts(&self) -> Vec<Prompt> {
        let peer = {
            let state = self.state.lock().await;
            match &*state {
                State::Connected(live)
                    if live.usable()
                        && live
                            .connection
                            .service
                            .service()
                            .prompts_changed
                            .swap(false, Ordering::Relaxed) =>
                {
                    Some(live.connection.service.peer().clone())
                }
                other => return other.prompts().to_vec(),
            }
        };
        let Some(peer) = peer else {
            return Vec::new();
        };
        let listed =
            tokio::time::timeout(self.config.startup_timeout, super::list_all_prompts(&peer)).await;
        let mut state = self.state.lock().await;
        match (listed, &mut *state) {
            (Ok(Ok(prompts)), State::Connected(live)) => {
                live.connection.prompts = prompts;
            }
            (Ok(Err(err)), _) => tracing::warn!(server = %self.config.name, "{err}"),
            (Err(_), _) => {
                tracing::warn!(server = %self.config.name, "re-listing prompts timed out")
            }
            _ => {}
        }
        state.prompts().to_vec()
    }

    /// The messages of the prompt `name` with `arguments`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: JsonObject,
        cancel: &CancellationToken,
    ) -> Result<GetPromptResult, String> {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = (!arguments.is_empty()).then_some(arguments);
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        self.request(request, cancel, |answer| match answer {
            ServerResult::GetPromptResult(result) => Ok(result),
            _ => Err(ServiceError::UnexpectedResponse),
        })
        .await
    }
}

fn paginated(cursor: Option<String>) -> PaginatedRequestParams {
    let mut params = PaginatedRequestParams::default();
    params.cursor = cursor;
    params
}

//! `list_mcp_resources(server?)` and `read_mcp_resource(server, uri)`: the model's way to
//! the resources MCP servers offer (files, records, documents). They exist when some
//! server announced resources, belong to the MCP tier (deferred like its tools), and name
//! a server only as one of the configured servers that offer resources: a server or URI
//! the model chose is sent to that server as data, never used as a path.

use std::sync::Arc;

use rmcp::model::{ReadResourceResult, ResourceContents};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::content;
use super::server::{Feature, McpServer, ResourceListing};
use crate::tools::Effect;
use crate::tools::TypedTool;
use crate::tools::{StateUpdate, Tool, ToolContext, ToolFuture, ToolInfo, ToolOutput, ToolSource};

/// The listing tool's name.
pub const LIST_MCP_RESOURCES: &str = "list_mcp_resources";
/// The reading tool's name.
pub const READ_MCP_RESOURCE: &str = "read_mcp_resource";

/// At most this many resources are listed per server.
const MAX_LISTED: usize = 500;
/// A model-given URI longer than this is refused before any server sees it.
const MAX_URI_CHARS: usize = 4096;
/// Descriptions in a listing are cut to this many characters.
const DESCRIPTION_CHARS: usize = 200;

/// The two tools, when any of `servers` offers resources.
pub(super) async fn resource_tools(servers: &[Arc<McpServer>]) -> Vec<Arc<dyn Tool>> {
    let mut offering = Vec::new();
    for server in servers {
        if server.offers(Feature::Resources).await {
            offering.push(server.clone());
        }
    }
    if offering.is_empty() {
        return Vec::new();
    }
    let names: Vec<String> = offering.iter().map(|s| s.config().name.clone()).collect();
    let offering: Arc<[Arc<McpServer>]> = offering.into();
    vec![
        Arc::new(ListResources {
            info: info(
                LIST_MCP_RESOURCES,
                "Lists the resources (files, documents, records) that MCP servers offer: each \
                 one's URI, name, type and description, then URI templates. Read one with \
                 read_mcp_resource. Without `server`, every server that offers resources is \
                 asked.",
                json!({
                    "type": "object",
                    "properties": {
                        "server": {"type": "string", "enum": names,
                                   "description": "Only this server's resources."}
                    }
                }),
            ),
            servers: offering.clone(),
        }),
        Arc::new(ReadResource {
            info: info(
                READ_MCP_RESOURCE,
                "Reads one resource of an MCP server by its URI (from list_mcp_resources or a \
                 URI template) and returns its contents.",
                json!({
                    "type": "object",
                    "properties": {
                        "server": {"type": "string", "enum": names,
                                   "description": "The server that offers the resource."},
                        "uri": {"type": "string", "description": "The resource's URI."}
                    },
                    "required": ["server", "uri"]
                }),
            ),
            servers: offering,
        }),
    ]
}

impl super::McpManager {
    /// Every resource of the enabled servers that offer resources (starting idle ones),
    /// as `(server, resource)`; a server that fails is logged and left out.
    pub async fn resources(
        &self,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Vec<(String, rmcp::model::Resource)> {
        let mut offering = Vec::new();
        for server in self.servers() {
            if server.config().enabled && server.offers(Feature::Resources).await {
                offering.push(server.clone());
            }
        }
        let listings =
            futures::future::join_all(offering.iter().map(|s| s.list_resources(cancel))).await;
        let mut all = Vec::new();
        for (server, listing) in offering.iter().zip(listings) {
            let name = &server.config().name;
            match listing {
                Ok(listing) => all.extend(
                    listing
                        .resources
                        .into_iter()
                        .take(MAX_LISTED)
                        .map(|r| (name.clone(), r)),
                ),
                Err(err) => tracing::warn!(server = %name, "listing resources failed: {err}"),
            }
        }
        all
    }

    /// The contents of the resource `uri` of `server` as text (binary contents
    /// described), or why it cannot be read.
    pub async fn resource_text(
        &self,
        server: &str,
        uri: &str,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<String, String> {
        let Some(found) = self.servers().iter().find(|s| s.config().name == server) else {
            return Err(format!("no MCP server `{server}`"));
        };
        let result = found.read_resource(uri, cancel).await?;
        Ok(contents_output(server, &result).content)
    }
}

fn info(name: &str, description: &str, parameters: Value) -> ToolInfo {
    let mut metadata = Map::new();
    metadata.insert("mcp".into(), Value::Bool(true));
    ToolInfo {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
        source: ToolSource::McpResources,
        metadata,
        // Reading is what resources are for: no call changes anything.
        parallel: true,
    }
}

/// The server called `name` among `servers`, or an error listing the ones there are.
fn find<'a>(servers: &'a [Arc<McpServer>], name: &str) -> Result<&'a McpServer, ToolOutput> {
    servers
        .iter()
        .find(|s| s.config().name == name)
        .map(|s| s.as_ref())
        .ok_or_else(|| {
            let known: Vec<&str> = servers.iter().map(|s| s.config().name.as_str()).collect();
            ToolOutput::error(format!(
                "Error: no MCP server called {:?} offers resources; the servers that do: {}",
                crate::base::text::short_line(name, 80).0,
                known.join(", ")
            ))
        })
}

struct ListResources {
    info: ToolInfo,
    servers: Arc<[Arc<McpServer>]>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    server: Option<String>,
}

impl TypedTool for ListResources {
    type Args = ListArgs;

    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn run<'a>(&'a self, ctx: ToolContext<'a>, args: ListArgs) -> ToolFuture<'a> {
        Box::pin(async move {
            let chosen: Vec<&McpServer> = match &args.server {
                Some(name) => match find(&self.servers, name) {
                    Ok(server) => vec![server],
                    Err(output) => return output,
                },
                None => self.servers.iter().map(|s| s.as_ref()).collect(),
            };
            let listings = futures::future::join_all(
                chosen
                    .iter()
                    .map(|server| server.list_resources(&ctx.cancel)),
            )
            .await;
            let mut sections = Vec::new();
            let mut failed = 0;
            for (server, listing) in chosen.iter().zip(listings) {
                let name = &server.config().name;
                match listing {
                    Ok(listing) => sections.push(listing_text(name, &listing)),
                    Err(err) => {
                        failed += 1;
                        sections.push(format!("## {name}\nError: {err}"));
                    }
                }
            }
            let text = sections.join("\n\n");
            if failed == chosen.len() {
                ToolOutput::error(text)
            } else {
                ToolOutput::ok(text)
            }
        })
    }
}

/// One server's section of a listing: a line per resource, then per template.
fn listing_text(server: &str, listing: &ResourceListing) -> String {
    let mut lines = vec![format!("## {server}")];
    if listing.resources.is_empty() && listing.templates.is_empty() {
        lines.push(String::from("(no resources)"));
    }
    for resource in listing.resources.iter().take(MAX_LISTED) {
        let mut line = format!("- {} ({}", resource.uri, resource.name);
        if let Some(mime) = &resource.mime_type {
            line.push_str(&format!(", {mime}"));
        }
        if let Some(size) = resource.size {
            line.push_str(&format!(", {size} bytes"));
        }
        line.push(')');
        if let Some(description) = resource.description.as_deref().filter(|d| !d.is_empty()) {
            line.push_str(": ");
            line.push_str(&crate::base::text::short_line(description, DESCRIPTION_CHARS).0);
        }
        lines.push(line);
    }
    let more = listing.resources.len().saturating_sub(MAX_LISTED);
    if more > 0 || listing.truncated {
        lines.push(format!(
            "… {}more resources not listed",
            if more > 0 {
                format!("{more} ")
            } else {
                String::new()
            }
        ));
    }
    if !listing.templates.is_empty() {
        lines.push(String::from("URI templates (fill in the {parts}):"));
        for template in listing.templates.iter().take(MAX_LISTED) {
            let mut line = format!("- {} ({})", template.uri_template, template.name);
            if let Some(description) = template.description.as_deref().filter(|d| !d.is_empty()) {
                line.push_str(": ");
                line.push_str(&crate::base::text::short_line(description, DESCRIPTION_CHARS).0);
            }
            lines.push(line);
        }
    }
    lines.join("\n")
}

struct ReadResource {
    info: ToolInfo,
    servers: Arc<[Arc<McpServer>]>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    server: String,
    uri: String,
}

impl TypedTool for ReadResource {
    type Args = ReadArgs;

    fn info(&self) -> &ToolInfo {
        &self.info
    }

    /// The URI is the model's to choose and goes to a server: a channel out, like any of
    /// the server's tools, so it runs unasked only when every such server is trusted.
    fn effect(&self) -> Effect {
        Effect::Server {
            read_only_hint: true,
            destructive_hint: false,
            trusted: self.servers.iter().all(|s| s.config().trusted),
        }
    }

    fn subject(&self, args: &ReadArgs) -> Option<String> {
        Some(args.server.clone())
    }

    fn run<'a>(&'a self, ctx: ToolContext<'a>, args: ReadArgs) -> ToolFuture<'a> {
        Box::pin(async move {
            let server = match find(&self.servers, &args.server) {
                Ok(server) => server,
                Err(output) => return output,
            };
            if args.uri.trim().is_empty() || args.uri.chars().count() > MAX_URI_CHARS {
                return ToolOutput::error(format!(
                    "Error: `uri` must be a resource URI of 1 to {MAX_URI_CHARS} characters"
                ));
            }
            match server.read_resource(&args.uri, &ctx.cancel).await {
                Ok(result) => contents_output(&args.server, &result),
                Err(err) => ToolOutput::error(format!("Error: {err}")),
            }
        })
    }
}

/// A read resource as the model reads it: text as is, images attached (for a model that
/// can see them), other binary contents described.
fn contents_output(server: &str, result: &ReadResourceResult) -> ToolOutput {
    if result.contents.is_empty() {
        return ToolOutput::ok("(the resource is empty)");
    }
    let mut parts = Vec::new();
    let mut images = Vec::new();
    for contents in &result.contents {
        match contents {
            // One text alone is the resource itself; several are labelled by their URIs.
            ResourceContents::TextResourceContents { text, .. } if result.contents.len() == 1 => {
                parts.push(text.clone());
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } if images.len() < content::MAX_IMAGES => {
                match content::image_part(mime_type.as_deref(), blob, &format!("{server}: {uri}")) {
                    Some(image) => {
                        parts.push(format!(
                            "[resource {uri}: {}, {} bytes of base64, attached as an image]",
                            image.media_type,
                            blob.len()
                        ));
                        images.push(image);
                    }
                    None => parts.push(content::resource_text(contents)),
                }
            }
            other => parts.push(content::resource_text(other)),
        }
    }
    let mut output = ToolOutput::ok(parts.join("\n"));
    if !images.is_empty() {
        output.state_update = Some(Box::new(StateUpdate {
            images,
            ..StateUpdate::default()
        }));
    }
    output
}

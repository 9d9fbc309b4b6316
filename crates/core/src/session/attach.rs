//! The chat's attachments (`@`): what can be attached, and a message with the chosen ones
//! read and appended. Files are read as `read_file` reads them; resources come from their
//! servers. The result is the user's own turn, each attachment labelled with where it
//! came from.

use tokio_util::sync::CancellationToken;

use crate::mcp::McpManager;
use crate::protocol::Attachment;
use crate::tools::sandbox::Workspace;
use crate::tools::sandbox::attach::{attachable_files, attachable_text};

/// At most this many workspace files are offered.
const MAX_FILES: usize = 2_000;
/// The most of one file that is attached.
const MAX_FILE_BYTES: u64 = 256 * 1024;
/// The most of one resource that is attached, in characters.
const MAX_RESOURCE_CHARS: usize = 256 * 1024;
/// Listing every server's resources for the picker takes at most this long.
const LIST_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);
/// A longer resource URI is not offered.
const MAX_URI_CHARS: usize = 2048;

/// Workspace files, then the MCP servers' resources.
pub(super) async fn attachable(mcp: &McpManager, workspace: Workspace) -> Vec<Attachment> {
    let files = tokio::task::spawn_blocking(move || attachable_files(&workspace, MAX_FILES))
        .await
        .unwrap_or_default();
    let mut all: Vec<Attachment> = files
        .into_iter()
        .map(|path| Attachment::File { path })
        .collect();
    let cancel = CancellationToken::new();
    let resources = match tokio::time::timeout(LIST_DEADLINE, mcp.resources(&cancel)).await {
        Ok(resources) => resources,
        Err(_) => {
            cancel.cancel();
            tracing::warn!("listing MCP resources took over {LIST_DEADLINE:?}; none offered");
            Vec::new()
        }
    };
    // The URI is read back as it is: one that is not plain text is not offered.
    let plain = |uri: &str| {
        uri.chars().count() <= MAX_URI_CHARS
            && !uri
                .chars()
                .any(|c| c.is_control() || crate::base::text::is_invisible(c))
    };
    all.extend(
        resources
            .into_iter()
            .filter(|(_, resource)| plain(&resource.uri))
            .map(|(server, resource)| Attachment::Resource {
                server,
                uri: resource.uri,
                name: crate::base::text::short_line(&resource.name, 120).0,
            }),
    );
    all
}

/// `text` with each attachment read and appended, or the first that cannot be read and
/// why.
pub(super) async fn attach(
    text: &str,
    attachments: &[Attachment],
    mcp: &McpManager,
    workspace: &Workspace,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let mut message = text.to_string();
    for attachment in attachments {
        let (source, content) = match attachment {
            Attachment::File { path } => {
                let (workspace, read_path) = (workspace.clone(), path.clone());
                let read = tokio::task::spawn_blocking(move || {
                    attachable_text(&workspace, &read_path, MAX_FILE_BYTES)
                })
                .await
                .map_err(|e| e.to_string())?;
                (format!("file {path:?}"), read?)
            }
            Attachment::Resource { server, uri, .. } => {
                let mut content = mcp.resource_text(server, uri, cancel).await?;
                if content.chars().count() > MAX_RESOURCE_CHARS {
                    content = content.chars().take(MAX_RESOURCE_CHARS).collect();
                    content.push_str(&format!("\n... [cut at {MAX_RESOURCE_CHARS} characters]"));
                }
                (
                    format!("MCP resource {uri:?} of server `{server}`"),
                    content,
                )
            }
        };
        let fence = crate::base::text::fence_for(&content);
        message.push_str(&format!(
            "\n\n[attached: {source}]\n{fence}\n{content}\n{fence}"
        ));
    }
    Ok(message)
}

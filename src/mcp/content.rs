//! Turns an MCP `CallToolResult` into the text a model reads.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// Joins the result's content blocks into text. Text is kept as is; binary content is
/// described rather than dumped (the model cannot read base64 and it wastes tokens);
/// structured content stands in when there is no content at all.
pub fn result_text(result: &CallToolResult) -> String {
    let parts: Vec<String> = result.content.iter().map(block_text).collect();
    if parts.is_empty() {
        return match &result.structured_content {
            Some(value) => value.to_string(),
            None => String::new(),
        };
    }
    parts.join("\n")
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => {
            format!(
                "[image: {}, {} bytes of base64]",
                image.mime_type,
                image.data.len()
            )
        }
        ContentBlock::Audio(audio) => {
            format!(
                "[audio: {}, {} bytes of base64]",
                audio.mime_type,
                audio.data.len()
            )
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource {uri}: {}, {} bytes of base64]",
                mime_type.as_deref().unwrap_or("binary"),
                blob.len()
            ),
            _ => String::from("[resource of an unknown kind]"),
        },
        ContentBlock::ResourceLink(link) => {
            format!("[resource link: {} ({})]", link.uri, link.name)
        }
        _ => String::from("[content of an unknown kind]"),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ContentBlock as Content;
    use serde_json::json;

    use super::*;

    #[test]
    fn text_and_binary_and_structured() {
        let r = CallToolResult::success(vec![
            Content::text("a"),
            Content::image("AAAA", "image/png"),
        ]);
        assert_eq!(result_text(&r), "a\n[image: image/png, 4 bytes of base64]");
        let mut r = CallToolResult::success(vec![]);
        r.structured_content = Some(json!({"x": 1}));
        assert_eq!(result_text(&r), r#"{"x":1}"#);
    }
}

//! Turns MCP content (a `CallToolResult`, a resource's contents) into the text a model
//! reads, and the images in it into images a vision model is shown.

use base64::Engine as _;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::protocol::ImagePart;
use crate::tools::builtin::view_image::{MAX_IMAGE_BYTES, media_type};

/// At most this many images of one result are attached.
pub(super) const MAX_IMAGES: usize = 4;

/// Joins the result's content blocks into text. Text is kept as is; binary content is
/// described rather than dumped (the model cannot read base64 and it wastes tokens).
/// Structured content (`structuredContent`) follows as compact JSON, unless a text block
/// already is that JSON (servers are asked to include it as text too): never twice.
pub(super) fn result_text(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result.content.iter().map(block_text).collect();
    if let Some(value) = result.structured_content.as_ref().filter(|v| !v.is_null()) {
        let compact = value.to_string();
        // Only a block of about its size can be the same JSON: nothing else is parsed.
        let near = |text: &str| text.len() >= compact.len() && text.len() <= compact.len() * 8 + 64;
        let repeated = result.content.iter().any(|block| match block {
            ContentBlock::Text(text) => {
                near(&text.text)
                    && serde_json::from_str::<serde_json::Value>(&text.text)
                        .is_ok_and(|v| v == *value)
            }
            _ => false,
        });
        if !repeated {
            parts.push(if parts.is_empty() {
                compact
            } else {
                format!("[structured content]\n{compact}")
            });
        }
    }
    parts.join("\n")
}

/// The images of a tool result that can be attached (see [`image_part`]), at most
/// [`MAX_IMAGES`].
pub(super) fn result_images(result: &CallToolResult, label: &str) -> Vec<ImagePart> {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Image(image) => image_part(Some(&image.mime_type), &image.data, label),
            _ => None,
        })
        .take(MAX_IMAGES)
        .collect()
}

/// `data` (base64) as an image to attach, if it is one a model can be shown: declared an
/// image, valid base64 of a type `view_image` accepts (by its bytes, whatever was
/// declared), and no larger than it allows. `label` says where it came from.
pub(super) fn image_part(mime_type: Option<&str>, data: &str, label: &str) -> Option<ImagePart> {
    if !mime_type?.trim().to_ascii_lowercase().starts_with("image/") {
        return None;
    }
    // Checked on the length first, so a huge blob is never decoded.
    if data.len() as u64 > MAX_IMAGE_BYTES.div_ceil(3) * 4 + 4 {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return None;
    }
    Some(ImagePart {
        path: label.to_string(),
        media_type: media_type(&bytes)?.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

/// A resource's contents as text: its text under its URI, binary contents described.
pub(super) fn resource_text(contents: &ResourceContents) -> String {
    match contents {
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
    }
}

/// One content block as text.
pub(super) fn block_text(block: &ContentBlock) -> String {
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
        ContentBlock::Resource(embedded) => resource_text(&embedded.resource),
        ContentBlock::ResourceLink(link) => {
            let mut text = format!("[resource link: {} ({}", link.uri, link.name);
            if let Some(mime) = &link.mime_type {
                text.push_str(&format!(", {mime}"));
            }
            text.push_str(")]");
            text
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
        // Beside other text it follows, compact; a text block that is the same JSON
        // (however it is spaced) stands for it.
        let mut r = CallToolResult::success(vec![Content::text("It is 21 degrees.")]);
        r.structured_content = Some(json!({"temperature": 21, "unit": "C"}));
        assert_eq!(
            result_text(&r),
            "It is 21 degrees.\n[structured content]\n{\"temperature\":21,\"unit\":\"C\"}"
        );
        let mut r = CallToolResult::success(vec![Content::text("{\n  \"x\": 1\n}")]);
        r.structured_content = Some(json!({"x": 1}));
        assert_eq!(result_text(&r), "{\n  \"x\": 1\n}", "never twice");
        let mut r = CallToolResult::success(vec![Content::text("ok")]);
        r.structured_content = Some(serde_json::Value::Null);
        assert_eq!(result_text(&r), "ok", "null is no structured content");
    }
}

//! `view_image(image_path)`: shows a workspace image to a vision model. The image is not
//! part of the tool result (tool messages carry text only); it is queued in the thread state
//! and attached to the next model call as an image part (see
//! [`crate::agent::layers::images`]).

use std::io::Read;

use base64::Engine;
use serde::Deserialize;
use serde_json::{Map, json};

use crate::protocol::ImagePart;
use crate::tools::Effect;
use crate::tools::sandbox::Workspace;
use crate::tools::sandbox::files::open_read;
use crate::tools::{
    StateUpdate, ToolContext, ToolFuture, ToolInfo, ToolOutput, ToolSource, TypedTool,
};

pub(crate) const VIEW_IMAGE: &str = "view_image";

/// The largest image accepted: providers cap request sizes, and base64 adds a third.
pub(crate) const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// Reads a workspace image for the next model call. Offered only to vision models.
pub(crate) struct ViewImage {
    info: ToolInfo,
    workspace: Workspace,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    image_path: String,
}

/// The media type of an image from its first bytes (never from its file name or a
/// declared type).
pub(crate) fn media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

impl ViewImage {
    /// The tool over `workspace`.
    pub(crate) fn new(workspace: Workspace) -> Self {
        Self {
            info: ToolInfo {
                name: VIEW_IMAGE.to_string(),
                description: "Look at an image file in the workspace (PNG, JPEG, GIF or WebP, \
                              at most 5 MiB). The image is shown to you with your next step."
                    .to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "image_path": {
                            "type": "string",
                            "description": "Path of the image, relative to the workspace."
                        }
                    },
                    "required": ["image_path"]
                }),
                source: ToolSource::BuiltIn,
                metadata: Map::new(),
                parallel: true,
            },
            workspace,
        }
    }

    fn load(&self, path: &str) -> Result<ImagePart, String> {
        let resolved = self
            .workspace
            .resolve_existing(path)
            .map_err(|e| e.to_string())?;
        let file = open_read(&resolved, path).map_err(|e| e.message("read", path))?;
        let size = file
            .metadata()
            .map_err(|e| format!("Error: cannot read `{path}`: {e}"))?
            .len();
        if size > MAX_IMAGE_BYTES {
            return Err(format!(
                "Error: `{path}` is {size} bytes; images may be at most {MAX_IMAGE_BYTES} bytes."
            ));
        }
        let mut bytes = Vec::new();
        file.take(MAX_IMAGE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("Error: cannot read `{path}`: {e}"))?;
        let media_type = media_type(&bytes)
            .ok_or_else(|| format!("Error: `{path}` is not a PNG, JPEG, GIF or WebP image."))?;
        Ok(ImagePart {
            path: path.to_string(),
            media_type: media_type.to_string(),
            data: base64::engine::general_purpose::STANDARD.encode(&bytes),
        })
    }
}

impl TypedTool for ViewImage {
    type Args = Args;

    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn run<'a>(&'a self, _ctx: ToolContext<'a>, args: Args) -> ToolFuture<'a> {
        Box::pin(async move {
            match self.load(&args.image_path) {
                Ok(image) => ToolOutput {
                    content: format!(
                        "Loaded {} ({}); it is attached to your next step.",
                        image.path, image.media_type
                    ),
                    is_error: false,
                    state_update: Some(Box::new(StateUpdate {
                        images: vec![image],
                        ..StateUpdate::default()
                    })),
                },
                Err(message) => ToolOutput::error(message),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SandboxConfig;
    use crate::tools::CallStandalone;

    #[tokio::test]
    async fn images_are_read_by_content_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        let png = b"\x89PNG\r\n\x1a\nrest".to_vec();
        std::fs::write(dir.path().join("pic.dat"), &png).unwrap();
        std::fs::write(dir.path().join("fake.png"), b"not an image").unwrap();
        let big = std::fs::File::create(dir.path().join("big.png")).unwrap();
        big.set_len(MAX_IMAGE_BYTES + 1).unwrap();
        let ws = Workspace::from_config(&SandboxConfig::default(), dir.path()).unwrap();
        let tool = ViewImage::new(ws);

        let out = tool.call_standalone(json!({"image_path": "pic.dat"})).await;
        assert!(!out.is_error, "{}", out.content);
        let image = &out.state_update.unwrap().images[0];
        assert_eq!(image.media_type, "image/png");
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&image.data)
                .unwrap(),
            png
        );
        for (path, needle) in [
            ("fake.png", "not a PNG"),
            ("big.png", "at most"),
            ("/etc/passwd", "outside the workspace"),
        ] {
            let out = tool.call_standalone(json!({"image_path": path})).await;
            assert!(
                out.is_error && out.content.contains(needle),
                "{}",
                out.content
            );
        }
    }

    #[test]
    fn media_types_by_magic() {
        assert_eq!(media_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(media_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(media_type(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(media_type(b"%PDF-1.7"), None);
    }
}

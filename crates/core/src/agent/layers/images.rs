//! Images: what `view_image` or an MCP result queued in the thread state is attached to
//! the next model call as a message with image parts (tool results carry text only),
//! stored with the history. A model that cannot see images gets none (the results
//! describe them in words).

use crate::agent::middleware::{Layer, ModelCall};
use crate::agent::state::ThreadState;
use crate::protocol::Message;

/// Before a model call, moves queued images into the history.
pub(crate) struct Images {
    /// Whether the model can see them; if not, they are dropped.
    pub vision: bool,
}

impl Layer for Images {
    fn name(&self) -> &'static str {
        "images"
    }

    fn before_model(&self, state: &mut ThreadState, call: &mut ModelCall<'_>) {
        if state.pending_images.is_empty() {
            return;
        }
        let images = std::mem::take(&mut state.pending_images);
        if !self.vision {
            return;
        }
        let paths: Vec<&str> = images.iter().map(|i| i.path.as_str()).collect();
        let content = format!("The image(s) from your tool calls: {}", paths.join(", "));
        call.messages.push(Message::Images { content, images });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::middleware::Chain;
    use crate::protocol::ImagePart;

    #[test]
    fn queued_images_become_one_message_once() {
        let chain = Chain::new().with(Images { vision: true });
        let mut state = ThreadState::default();
        state.pending_images.push(ImagePart {
            path: "a.png".into(),
            media_type: "image/png".into(),
            data: "AAAA".into(),
        });
        let mut messages = Vec::new();
        chain.prepare_model_call(&mut state, &mut messages, Vec::new());
        assert_eq!(messages.len(), 1);
        assert!(matches!(&messages[0], Message::Images { content, images }
            if content.ends_with("a.png") && images.len() == 1));
        chain.prepare_model_call(&mut state, &mut messages, Vec::new());
        assert_eq!(messages.len(), 1, "attached once");

        let blind = Chain::new().with(Images { vision: false });
        state.pending_images.push(ImagePart {
            path: "b.png".into(),
            media_type: "image/png".into(),
            data: "AAAA".into(),
        });
        blind.prepare_model_call(&mut state, &mut messages, Vec::new());
        assert_eq!(messages.len(), 1, "a model without vision is sent none");
        assert!(state.pending_images.is_empty(), "and they do not pile up");
    }
}

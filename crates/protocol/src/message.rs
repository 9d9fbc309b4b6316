//! The conversation: what the user, the model and the tools said.

use serde::{Deserialize, Serialize};

/// An image a tool asks to show the model (`view_image`), sent with the next model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImagePart {
    /// Where it came from, for people reading the thread.
    pub path: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The bytes, base64-encoded.
    pub data: String,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id, echoed in the result.
    pub id: String,
    /// As the model wrote it, which may be no tool's.
    pub name: String,
    /// The arguments as the model wrote them (JSON text, possibly invalid).
    pub arguments: String,
}

/// One message of a thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// What the user wrote.
    User {
        /// As the model reads it: attached files and skills the user loaded are already in it.
        content: String,
    },
    /// What the model answered, with the tools it called.
    Assistant {
        /// The text (may be empty when it only calls tools).
        content: String,
        /// The model's reasoning (`reasoning_content`), kept for display; not sent back.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reasoning: String,
        /// The tool calls, in the model's order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        /// The call this answers.
        call_id: String,
        /// The name the call asked for, as in its [`ToolCall`].
        name: String,
        /// The text the model reads.
        content: String,
        /// Whether the call failed.
        is_error: bool,
    },
    /// A summary the model wrote of older messages it replaces; sent as a user message.
    Summary {
        /// The model's words only; the OpenAI provider says what they are when it sends them.
        content: String,
    },
    /// Images a tool asked to show the model (`view_image`); sent as a user message with
    /// image parts.
    Images {
        /// A line saying what the images are.
        content: String,
        /// Each with its path and media type, the data base64.
        images: Vec<ImagePart>,
    },
}

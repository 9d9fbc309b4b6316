//! What can be wrong with a model directory.

use std::path::PathBuf;

/// Why the sentence encoder cannot be used. Search then falls back to the built-in ranking;
/// `doctor` and `models fetch` show the message.
#[derive(Debug, thiserror::Error)]
pub enum EncoderError {
    /// The directory has no such file.
    #[error("{} is missing", .0.display())]
    Missing(PathBuf),
    /// A file could not be read.
    #[error("cannot read {}: {message}", path.display())]
    Read {
        /// Which of a model directory's files.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A file is larger than any model of this kind needs.
    #[error("{} is over {limit} bytes", path.display())]
    TooLarge {
        /// Which of a model directory's files.
        path: PathBuf,
        /// The most antler reads of such a file, in bytes.
        limit: u64,
    },
    /// A JSON file is malformed or lacks a field.
    #[error("{}: {message}", path.display())]
    Json {
        /// Which of a model directory's files.
        path: PathBuf,
        /// What is wrong, with the field.
        message: String,
    },
    /// The weights file is not valid safetensors.
    #[error("{}: not a safetensors file: {message}", path.display())]
    Safetensors {
        /// Which of a model directory's files.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A tensor is missing or has the wrong type or shape.
    #[error("model weights: {0}")]
    Tensor(String),
    /// The configuration describes a model this encoder cannot run.
    #[error("model configuration: {0}")]
    Shape(String),
}

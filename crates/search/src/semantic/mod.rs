//! The sentence encoder: all-MiniLM-L6-v2 (or another BERT sentence-transformers model) run
//! in pure Rust at query time, so `tool_search` ranks by meaning and not only by shared
//! words. The model is read from a directory the user installs (`antler models fetch`);
//! without one, search uses its built-in ranking.

mod bert;
pub mod cache;
mod e5;
mod encoder;
mod error;
mod few_rows;
mod matrix;
pub mod install;
mod model;
pub mod wordpiece;

pub use e5::E5_WEIGHTS_FILE;
pub use encoder::{CONFIG_FILE, Embedding, Encoder, TOKENIZER_FILE, VOCAB_FILE, WEIGHTS_FILE};
pub use error::EncoderError;
pub use model::{
    MODEL_ENV, MODEL_NAME, MULTILINGUAL_MODEL_NAME, ModelLocation, ModelSource, SemanticModel,
    embedding_workers,
};

#[cfg(test)]
pub(crate) mod testing;

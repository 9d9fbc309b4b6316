//! The embedded model: a small open-weights chat model run inside antler's own process on
//! the CPU (candle's quantized kernels over a GGUF file), used with `-m embedded` and when no
//! model endpoint is configured. Nothing is loaded until its first call.
//!
//! - [`catalog`]: which models (pinned files) and where they are installed;
//! - [`install`]: `antler models fetch chat`, and the hash check before a file is parsed;
//! - [`engine`]: the loaded model, its prompt cache and generation;
//! - [`qwen2`]: the decoder; [`template`]: the model's chat template.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub mod catalog;
pub(crate) mod engine;
pub(crate) mod install;
mod qwen2;
mod template;

use self::catalog::ChatModel;
use self::engine::Engine;
use super::text_calls::{HoldBack, adopt};
use super::{ModelEvent, ModelReply, ModelRequest, Provider, ProviderError, ReplyFuture};
use crate::protocol::Usage;

/// The name `-m` takes for the embedded model.
pub const EMBEDDED: &str = "embedded";

/// Why the embedded model could not answer.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    /// The file is not the pinned one.
    #[error(transparent)]
    Verify(#[from] install::InstallError),
    /// The file could not be loaded.
    #[error("loading the embedded model: {0}")]
    Load(String),
    /// The prompt could not be built.
    #[error("building the prompt: {0}")]
    Prompt(String),
    /// The prompt does not fit.
    #[error(
        "the prompt is {prompt} tokens, past the embedded model's context window of {window} \
         tokens"
    )]
    ContextLength {
        /// The prompt's tokens; estimated at 4 bytes a token when it is too long to tokenize.
        prompt: usize,
        /// The model's context window, in tokens.
        window: usize,
    },
    /// A step of the model failed.
    #[error("the embedded model failed: {0}")]
    Inference(String),
    /// The call was cancelled.
    #[error("cancelled")]
    Cancelled,
}

/// The embedded model as a [`Provider`].
pub struct EmbeddedProvider {
    model: ChatModel,
    path: PathBuf,
    endpoint: String,
    /// Loaded at the first call, then kept with its prompt cache.
    engine: Arc<Mutex<Option<Engine>>>,
    ids: AtomicU64,
}

/// Sets the flag when the call's future is dropped (Ctrl-C, Esc): generation stops at its
/// next token.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl EmbeddedProvider {
    /// The provider for `model`'s file at `path`; nothing is read yet.
    pub fn new(model: ChatModel, path: PathBuf) -> Self {
        Self {
            endpoint: format!("{} (embedded, {})", path.display(), model.title),
            model,
            path,
            engine: Arc::new(Mutex::new(None)),
            ids: AtomicU64::new(0),
        }
    }

    /// The model it runs.
    pub fn chat_model(&self) -> ChatModel {
        self.model
    }

    /// Loads the model (if it is not yet) and runs a short fixed prompt: how long loading
    /// took (`None` when it was loaded already) and what the generation measured. For
    /// `doctor` and the benchmark.
    pub fn probe(
        &self,
        request: &ModelRequest,
    ) -> Result<(Option<std::time::Duration>, engine::Generation), EmbeddedError> {
        let mut slot = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        let loaded = load(&mut slot, &self.model, &self.path)?;
        let Some(engine) = slot.as_mut() else {
            return Err(EmbeddedError::Load("not loaded".into()));
        };
        let generation = engine.generate(request, &AtomicBool::new(false), &|_| {})?;
        Ok((loaded, generation))
    }

    fn failure(&self, err: &EmbeddedError) -> ProviderError {
        let message = err.to_string();
        match err {
            // "context window" in the message makes it a context-length error.
            EmbeddedError::ContextLength { .. } => ProviderError::Status {
                endpoint: self.endpoint.clone(),
                status: 400,
                message,
            },
            _ => ProviderError::Protocol {
                endpoint: self.endpoint.clone(),
                message,
            },
        }
    }
}

/// Verifies and loads the model into `slot` unless it is there: how long that took.
fn load(
    slot: &mut Option<Engine>,
    model: &ChatModel,
    path: &std::path::Path,
) -> Result<Option<std::time::Duration>, EmbeddedError> {
    if slot.is_some() {
        return Ok(None);
    }
    let started = std::time::Instant::now();
    install::verify(path, model)?;
    *slot = Some(Engine::load(path)?);
    let took = started.elapsed();
    tracing::debug!(ms = took.as_millis() as u64, "embedded model: loaded");
    Ok(Some(took))
}

impl Provider for EmbeddedProvider {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a (dyn Fn(ModelEvent) + Send + Sync),
    ) -> ReplyFuture<'a> {
        Box::pin(async move {
            let cancel = Arc::new(AtomicBool::new(false));
            let _cancel_on_drop = CancelOnDrop(cancel.clone());
            let (sender, mut deltas) = tokio::sync::mpsc::unbounded_channel();
            let engine = self.engine.clone();
            let (model, path, owned) = (self.model, self.path.clone(), request.clone());
            let worker = tokio::task::spawn_blocking(move || {
                let mut slot = engine.lock().unwrap_or_else(|e| e.into_inner());
                load(&mut slot, &model, &path)?;
                let Some(engine) = slot.as_mut() else {
                    return Err(EmbeddedError::Load("not loaded".into()));
                };
                engine.generate(&owned, &cancel, &|text| {
                    let _ = sender.send(text);
                })
            });
            let held = HoldBack::new(events);
            while let Some(text) = deltas.recv().await {
                held.event(ModelEvent::TextDelta(text));
            }
            let generation = match worker.await {
                Ok(Ok(generation)) => generation,
                Ok(Err(err)) => return Err(self.failure(&err)),
                Err(join) => {
                    return Err(self.failure(&EmbeddedError::Inference(join.to_string())));
                }
            };
            let mut reply = ModelReply {
                content: generation.text,
                finish_reason: generation.finish,
                usage: Some(Usage {
                    input_tokens: generation.prompt_tokens as u64,
                    cached_input_tokens: generation.cached_tokens as u64,
                    output_tokens: generation.output_tokens as u64,
                }),
                ..ModelReply::default()
            };
            adopt(&mut reply, request, &self.ids);
            held.finish(reply.from_text);
            Ok(reply)
        })
    }

    fn model(&self) -> &str {
        self.model.file.trim_end_matches(".gguf")
    }

    fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

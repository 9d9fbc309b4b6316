//! The session's handle on the sentence encoder: where its model is, the model loaded on
//! first use (once per process, however many catalogs use it), and tool vectors read from
//! the cache or computed and saved there.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use super::Encoder;
use super::cache::{EmbeddingCache, Key, key};

/// The model antler uses by default and `antler models fetch` installs.
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";
/// The multilingual encoder, ranking beside the English one when installed in the models
/// folder under this name.
pub const MULTILINGUAL_MODEL_NAME: &str = "multilingual-e5-small";
/// Overrides where the model directory is.
pub const MODEL_ENV: &str = "ANTLER_SEMANTIC_MODEL";
/// Threads to embed on: every core, or all but one to leave the session one.
pub fn embedding_workers(leave_one: bool) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if leave_one { cores - 1 } else { cores }.max(1)
}

/// Vectors computed between two cache writes: an interrupted run keeps most of its work.
const SAVE_EVERY: usize = 32;

/// Where the model directory setting came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    /// `$ANTLER_SEMANTIC_MODEL`.
    Environment,
    /// `tool_search.semantic.model` in config.yaml.
    Config,
    /// Its folder in `$ANTLER_MODELS_DIR`, where the tests and CI install it.
    ModelsDir,
    /// The default place in the cache folder, where `antler models fetch` installs.
    Default,
}

impl std::fmt::Display for ModelSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Environment => "$ANTLER_SEMANTIC_MODEL",
            Self::Config => "tool_search.semantic.model",
            Self::ModelsDir => "$ANTLER_MODELS_DIR",
            Self::Default => "the default location",
        })
    }
}

/// A model directory, and which setting chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelLocation {
    /// Not checked when located: it may hold no model yet.
    pub dir: PathBuf,
    /// Which setting chose it.
    pub source: ModelSource,
}

/// The sentence encoder of a session.
pub struct SemanticModel {
    location: ModelLocation,
    cache: Option<EmbeddingCache>,
    encoder: OnceLock<Result<Arc<Encoder>, String>>,
}

impl std::fmt::Debug for SemanticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticModel")
            .field("location", &self.location)
            .finish()
    }
}

impl SemanticModel {
    /// The model at `location`, with tool vectors cached in `cache` (none: computed each
    /// run). Nothing is read until the first use.
    pub fn new(location: ModelLocation, cache: Option<EmbeddingCache>) -> Self {
        Self {
            location,
            cache,
            encoder: OnceLock::new(),
        }
    }

    /// Where the model is.
    pub fn location(&self) -> &ModelLocation {
        &self.location
    }

    /// Whether [`SemanticModel::encoder`] may succeed: it did, or it was not tried yet and
    /// the weights file exists (one `stat`).
    pub fn may_load(&self) -> bool {
        match self.encoder.get() {
            Some(loaded) => loaded.is_ok(),
            None => Encoder::has_weights(&self.location.dir),
        }
    }

    /// The loaded encoder; the first call loads it (concurrent callers wait for that one
    /// load), and a failure is remembered, logged once, and returned each time.
    pub fn encoder(&self) -> Result<Arc<Encoder>, String> {
        self.encoder
            .get_or_init(|| {
                let loaded = Encoder::load(&self.location.dir);
                if let Err(err) = &loaded {
                    tracing::info!(
                        "tool search ranks without the sentence encoder (model from {}): {err}",
                        self.location.source
                    );
                }
                loaded.map(Arc::new).map_err(|e| e.to_string())
            })
            .clone()
    }

    /// The cached vectors of `texts` (by position); the others are `None`. A cache that
    /// cannot be read counts as empty.
    pub fn cached(&self, encoder: &Encoder, texts: &[String]) -> Vec<Option<Vec<f32>>> {
        let keys: Vec<Key> = texts.iter().map(|t| key(encoder.id(), t)).collect();
        let mut found = match &self.cache {
            Some(cache) => cache.load(&keys, encoder.dims()).unwrap_or_else(|err| {
                tracing::warn!("{err}");
                HashMap::new()
            }),
            None => HashMap::new(),
        };
        keys.iter().map(|k| found.remove(k)).collect()
    }

    /// Fills the `None` entries of `vectors` by embedding the texts at the same positions,
    /// on `workers` threads, saving them to the cache as they come. `progress(done, total)` follows
    /// the work; `stop()` is asked before each text, and once it says so this returns
    /// `false` with the work done so far saved.
    pub fn embed_missing(
        &self,
        encoder: &Encoder,
        texts: &[String],
        vectors: &mut [Option<Vec<f32>>],
        workers: usize,
        progress: &dyn Fn(usize, usize),
        stop: &(dyn Fn() -> bool + Sync),
    ) -> bool {
        let todo: Vec<usize> = (0..texts.len().min(vectors.len()))
            .filter(|&i| vectors[i].is_none())
            .collect();
        if todo.is_empty() {
            return true;
        }
        let workers = workers.clamp(1, todo.len());
        let next = AtomicUsize::new(0);
        let stopped = Mutex::new(false);
        // (position, vector, whether to cache it: not the stand-in for a failed text).
        let (tx, rx) = mpsc::channel::<(usize, Vec<f32>, bool)>();
        std::thread::scope(|scope| {
            for _ in 0..workers {
                let (tx, next, todo, stopped) = (tx.clone(), &next, &todo, &stopped);
                scope.spawn(move || {
                    loop {
                        if stop() {
                            if let Ok(mut s) = stopped.lock() {
                                *s = true;
                            }
                            return;
                        }
                        let Some(&i) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            return;
                        };
                        // A bug in the encoder costs this text its vector, not the run.
                        let embedded =
                            std::panic::catch_unwind(|| encoder.embed_document(&texts[i]));
                        let (vector, keep) = match embedded {
                            Ok(Some(e)) => (e.vector, true),
                            Ok(None) => (vec![0.0; encoder.dims()], true),
                            Err(_) => {
                                tracing::warn!("embedding a tool text failed; it is skipped");
                                (vec![0.0; encoder.dims()], false)
                            }
                        };
                        if tx.send((i, vector, keep)).is_err() {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            let mut batch = Vec::with_capacity(SAVE_EVERY);
            let mut done = 0;
            for (i, vector, keep) in rx {
                done += 1;
                if keep {
                    batch.push(i);
                }
                vectors[i] = Some(vector);
                if batch.len() == SAVE_EVERY {
                    self.save(encoder, texts, vectors, &batch);
                    batch.clear();
                }
                progress(done, todo.len());
            }
            self.save(encoder, texts, vectors, &batch);
        });
        !stopped.lock().is_ok_and(|s| *s)
    }

    fn save(
        &self,
        encoder: &Encoder,
        texts: &[String],
        vectors: &[Option<Vec<f32>>],
        at: &[usize],
    ) {
        let Some(cache) = &self.cache else {
            return;
        };
        let keys: Vec<(Key, &[f32])> = at
            .iter()
            .filter_map(|&i| Some((key(encoder.id(), &texts[i]), vectors[i].as_deref()?)))
            .collect();
        if let Err(err) = cache.save(keys.iter().map(|(k, v)| (k, *v))) {
            tracing::warn!("{err}");
        }
    }
}

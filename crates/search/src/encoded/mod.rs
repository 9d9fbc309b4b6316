//! Ranking with the sentence encoders (`crate::semantic`): each tool's text is embedded once
//! per encoder (from the cache, or computed), the query at each search, and the cosines
//! blended into the built-in score. Until a catalog's vectors are ready, search uses the
//! built-in ranking alone; a catalog whose vectors are all cached is ready at its first
//! search.
//!
//! Two encoders may rank together: the English one and a multilingual one. Each adds its
//! normalised similarity; a query written in CJK characters is ranked by the multilingual
//! one alone, its words counting little, since the catalog's words are mostly another
//! language's (see [`CJK_LEXICAL`]).

mod vectors;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;

use super::fuse::top;
use super::index::{SCHEMA_DEPTH, collect_schema};
use super::{Hit, Searchable};
use crate::semantic::{Embedding, SemanticModel, embedding_workers};
use vectors::{CJK, Vectors, script};

/// Weight of each encoder's normalised similarity next to the normalised built-in score
/// (tuned on half A of the dev queries, for one encoder and for two).
const ALPHA: f32 = 0.5;
/// Weight of the built-in score for a query in CJK characters when a multilingual encoder
/// ranks it. Tuned on half A of the dev queries and of their Chinese translations: at 1,
/// the few tools described in Chinese win on shared characters whatever the query asks;
/// at 0.1, a Chinese query for a tool described in Chinese loses the words it shares.
const CJK_LEXICAL: f32 = 0.3;
/// How many of the most similar tools get a semantic score (min-max normalised over them).
const SEMANTIC_DEPTH: usize = 100;
/// A tool must be at least this similar to the query to get a semantic score: below it
/// the "closest" tools of a nonsense query are noise, not hits.
const MIN_COSINE: f32 = 0.2;
/// The multilingual encoder's cosines all sit near 0.8 (a nonsense query is 0.79 from every
/// tool, a match 0.82–0.86), so there a tool must instead beat the query's mean cosine over
/// the catalog by this much.
const MULTILINGUAL_MARGIN: f32 = 0.03;

/// Progress of embedding a catalog: `(done, total)`.
pub type EmbedProgress = Arc<dyn Fn(usize, usize) + Send + Sync>;

/// How a catalog whose tools are not all cached gets its vectors.
#[derive(Clone)]
pub enum EmbedMode {
    /// On a background thread, ranking without the encoder until they are ready: for
    /// sessions, where a search must not wait seconds.
    Background,
    /// At the first search, which waits: for batch commands (`tools search`).
    Blocking(Option<EmbedProgress>),
}

/// The encoders and how they are used, for one catalog.
#[derive(Clone)]
pub struct SemanticSearch {
    /// Shared with the session, so its encoder is loaded once.
    pub model: Arc<SemanticModel>,
    /// A multilingual encoder ranking beside `model` (`None`: `model` alone).
    pub multilingual: Option<Arc<SemanticModel>>,
    /// The dictionary glossing Chinese queries into English (`None`: not installed).
    pub dictionary: Option<Arc<crate::gloss::Glossary>>,
    /// When tool vectors are computed.
    pub mode: EmbedMode,
}

impl SemanticSearch {
    /// Whether any of its encoders may load (see [`SemanticModel::may_load`]), or its
    /// dictionary: a search may then read files or run a model, so it belongs off the
    /// async runtime.
    pub fn may_load(&self) -> bool {
        self.models().any(|m| m.may_load())
            || self.dictionary.as_ref().is_some_and(|g| g.may_load())
    }

    fn models(&self) -> impl Iterator<Item = &Arc<SemanticModel>> {
        std::iter::once(&self.model).chain(&self.multilingual)
    }
}

/// The encoder side of one catalog's index.
pub(crate) struct Encoded {
    texts: Arc<Vec<String>>,
    /// Those of the search's encoders that may load, the English one first.
    members: Vec<Member>,
}

/// One encoder's vectors for the catalog.
struct Member {
    model: Arc<SemanticModel>,
    mode: EmbedMode,
    vectors: Arc<OnceLock<Vectors>>,
    started: AtomicBool,
    background: Mutex<Option<JoinHandle<()>>>,
}

impl Encoded {
    /// `None` when none of the search's encoders may load.
    pub(super) fn new<T: Searchable>(tools: &[T], search: &SemanticSearch) -> Option<Self> {
        let members: Vec<Member> = search
            .models()
            .filter(|m| m.may_load())
            .map(|model| Member {
                model: Arc::clone(model),
                mode: search.mode.clone(),
                vectors: Arc::new(OnceLock::new()),
                started: AtomicBool::new(false),
                background: Mutex::new(None),
            })
            .collect();
        if members.is_empty() {
            return None;
        }
        Some(Self {
            texts: Arc::new(tools.iter().map(tool_text).collect()),
            members,
        })
    }

    /// The vectors that are ready. An encoder starts getting its vectors once those before
    /// it are not embedding in the background any more, so one encoder embeds at a time.
    fn ready(&self) -> Vec<&Vectors> {
        let mut ready = Vec::new();
        for member in &self.members {
            match member.ready(&self.texts) {
                Some(vectors) => ready.push(vectors),
                None if member.embedding() => break,
                None => {}
            }
        }
        ready
    }

    /// Waits for background embeddings to finish (tests).
    #[cfg(test)]
    pub(super) fn join_background(&self) {
        for member in &self.members {
            let _ = member.ready(&self.texts);
            let job = member.background.lock().ok().and_then(|mut j| j.take());
            if let Some(job) = job {
                let _ = job.join();
            }
        }
    }

    /// Blends the built-in ranking `builtin` (all its candidates, best first) with the
    /// encoders' similarity; `None` when no encoder is ready, so the caller keeps the
    /// built-in ranking. The built-in score is divided by its best, each cosine min-max
    /// normalised over the encoder's top [`SEMANTIC_DEPTH`]; tools only an encoder finds
    /// count too, when similar enough.
    pub(super) fn blend(
        &self,
        query: &str,
        builtin: &[Hit],
        limit: usize,
        keep: &dyn Fn(usize) -> bool,
    ) -> Option<Vec<Hit>> {
        let mut used = self.ready();
        let cjk = script(query) == CJK && used.iter().any(|v| v.encoder.multilingual());
        if cjk {
            used.retain(|v| v.encoder.multilingual());
        }
        let embeddings = embed_queries(&used, query);
        if embeddings.iter().all(Option::is_none) {
            return None;
        }
        let lexical = if cjk { CJK_LEXICAL } else { 1.0 };
        let mut scores = vec![0f32; self.texts.len()];
        let best = builtin
            .first()
            .map_or(1.0, |h| h.score)
            .max(f32::MIN_POSITIVE);
        for hit in builtin {
            if let Some(s) = scores.get_mut(hit.index) {
                *s += lexical * hit.score / best;
            }
        }
        for (vectors, embedding) in used.iter().zip(embeddings) {
            if let Some(embedding) = embedding {
                add_similarity(vectors, embedding, query, keep, &mut scores);
            }
        }
        let mut hits: Vec<Hit> = scores
            .iter()
            .enumerate()
            .filter(|&(i, &s)| s > 0.0 && keep(i))
            .map(|(index, &score)| Hit { index, score })
            .collect();
        top(&mut hits, limit);
        Some(hits)
    }
}

/// The query's embedding by each encoder; two encoders run side by side on two threads.
fn embed_queries(used: &[&Vectors], query: &str) -> Vec<Option<Embedding>> {
    let [first, rest @ ..] = used else {
        return Vec::new();
    };
    if rest.is_empty() {
        return vec![first.encoder.embed_query(query)];
    }
    std::thread::scope(|scope| {
        // An encoder whose thread cannot start embeds on this one, after the first.
        let others: Vec<_> = rest
            .iter()
            .map(|v| {
                std::thread::Builder::new()
                    .spawn_scoped(scope, move || v.encoder.embed_query(query))
                    .map_err(|_| v)
            })
            .collect();
        let mut all = vec![first.encoder.embed_query(query)];
        all.extend(others.into_iter().map(|job| match job {
            Ok(job) => job.join().ok().flatten(),
            Err(v) => v.encoder.embed_query(query),
        }));
        all
    })
}

/// Adds one encoder's similarity to `scores`: [`ALPHA`] times its trust in the query's
/// vector times the cosine, min-max normalised over its [`SEMANTIC_DEPTH`] most similar
/// tools of at least [`MIN_COSINE`] (for a multilingual encoder, see
/// [`MULTILINGUAL_MARGIN`]).
fn add_similarity(
    vectors: &Vectors,
    embedding: Embedding,
    query: &str,
    keep: &dyn Fn(usize) -> bool,
    scores: &mut [f32],
) {
    let weight = ALPHA * embedding.trust;
    let cosines = vectors.cosines(embedding.vector, query);
    let floor = if vectors.encoder.multilingual() {
        mean_of_embedded(&cosines) + MULTILINGUAL_MARGIN
    } else {
        MIN_COSINE
    };
    let mut semantic: Vec<Hit> = cosines
        .iter()
        .enumerate()
        .filter(|&(i, &c)| c >= floor && keep(i))
        .map(|(index, &score)| Hit { index, score })
        .collect();
    top(&mut semantic, SEMANTIC_DEPTH);
    let (Some(max), Some(min)) = (semantic.first(), semantic.last()) else {
        return;
    };
    let span = max.score - min.score;
    for hit in &semantic {
        let normalised = if span > f32::EPSILON {
            (hit.score - min.score) / span
        } else {
            1.0
        };
        if let Some(s) = scores.get_mut(hit.index) {
            *s += weight * normalised;
        }
    }
}

/// The mean of the cosines of tools that were embedded (a tool that was not has 0).
fn mean_of_embedded(cosines: &[f32]) -> f32 {
    let (sum, n) = cosines
        .iter()
        .filter(|&&c| c != 0.0)
        .fold((0.0, 0u32), |(sum, n), &c| (sum + c, n + 1));
    if n == 0 { 0.0 } else { sum / n as f32 }
}

impl Member {
    /// Whether its vectors are being computed on a background thread.
    fn embedding(&self) -> bool {
        self.background
            .lock()
            .ok()
            .and_then(|slot| slot.as_ref().map(|job| !job.is_finished()))
            .unwrap_or(false)
    }

    /// The tool vectors if they are ready; the first call starts getting them.
    fn ready(&self, texts: &Arc<Vec<String>>) -> Option<&Vectors> {
        if let Some(v) = self.vectors.get() {
            return Some(v);
        }
        if self.started.swap(true, Ordering::AcqRel) {
            return None;
        }
        let encoder = self.model.encoder().ok()?;
        let mut vectors = self.model.cached(&encoder, texts);
        if vectors.iter().all(Option::is_some) {
            return Some(
                self.vectors
                    .get_or_init(|| Vectors::from(encoder, vectors, texts)),
            );
        }
        match &self.mode {
            EmbedMode::Blocking(progress) => {
                let report = |done, total| {
                    if let Some(p) = progress {
                        p(done, total);
                    }
                };
                self.model.embed_missing(
                    &encoder,
                    texts,
                    &mut vectors,
                    embedding_workers(false),
                    &report,
                    &|| false,
                );
                Some(
                    self.vectors
                        .get_or_init(|| Vectors::from(encoder, vectors, texts)),
                )
            }
            EmbedMode::Background => {
                let (model, texts) = (Arc::clone(&self.model), Arc::clone(texts));
                let cell: Weak<OnceLock<Vectors>> = Arc::downgrade(&self.vectors);
                let job = std::thread::Builder::new()
                    .name("antler-embed".into())
                    .spawn(move || {
                        // Stops once the catalog is gone (replaced by a newer one).
                        let gone = || cell.strong_count() == 0;
                        // A core is left to the session.
                        let workers = embedding_workers(true);
                        if model.embed_missing(
                            &encoder,
                            &texts,
                            &mut vectors,
                            workers,
                            &|_, _| {},
                            &gone,
                        ) && let Some(cell) = cell.upgrade()
                        {
                            let _ = cell.set(Vectors::from(encoder, vectors, &texts));
                        }
                    });
                match job {
                    Ok(job) => {
                        if let Ok(mut slot) = self.background.lock() {
                            *slot = Some(job);
                        }
                    }
                    Err(err) => tracing::warn!("cannot start embedding tools: {err}"),
                }
                None
            }
        }
    }
}

/// The text a tool is embedded from: its name as words, its description, and its
/// parameters' names and descriptions.
pub(crate) fn tool_text<T: Searchable>(tool: &T) -> String {
    let mut text = String::new();
    super::fuse::push_words(&mut text, tool.name());
    text.push_str(". ");
    text.push_str(tool.description());
    let (mut names, mut notes) = (String::new(), String::new());
    collect_schema(tool.parameters(), SCHEMA_DEPTH, &mut names, &mut notes);
    if !names.is_empty() {
        text.push_str(". Parameters: ");
        super::fuse::push_words(&mut text, names.trim_end());
        text.push_str(". ");
        text.push_str(&notes.replace('\n', " "));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::SearchIndex;
    use super::super::tests::{Doc, tool};
    use super::*;

    use crate::semantic::cache::EmbeddingCache;
    use crate::semantic::testing::model_dir;
    use crate::semantic::{ModelLocation, ModelSource};

    fn catalog() -> Vec<Doc> {
        vec![
            tool("notes", "create_note", "Write a new note."),
            tool("weather", "get_forecast", "Weather forecast for a city."),
            tool("shop", "list_orders", "The customer's past orders."),
        ]
    }

    fn model(cache: Option<EmbeddingCache>) -> Arc<SemanticModel> {
        let location = ModelLocation {
            dir: model_dir(),
            source: ModelSource::Environment,
        };
        Arc::new(SemanticModel::new(location, cache))
    }

    fn names(index: &SearchIndex, tools: &[Doc], query: &str) -> Vec<String> {
        index
            .search(query, 3, &|_| true)
            .iter()
            .map(|h| tools[h.index].name.clone())
            .collect()
    }

    #[test]
    fn the_encoder_finds_what_shares_no_word_with_the_query() {
        let tools = catalog();
        let plain = SearchIndex::new(&tools);
        let query = "will it rain in Paris tomorrow";
        assert!(names(&plain, &tools, query).is_empty(), "no word is shared");
        let semantic = SemanticSearch {
            model: model(None),
            multilingual: None,
            dictionary: None,
            mode: EmbedMode::Blocking(None),
        };
        assert!(semantic.may_load());
        let index = SearchIndex::with_semantic(&tools, Some(semantic));
        assert_eq!(names(&index, &tools, query)[0], "weather_get_forecast");
        assert!(
            index.search_quick(query, 3, &|_| true).is_empty(),
            "the quick search does not use the encoder"
        );
        // Nonsense is not similar enough to anything.
        assert!(names(&index, &tools, "zzqx vvk").is_empty());
        // Lexical evidence still leads.
        assert_eq!(names(&index, &tools, "orders")[0], "shop_list_orders");
    }

    #[test]
    fn two_encoders_rank_english_and_chinese_and_not_nonsense() {
        let tools = catalog();
        let multilingual = ModelLocation {
            dir: crate::semantic::testing::multilingual_dir(),
            source: ModelSource::ModelsDir,
        };
        let semantic = SemanticSearch {
            model: model(None),
            multilingual: Some(Arc::new(SemanticModel::new(multilingual, None))),
            dictionary: None,
            mode: EmbedMode::Blocking(None),
        };
        let index = SearchIndex::with_semantic(&tools, Some(semantic));
        assert_eq!(
            names(&index, &tools, "will it rain in Paris tomorrow")[0],
            "weather_get_forecast"
        );
        assert_eq!(
            names(&index, &tools, "明天巴黎会下雨吗")[0],
            "weather_get_forecast"
        );
        // The multilingual encoder finds every tool about 0.79 similar to these.
        for nonsense in ["zzqx vvk", "qwpoe zmxnv", "asdf"] {
            assert!(names(&index, &tools, nonsense).is_empty(), "{nonsense}");
        }
        assert_eq!(
            names(&index, &tools, "my past purchases")[0],
            "shop_list_orders"
        );
    }

    #[test]
    fn background_embedding_ranks_without_the_encoder_until_ready_then_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let cache = EmbeddingCache::at(dir.path().join("embeddings.sqlite"));
        let tools = catalog();
        let search = SemanticSearch {
            model: model(Some(cache.clone())),
            multilingual: None,
            dictionary: None,
            mode: EmbedMode::Background,
        };
        let index = SearchIndex::with_semantic(&tools, Some(search.clone()));
        let query = "will it rain in Paris tomorrow";
        assert!(
            names(&index, &tools, query).is_empty(),
            "the fallback ranks"
        );
        index.join_background();
        assert_eq!(names(&index, &tools, query)[0], "weather_get_forecast");
        // Saved: a new catalog of the same tools is ready at its first search.
        let again = SearchIndex::with_semantic(&tools, Some(search));
        assert_eq!(names(&again, &tools, query)[0], "weather_get_forecast");
    }

    #[test]
    fn a_missing_model_falls_back_to_the_builtin_ranking() {
        let tools = catalog();
        let location = ModelLocation {
            dir: std::path::PathBuf::from("/nonexistent/model"),
            source: ModelSource::Config,
        };
        let model = Arc::new(SemanticModel::new(location, None));
        assert!(!model.may_load(), "no weights file");
        assert!(model.encoder().unwrap_err().contains("config.json"));
        assert!(!model.may_load(), "it failed");
        let semantic = SemanticSearch {
            model,
            multilingual: None,
            dictionary: None,
            mode: EmbedMode::Blocking(None),
        };
        let index = SearchIndex::with_semantic(&tools, Some(semantic));
        let plain = SearchIndex::new(&tools);
        for q in ["forecast", "orders note", "will it rain"] {
            assert_eq!(names(&index, &tools, q), names(&plain, &tools, q));
        }
    }

    #[test]
    fn tool_text_has_name_words_description_and_parameters() {
        let text = tool_text(&tool("weather", "getForecast", "Forecast."));
        assert_eq!(text, "weather get Forecast. Forecast.. Parameters: query. ");
    }
}

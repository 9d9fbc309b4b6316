//! Ranking with the sentence encoder (`crate::semantic`): each tool's text is embedded once
//! (from the cache, or computed), the query at each search, and the cosine blended into
//! the built-in score. Until a catalog's vectors are ready, search uses the built-in
//! ranking alone; a catalog whose vectors are all cached is ready at its first search.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;

use super::fuse::top;
use super::index::{SCHEMA_DEPTH, collect_schema};
use super::{Hit, Searchable};
use crate::semantic::{Encoder, SemanticModel, embedding_workers};

/// Weight of the encoder's normalised similarity next to the normalised built-in score
/// (tuned on half A of the dev queries).
const ALPHA: f32 = 0.5;
/// Tools of one script needed before their mean vector is taken out.
const CENTROID_MIN: usize = 5;
/// How many of the most similar tools get a semantic score (min-max normalised over them).
const SEMANTIC_DEPTH: usize = 100;
/// A tool found by the encoder alone must be at least this similar to the query: below it
/// the "closest" tools of a nonsense query are noise, not hits.
const MIN_COSINE: f32 = 0.2;

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

/// The encoder and how it is used, for one catalog.
#[derive(Clone)]
pub struct SemanticSearch {
    /// Shared with the session, so its encoder is loaded once.
    pub model: Arc<SemanticModel>,
    /// When tool vectors are computed.
    pub mode: EmbedMode,
}

/// One unit vector per tool, row-major.
struct Vectors {
    encoder: Arc<Encoder>,
    rows: Vec<f32>,
    /// For a multilingual encoder, the tools' vectors with the mean vector of their script
    /// taken out (CJK or not), and the two means: a query written in CJK characters is
    /// compared with these, its own script's mean taken out too, so that what is left is
    /// the meaning, not the language (otherwise the few tools described in Chinese draw
    /// every Chinese query). Other queries are compared with the vectors as they are.
    centered: Option<Centered>,
}

/// The tools' vectors with their script's mean taken out, and the two means.
struct Centered {
    rows: Vec<f32>,
    means: [Option<Vec<f32>>; 2],
}

impl Centered {
    /// `None` when neither script has [`CENTROID_MIN`] tools.
    fn of(rows: &[f32], texts: &[String], dims: usize) -> Option<Self> {
        let mut means = [None, None];
        for (lang, mean) in means.iter_mut().enumerate() {
            let members: Vec<&[f32]> = rows
                .chunks_exact(dims.max(1))
                .zip(texts)
                .filter(|(r, t)| script(t) == lang && embedded(r))
                .map(|(r, _)| r)
                .collect();
            if members.len() >= CENTROID_MIN {
                let mut sum = vec![0f32; dims];
                for r in &members {
                    for (s, x) in sum.iter_mut().zip(*r) {
                        *s += x / members.len() as f32;
                    }
                }
                *mean = Some(sum);
            }
        }
        if means.iter().all(Option::is_none) {
            return None;
        }
        let mut centered_rows = rows.to_vec();
        for (row, text) in centered_rows.chunks_exact_mut(dims.max(1)).zip(texts) {
            if let Some(mean) = &means[script(text)]
                && embedded(row)
            {
                centered(row, mean);
            }
        }
        Some(Self {
            rows: centered_rows,
            means,
        })
    }
}

/// A tool whose text could not be embedded has a row of zeros: it stays zero (no cosine).
fn embedded(row: &[f32]) -> bool {
    row.iter().any(|&x| x != 0.0)
}

/// The index of a text written mostly in CJK characters (any other text is 0).
const CJK: usize = 1;

/// [`CJK`] or not, as an index.
fn script(text: &str) -> usize {
    usize::from(cjk_share(text) > 0.3)
}

/// Subtracts `centroid` from `v` and scales the rest to unit length.
fn centered(v: &mut [f32], centroid: &[f32]) {
    for (x, c) in v.iter_mut().zip(centroid) {
        *x -= c;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > f32::EPSILON {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

impl Vectors {
    fn from(encoder: Arc<Encoder>, vectors: Vec<Option<Vec<f32>>>, texts: &[String]) -> Self {
        let dims = encoder.dims();
        let mut rows = Vec::with_capacity(vectors.len() * dims);
        for v in vectors {
            match v {
                Some(v) if v.len() == dims => rows.extend(v),
                _ => rows.extend(std::iter::repeat_n(0.0, dims)),
            }
        }
        let centered = encoder
            .multilingual()
            .then(|| Centered::of(&rows, texts, dims))
            .flatten();
        Self {
            encoder,
            rows,
            centered,
        }
    }

    /// The query's cosine with each tool: for a query in CJK characters and a multilingual
    /// encoder, with each script's mean taken out.
    fn cosines(&self, mut query: Vec<f32>, text: &str) -> Vec<f32> {
        let rows = match &self.centered {
            Some(c) if script(text) == CJK => {
                if let Some(mean) = &c.means[CJK] {
                    centered(&mut query, mean);
                }
                &c.rows
            }
            _ => &self.rows,
        };
        rows.chunks_exact(query.len().max(1))
            .map(|row| row.iter().zip(&query).map(|(a, b)| a * b).sum())
            .collect()
    }
}

/// The encoder side of one catalog's index.
pub(crate) struct Encoded {
    search: SemanticSearch,
    texts: Arc<Vec<String>>,
    vectors: Arc<OnceLock<Vectors>>,
    started: AtomicBool,
    background: Mutex<Option<JoinHandle<()>>>,
}

impl Encoded {
    pub(super) fn new<T: Searchable>(tools: &[T], search: SemanticSearch) -> Self {
        Self {
            search,
            texts: Arc::new(tools.iter().map(tool_text).collect()),
            vectors: Arc::new(OnceLock::new()),
            started: AtomicBool::new(false),
            background: Mutex::new(None),
        }
    }

    /// The tool vectors if they are ready; the first call starts getting them.
    fn ready(&self) -> Option<&Vectors> {
        if let Some(v) = self.vectors.get() {
            return Some(v);
        }
        if self.started.swap(true, Ordering::AcqRel) {
            return None;
        }
        let encoder = self.search.model.encoder().ok()?;
        let mut vectors = self.search.model.cached(&encoder, &self.texts);
        if vectors.iter().all(Option::is_some) {
            return Some(
                self.vectors
                    .get_or_init(|| Vectors::from(encoder, vectors, &self.texts)),
            );
        }
        match &self.search.mode {
            EmbedMode::Blocking(progress) => {
                let report = |done, total| {
                    if let Some(p) = progress {
                        p(done, total);
                    }
                };
                self.search.model.embed_missing(
                    &encoder,
                    &self.texts,
                    &mut vectors,
                    embedding_workers(false),
                    &report,
                    &|| false,
                );
                Some(
                    self.vectors
                        .get_or_init(|| Vectors::from(encoder, vectors, &self.texts)),
                )
            }
            EmbedMode::Background => {
                let (model, texts) = (Arc::clone(&self.search.model), Arc::clone(&self.texts));
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

    /// Waits for a background embedding to finish (tests).
    #[cfg(test)]
    pub(super) fn join_background(&self) {
        let job = self.background.lock().ok().and_then(|mut j| j.take());
        if let Some(job) = job {
            let _ = job.join();
        }
    }

    /// Blends the built-in ranking `builtin` (all its candidates, best first) with the
    /// encoder's similarity; `None` when the encoder is not ready, so the caller keeps the
    /// built-in ranking. The built-in score is divided by its best, the cosine min-max
    /// normalised over the encoder's top [`SEMANTIC_DEPTH`]; tools only the encoder finds
    /// count too, when similar enough.
    pub(super) fn blend(
        &self,
        query: &str,
        builtin: &[Hit],
        limit: usize,
        keep: &dyn Fn(usize) -> bool,
    ) -> Option<Vec<Hit>> {
        let vectors = self.ready()?;
        let embedding = vectors.encoder.embed_query(query)?;
        let trust = embedding.trust;
        let cosines = vectors.cosines(embedding.vector, query);
        let mut semantic: Vec<Hit> = cosines
            .iter()
            .enumerate()
            .filter(|&(i, &c)| c >= MIN_COSINE && keep(i))
            .map(|(index, &score)| Hit { index, score })
            .collect();
        top(&mut semantic, SEMANTIC_DEPTH);
        let mut scores = vec![0f32; cosines.len()];
        let best = builtin
            .first()
            .map_or(1.0, |h| h.score)
            .max(f32::MIN_POSITIVE);
        for hit in builtin {
            if let Some(s) = scores.get_mut(hit.index) {
                *s += hit.score / best;
            }
        }
        if let (Some(max), Some(min)) = (semantic.first(), semantic.last()) {
            let span = max.score - min.score;
            let weight = ALPHA * trust;
            for hit in &semantic {
                let normalised = if span > f32::EPSILON {
                    (hit.score - min.score) / span
                } else {
                    1.0
                };
                scores[hit.index] += weight * normalised;
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

/// The share of a text's non-blank characters that are CJK.
fn cjk_share(text: &str) -> f32 {
    let (cjk, all) = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .fold((0u32, 0u32), |(cjk, all), c| {
            (cjk + u32::from(super::tokenize::is_cjk(c)), all + 1)
        });
    if all == 0 {
        0.0
    } else {
        cjk as f32 / all as f32
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

    #[test]
    fn a_script_s_mean_is_taken_out_and_an_unembedded_tool_stays_zero() {
        // Two topics (axes 0 and 1) in two scripts; the script adds its own offset (axis 2
        // for CJK, axis 3 for the rest), as a multilingual model's vectors carry language.
        let unit = |v: [f32; 4]| {
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.map(|x| x / n)
        };
        let mut rows = Vec::new();
        let mut texts = Vec::new();
        for i in 0..6 {
            let topic = if i % 2 == 0 { [1.0, 0.0] } else { [0.0, 1.0] };
            rows.extend(unit([topic[0], topic[1], 2.0, 0.0]));
            texts.push(String::from("中文工具说明"));
            rows.extend(unit([topic[0], topic[1], 0.0, 2.0]));
            texts.push(String::from("an English tool"));
        }
        rows.extend([0.0; 4]);
        texts.push(String::from("not embedded"));
        let c = Centered::of(&rows, &texts, 4).unwrap();
        assert!(c.means.iter().all(Option::is_some));
        assert_eq!(&c.rows[c.rows.len() - 4..], &[0.0; 4]);
        // Centered, a CJK tool and an English tool on the same topic point the same way.
        let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        let (zh, en) = (&c.rows[0..4], &c.rows[4..8]);
        assert!(cos(zh, en) > 0.99, "{zh:?} {en:?}");
        assert!(cos(&rows[0..4], &rows[4..8]) < 0.3);
        assert_eq!(script("知乎热榜"), CJK);
        assert_eq!(script("docker 容器的全部输出日志"), CJK);
        assert_eq!(script("docker container logs"), 0);
        // Too few tools of a script: no mean for it.
        assert!(Centered::of(&rows[..8], &texts[..2], 4).is_none());
    }
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
            mode: EmbedMode::Blocking(None),
        };
        assert!(semantic.model.may_load());
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
    fn background_embedding_ranks_without_the_encoder_until_ready_then_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let cache = EmbeddingCache::at(dir.path().join("embeddings.sqlite"));
        let tools = catalog();
        let search = SemanticSearch {
            model: model(Some(cache.clone())),
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

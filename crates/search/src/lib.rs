//! Ranked search over names, descriptions and parameters: antler's `tool_search` and
//! `skill_search` rank with it, and it knows nothing of tools, skills or catalogs beyond
//! [`Searchable`]. The sentence encoder it can blend in is [`semantic`].
//!
//! The model sees only deferred tools' names and asks `tool_search` for a few schemas, so
//! this ranking decides whether it finds the right tool in one cheap call. Plain words are
//! ranked by BM25F over tokenised, stemmed fields (module `rank`), fused with the cosine
//! similarity of shipped static word embeddings (modules `embed`, `fuse`) so synonyms the
//! catalog never spells out still meet; a query written as a regular expression is matched
//! as one (module `pattern`).

pub mod gloss;
pub mod semantic;

mod embed;
mod encoded;
mod fuse;
mod index;
mod pattern;
mod query;
mod rank;
mod tokenize;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use encoded::Encoded;
pub use encoded::{EmbedMode, EmbedProgress, SemanticSearch};
pub use fuse::push_words;
use index::Index;
use pattern::Haystack;
use tokenize::Tokenizer;

/// What ranked search reads of one thing it finds (a tool, a skill): the search knows
/// nothing of tools, servers or catalogs beyond this.
pub trait Searchable {
    /// The name it is called by, as regex mode and name-token candidates match it.
    fn name(&self) -> &str;
    /// Its own name and its group's (an MCP tool's server), kept apart: both are ranked
    /// fields, and tools of one group are also ranked together.
    fn name_and_server(&self) -> (&str, Option<&str>);
    /// What it does, in its author's words.
    fn description(&self) -> &str;
    /// The JSON Schema of its arguments, whose names and descriptions are ranked too.
    fn parameters(&self) -> &Value;
}

/// How many of the best lexical matches are fused (besides the name matches).
const LEXICAL_DEPTH: usize = 50;

/// How many of each ranking are added up when a Chinese query is ranked with its gloss too
/// (so such a search returns at most twice as many, whatever its limit).
const GLOSS_DEPTH: usize = 50;
/// Weight of the gloss's ranking (its scores divided by its best) next to the query's own
/// (tuned on half A of the Chinese dev queries).
const GLOSS_WEIGHT: f32 = 1.5;

/// Longest query considered, in characters: enough for a pasted task, small enough that
/// ranking and regex compilation stay fast.
const MAX_QUERY_CHARS: usize = 1_000;

/// One result: the tool's index in the slice given to [`SearchIndex::new`], and its score
/// (higher is better; comparable only within one search).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Position of the tool in the catalog slice.
    pub index: usize,
    /// Higher is better; comparable only within one search.
    pub score: f32,
}

/// A search index over one catalog, built once and queried many times.
pub struct SearchIndex {
    index: Index,
    tokenizer: Tokenizer,
    /// Full tool names, for regex mode.
    names: Haystack,
    /// The tools whose name (split at `_` and `-`, lower-cased) has each token: a tool
    /// whose name has a query word stays a ranking candidate however deep its lexical
    /// score puts it.
    name_tokens: HashMap<String, Vec<usize>>,
    /// Descriptions, for regex mode.
    descriptions: Haystack,
    /// Embedding vectors of the tools, fused with the lexical ranking (absent only if the
    /// shipped table is unusable).
    semantic: Option<fuse::Semantic>,
    /// The sentence encoder, when the session has a model: blended into the ranking once
    /// the tools' vectors are ready.
    encoded: Option<Encoded>,
    /// The dictionary that glosses Chinese queries into English, when installed.
    glossary: Option<Arc<gloss::Glossary>>,
    tools: usize,
}

impl SearchIndex {
    /// Indexes `tools`; built once per catalog (not per query).
    pub fn new<T: Searchable>(tools: &[T]) -> Self {
        Self::with_semantic(tools, None)
    }

    /// Indexes `tools`, ranking with the sentence encoder of `semantic` too once their
    /// vectors are ready.
    pub fn with_semantic<T: Searchable>(tools: &[T], semantic: Option<SemanticSearch>) -> Self {
        let tokenizer = Tokenizer::new();
        let glossary = semantic
            .as_ref()
            .and_then(|s| s.dictionary.clone())
            .filter(|g| g.may_load());
        Self {
            glossary,
            index: Index::build(tools, &tokenizer),
            tokenizer,
            names: Haystack::new(tools.iter().map(|t| t.name())),
            name_tokens: name_tokens(tools),
            descriptions: Haystack::new(tools.iter().map(|t| t.description())),
            semantic: fuse::Semantic::build(tools),
            // Tool texts are prepared only when a model is there to embed them; a catalog
            // built after one is installed picks it up.
            encoded: semantic.and_then(|s| Encoded::new(tools, &s)),
            tools: tools.len(),
        }
    }

    /// Waits for a background embedding of the tools to finish (tests).
    #[cfg(test)]
    pub(crate) fn join_background(&self) {
        if let Some(e) = &self.encoded {
            e.join_background();
        }
    }

    /// Ranked search, best first, at most `limit` hits, only over tools with `keep(index)`.
    ///
    /// Plain words are ranked by lexical relevance plus embedding similarity (and, once the
    /// tools' vectors are ready, the sentence encoder's); a query that is a regular expression (it uses
    /// regex operators and compiles) is matched case-insensitively over name and
    /// description, name matches first. A pattern that is invalid or matches nothing falls
    /// back to word ranking. An empty query has no hits. The query is cut to 1,000
    /// characters and regex size is bounded, so this never hangs. A query with Chinese
    /// words is also ranked as its English gloss when the dictionary is installed, and the
    /// two rankings added up.
    pub fn search(&self, query: &str, limit: usize, keep: &dyn Fn(usize) -> bool) -> Vec<Hit> {
        self.search_with(query, limit, keep, true)
    }

    /// [`SearchIndex::search`] without the sentence encoder: never loads a model or runs
    /// one, so it is cheap enough for code on the async runtime.
    pub fn search_quick(
        &self,
        query: &str,
        limit: usize,
        keep: &dyn Fn(usize) -> bool,
    ) -> Vec<Hit> {
        self.search_with(query, limit, keep, false)
    }

    fn search_with(
        &self,
        query: &str,
        limit: usize,
        keep: &dyn Fn(usize) -> bool,
        encoder: bool,
    ) -> Vec<Hit> {
        let query = match query.char_indices().nth(MAX_QUERY_CHARS) {
            Some((end, _)) => &query[..end],
            None => query,
        }
        .trim();
        if query.is_empty() || limit == 0 {
            return Vec::new();
        }
        if let Some(regex) = pattern::compile(query) {
            let hits = pattern::search(&regex, &self.names, &self.descriptions, limit, keep);
            if !hits.is_empty() {
                return hits;
            }
        }
        if encoder
            && gloss::glossable(query)
            && let Some(gloss) = self
                .glossary
                .as_ref()
                .and_then(|g| g.dictionary().ok()?.gloss(query))
        {
            let original = self.ranked(query, GLOSS_DEPTH, keep, encoder);
            let glossed = self.ranked(&gloss, GLOSS_DEPTH, keep, encoder);
            return self.with_gloss(&original, &glossed, limit);
        }
        self.ranked(query, limit, keep, encoder)
    }

    /// Adds up the query's own ranking and its gloss's, each divided by its best score, the
    /// gloss's weighted by [`GLOSS_WEIGHT`].
    fn with_gloss(&self, original: &[Hit], glossed: &[Hit], limit: usize) -> Vec<Hit> {
        let mut scores = vec![0f32; self.tools];
        for (hits, weight) in [(original, 1.0), (glossed, GLOSS_WEIGHT)] {
            let best = hits.first().map_or(1.0, |h| h.score).max(f32::MIN_POSITIVE);
            for hit in hits {
                if let Some(s) = scores.get_mut(hit.index) {
                    *s += weight * hit.score / best;
                }
            }
        }
        let mut hits: Vec<Hit> = scores
            .iter()
            .enumerate()
            .filter(|&(_, &s)| s > 0.0)
            .map(|(index, &score)| Hit { index, score })
            .collect();
        fuse::top(&mut hits, limit);
        hits
    }

    /// Word ranking: the built-in one, blended with the sentence encoders' when `encoder`
    /// and their vectors are ready.
    fn ranked(
        &self,
        query: &str,
        limit: usize,
        keep: &dyn Fn(usize) -> bool,
        encoder: bool,
    ) -> Vec<Hit> {
        let Some(encoded) = self.encoded.as_ref().filter(|_| encoder) else {
            return self.builtin(query, limit, keep);
        };
        // The encoder re-ranks every candidate of the built-in ranking.
        let mut builtin = self.builtin(query, self.tools, keep);
        if let Some(hits) = encoded.blend(query, &builtin, limit, keep) {
            return hits;
        }
        builtin.truncate(limit);
        builtin
    }

    /// The lexical matches the fusion considers, best first: the best [`LEXICAL_DEPTH`],
    /// and every tool whose name has a query word (split at `_` and `-`), so such a tool is
    /// never cut, however deep its score puts it.
    fn lexical_candidates(&self, query: &str, keep: &dyn Fn(usize) -> bool) -> Vec<Hit> {
        let mut named = vec![false; self.tools];
        for word in query.split(|c: char| !c.is_alphanumeric()) {
            for &i in self
                .name_tokens
                .get(&word.to_lowercase())
                .into_iter()
                .flatten()
            {
                named[i] = true;
            }
        }
        let also = |i: usize| named.get(i).copied().unwrap_or(false);
        rank::rank_also(
            &self.index,
            &self.tokenizer,
            query,
            LEXICAL_DEPTH,
            keep,
            &also,
        )
    }

    /// The ranking without the sentence encoder: BM25F fused with the static table.
    fn builtin(&self, query: &str, limit: usize, keep: &dyn Fn(usize) -> bool) -> Vec<Hit> {
        let Some(semantic) = &self.semantic else {
            return rank::rank(&self.index, &self.tokenizer, query, limit, keep);
        };
        let lexical = self.lexical_candidates(query, keep);
        // A query none of whose words the catalog knows (or only stopwords) has no hits:
        // embeddings re-rank and widen lexical evidence, they do not invent it from noise.
        if lexical.is_empty() {
            return lexical;
        }
        semantic.fuse(query, &lexical, limit, keep)
    }
}

/// Each name token (split at `_` and `-`, lower-cased) with the tools whose name has it.
fn name_tokens<T: Searchable>(tools: &[T]) -> HashMap<String, Vec<usize>> {
    let mut by_token: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, tool) in tools.iter().enumerate() {
        for token in tool.name().split(['_', '-']).filter(|t| !t.is_empty()) {
            let tools = by_token.entry(token.to_lowercase()).or_default();
            if tools.last() != Some(&i) {
                tools.push(i);
            }
        }
    }
    by_token
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A tool as the search reads one.
    pub(super) struct Doc {
        pub(super) name: String,
        own_name: String,
        server: String,
        description: String,
        parameters: Value,
    }

    impl Searchable for Doc {
        fn name(&self) -> &str {
            &self.name
        }

        fn name_and_server(&self) -> (&str, Option<&str>) {
            (&self.own_name, Some(&self.server))
        }

        fn description(&self) -> &str {
            &self.description
        }

        fn parameters(&self) -> &Value {
            &self.parameters
        }
    }

    /// An MCP tool with one `query` parameter.
    pub(super) fn tool(server: &str, name: &str, description: &str) -> Doc {
        Doc {
            name: format!("{server}_{name}"),
            own_name: name.into(),
            server: server.into(),
            description: description.into(),
            parameters: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
        }
    }

    fn catalog() -> Vec<Doc> {
        vec![
            tool(
                "github",
                "create_issue",
                "Open a new issue in a repository.",
            ),
            tool(
                "github",
                "list_pull_requests",
                "List pull requests; each may close an issue.",
            ),
            tool(
                "github",
                "search_issues",
                "Search issues and pull requests.",
            ),
            tool("weather", "getForecast", "Weather forecast for a city."),
            tool(
                "trends-hub",
                "get-zhihu-trending",
                "获取知乎热榜，包含时事热点、社会话题",
            ),
            tool(
                "trends-hub",
                "get-weibo-trending",
                "获取微博热搜榜，包含时事热点、娱乐八卦",
            ),
            tool("notes", "search_notes", "Find notes mentioning a forecast."),
        ]
    }

    fn names(index: &SearchIndex, tools: &[Doc], query: &str, limit: usize) -> Vec<String> {
        index
            .search(query, limit, &|_| true)
            .iter()
            .map(|h| tools[h.index].name.clone())
            .collect()
    }

    #[test]
    fn empty_or_blank_query_has_no_hits() {
        let tools = catalog();
        let index = SearchIndex::new(&tools);
        assert!(index.search("", 5, &|_| true).is_empty());
        assert!(index.search("  \t\n ", 5, &|_| true).is_empty());
        assert!(index.search("the of and", 5, &|_| true).is_empty());
    }

    #[test]
    fn regex_mode_matches_names_first() {
        let tools = catalog();
        let index = SearchIndex::new(&tools);
        assert_eq!(
            names(&index, &tools, "^github_.*issue", 5),
            ["github_create_issue", "github_search_issues"]
        );
        // A description match ranks after name matches.
        assert_eq!(
            names(&index, &tools, "pull.*requests?", 5),
            ["github_list_pull_requests", "github_search_issues"]
        );
    }

    #[test]
    fn invalid_regex_falls_back_to_words() {
        let tools = catalog();
        let index = SearchIndex::new(&tools);
        let got = names(&index, &tools, "forecast (city", 5);
        assert_eq!(got.first().map(String::as_str), Some("weather_getForecast"));
    }

    #[test]
    fn name_matches_outrank_description_only_matches() {
        let tools = catalog();
        let index = SearchIndex::new(&tools);
        // Weaker, merely similar tools may follow (embedding similarity).
        let got = names(&index, &tools, "forecast", 5);
        assert_eq!(got[..2], ["weather_getForecast", "notes_search_notes"]);
    }

    #[test]
    fn camel_and_snake_case_names_are_split() {
        let tools = catalog();
        let index = SearchIndex::new(&tools);
        assert_eq!(
            names(&index, &tools, "get forecast", 1),
            ["weather_getForecast"]
        );
        assert_eq!(
            names(&index, &tools, "pull request", 1),
            ["github_list_pull_requests"]
        );
    }

    #[test]
    fn chinese_query_finds_chinese_description() {
        let tools = catalog();
        let index = SearchIndex::new(&tools);
        let got = names(&index, &tools, "知乎热榜上现在大家都在讨论什么？", 1);
        assert_eq!(got, ["trends-hub_get-zhihu-trending"]);
    }

    #[test]
    fn synonyms_are_bridged_by_embeddings() {
        let tools = vec![
            tool("news", "get_article", "Fetch a news article."),
            tool("wiki", "get_article", "Fetch a Wikipedia article."),
            tool("weather", "getForecast", "Weather forecast for a city."),
        ];
        let index = SearchIndex::new(&tools);
        // "article" ties both lexically; an encyclopedia is Wikipedia.
        assert_eq!(
            names(&index, &tools, "encyclopedia article", 1),
            ["wiki_get_article"]
        );
        // Only stopwords or words the catalog never uses: nothing, though they embed.
        assert!(index.search("the of and", 5, &|_| true).is_empty());
        assert!(
            index
                .search("nothing matches zzqx", 5, &|_| true)
                .is_empty()
        );
    }

    #[test]
    fn very_long_query_does_not_panic() {
        let tools = catalog();
        let index = SearchIndex::new(&tools);
        let long = "issue forecast 知乎 (([[ ".repeat(5_000);
        let hits = index.search(&long, 5, &|_| true);
        assert!(!hits.is_empty() && hits.len() <= 5);
        let pattern = format!("^({})+$", "a|".repeat(2_000));
        let _ = index.search(&pattern, 5, &|_| true);
    }

    #[test]
    fn keep_filter_and_limit_are_respected() {
        let tools = catalog();
        let index = SearchIndex::new(&tools);
        let hits = index.search("issue", 5, &|i| i != 0);
        assert!(!hits.is_empty());
        assert!(hits.iter().all(|h| h.index != 0));
        assert_eq!(index.search("issue pull request", 1, &|_| true).len(), 1);
        assert_eq!(index.search("^github", 2, &|_| true).len(), 2);
        assert!(index.search("issue", 0, &|_| true).is_empty());
    }

    #[test]
    fn name_matches_stay_candidates_beyond_the_lexical_depth() {
        let mut tools: Vec<Doc> = (0..LEXICAL_DEPTH + 5)
            .map(|i| tool("s", &format!("backup_{i}"), "Backup backup backup files."))
            .collect();
        tools.push(tool(
            "other",
            "file_list",
            "Shows what a backup holds, among others.",
        ));
        tools.push(tool("x", "backup", "Something unrelated."));
        let index = SearchIndex::new(&tools);
        let full = rank::rank(
            &index.index,
            &index.tokenizer,
            "backup",
            tools.len(),
            &|_| true,
        );
        let deep = full.iter().position(|h| tools[h.index].name == "x_backup");
        assert!(
            deep.is_some_and(|at| at >= LEXICAL_DEPTH),
            "{deep:?}: not deep enough to test"
        );
        let got: Vec<&str> = index
            .lexical_candidates("backup", &|_| true)
            .iter()
            .map(|h| tools[h.index].name.as_str())
            .collect();
        assert_eq!(
            got.len(),
            LEXICAL_DEPTH + 6,
            "every name match, and no other"
        );
        assert!(got.contains(&"x_backup"));
        assert!(!got.contains(&"other_file_list"));
    }

    #[test]
    fn ties_break_by_catalog_order() {
        let tools = vec![
            tool("a", "same", "identical text"),
            tool("b", "same", "identical text"),
            tool("c", "same", "identical text"),
        ];
        let index = SearchIndex::new(&tools);
        let order: Vec<usize> = index
            .search("identical", 5, &|_| true)
            .iter()
            .map(|h| h.index)
            .collect();
        assert_eq!(order, [0, 1, 2]);
        assert_eq!(
            index.search("identical", 5, &|_| true),
            index.search("identical", 5, &|_| true)
        );
    }

    /// A search whose only extra is a dictionary of `entries` (CC-CEDICT lines): no
    /// encoder may load.
    fn with_dictionary(tools: &[Doc], entries: &str, dir: &std::path::Path) -> SearchIndex {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, entries.as_bytes()).unwrap();
        std::fs::write(dir.join(gloss::DICTIONARY_FILE), gz.finish().unwrap()).unwrap();
        let nowhere = semantic::ModelLocation {
            dir: dir.join("no-model"),
            source: semantic::ModelSource::Config,
        };
        let search = SemanticSearch {
            model: Arc::new(semantic::SemanticModel::new(nowhere, None)),
            multilingual: None,
            dictionary: Some(Arc::new(gloss::Glossary::new(dir.to_path_buf()))),
            mode: EmbedMode::Blocking(None),
        };
        SearchIndex::with_semantic(tools, Some(search))
    }

    #[test]
    fn a_chinese_query_for_an_english_tool_is_found_by_its_gloss() {
        let tools = catalog();
        let dir = tempfile::tempdir().unwrap();
        let entries = "天氣 天气 [tian1 qi4] /weather/\n預報 预报 [yu4 bao4] /forecast/\n\
                       巴黎 巴黎 [Ba1 li2] /Paris/\n問題 问题 [wen4 ti2] /issue/problem/\n";
        let index = with_dictionary(&tools, entries, dir.path());
        let plain = SearchIndex::new(&tools);
        let query = "巴黎的天气预报";
        assert!(
            names(&plain, &tools, query, 3).is_empty(),
            "no word is shared"
        );
        assert_eq!(names(&index, &tools, query, 3)[0], "weather_getForecast");
        // A tool described in Chinese still meets the query's own characters.
        assert_eq!(
            names(&index, &tools, "知乎热榜", 1),
            ["trends-hub_get-zhihu-trending"]
        );
        assert_eq!(
            names(&index, &tools, "知乎热榜", 1),
            names(&plain, &tools, "知乎热榜", 1),
            "nothing glossed, nothing changes"
        );
        // The quick search never reads the dictionary; English queries do not use it.
        assert!(index.search_quick(query, 3, &|_| true).is_empty());
        assert_eq!(
            names(&index, &tools, "forecast", 3),
            names(&plain, &tools, "forecast", 3)
        );
        // The filter holds for the gloss's ranking too, and the limit for the sum.
        let filtered = index.search(query, 3, &|i| i != 3);
        assert!(!filtered.is_empty() && filtered.iter().all(|h| h.index != 3));
        assert_eq!(index.search("天气问题", 1, &|_| true).len(), 1);
    }

    #[test]
    fn a_long_or_hostile_chinese_query_is_bounded_and_a_broken_dictionary_is_ignored() {
        let tools = catalog();
        let dir = tempfile::tempdir().unwrap();
        let index = with_dictionary(&tools, "天氣 天气 [tian1 qi4] /weather/\n", dir.path());
        let long = "天气".repeat(50_000);
        assert_eq!(names(&index, &tools, &long, 1), ["weather_getForecast"]);
        let broken = tempfile::tempdir().unwrap();
        std::fs::write(broken.path().join(gloss::DICTIONARY_FILE), "not gzip").unwrap();
        let search = SemanticSearch {
            model: Arc::new(semantic::SemanticModel::new(
                semantic::ModelLocation {
                    dir: broken.path().join("no-model"),
                    source: semantic::ModelSource::Config,
                },
                None,
            )),
            multilingual: None,
            dictionary: Some(Arc::new(gloss::Glossary::new(broken.path().to_path_buf()))),
            mode: EmbedMode::Blocking(None),
        };
        let index = SearchIndex::with_semantic(&tools, Some(search));
        let plain = SearchIndex::new(&tools);
        for q in ["天气预报", "知乎热榜", "forecast"] {
            assert_eq!(
                names(&index, &tools, q, 3),
                names(&plain, &tools, q, 3),
                "{q}"
            );
        }
    }
}

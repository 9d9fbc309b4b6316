//! `tool_search`: the tool the model calls to fetch deferred tools' schemas.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::catalog::Found;
use super::promotion::{CLOSE_TO_BEST, closest_names, exact_name, more_by_name, promoted_prefix};
use super::{DeferredCatalog, function_schema};
use crate::tools::Effect;
use crate::tools::ToolContext;
use crate::tools::{
    PromotedUpdate, StateUpdate, Tool, ToolFuture, ToolInfo, ToolOutput, ToolSource,
};

/// One of the [`RESERVED_NAMES`](crate::tools::RESERVED_NAMES): no MCP tool is given it.
pub const TOOL_SEARCH: &str = crate::protocol::SEARCH_TOOL;

/// Queries longer than this are cut: a query can never make the search slow.
const MAX_QUERY_CHARS: usize = 1000;

/// The `tool_search` tool over one catalog.
#[derive(Clone)]
pub struct ToolSearch {
    /// Shared, so a call can hand a copy of the tool to a blocking thread cheaply.
    info: Arc<ToolInfo>,
    catalog: Arc<DeferredCatalog>,
    max_results: usize,
}

#[derive(Deserialize)]
struct Args {
    query: String,
}

/// What a query found, best first, and how many of those (a prefix) are promoted.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Catalog positions with their ranking scores.
    pub found: Vec<Found>,
    /// The first `promoted` of `found` are promoted; the rest are only named.
    pub promoted: usize,
}

impl ToolSearch {
    /// `tool_search` over `catalog`, ranked searches capped at `max_results`.
    pub fn new(catalog: Arc<DeferredCatalog>, max_results: usize) -> Self {
        let info = ToolInfo {
            name: TOOL_SEARCH.to_string(),
            description: format!(
                "Fetch the full schemas of deferred tools (listed, by name or by server, in \
                 <available-deferred-tools>) so that you can call them. Query forms: \
                 \"select:name_a,name_b\" fetches those exact tools; \"+word rest of query\" \
                 only considers tools whose name contains `word`, ranked by the rest; \
                 anything else is a search by meaning over names, descriptions and \
                 parameters (a regular expression also works). Returns at most \
                 {max_results} tools for searches."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "select:<names>, +<name word> <query>, or a search query"
                    }
                },
                "required": ["query"]
            }),
            source: ToolSource::BuiltIn,
            metadata: Map::new(),
            parallel: true,
        };
        Self {
            info: Arc::new(info),
            catalog,
            max_results,
        }
    }

    /// The catalog searched.
    pub fn catalog(&self) -> &Arc<DeferredCatalog> {
        &self.catalog
    }

    /// What a query returns, best first: catalog positions with the ranking score (none
    /// for `select:` and for name matches the ranking did not score).
    pub fn find(&self, query: &str) -> Vec<Found> {
        let unscored = |index| Found { index, score: None };
        let query: String = query.trim().chars().take(MAX_QUERY_CHARS).collect();
        if let Some(list) = query.strip_prefix("select:") {
            let mut found: Vec<usize> = list
                .split(',')
                .filter_map(|name| self.catalog.position(name.trim()))
                .collect();
            found.sort_unstable();
            found.dedup();
            return found.into_iter().map(unscored).collect();
        }
        if let Some(rest) = query.strip_prefix('+') {
            let mut parts = rest.splitn(2, char::is_whitespace);
            let term = parts.next().unwrap_or_default().to_lowercase();
            if term.is_empty() {
                return Vec::new();
            }
            let ranking = parts.next().unwrap_or_default();
            let infos = self.catalog.infos();
            let keep = |i: usize| infos[i].name.to_lowercase().contains(&term);
            // Name matches the ranking did not reach still qualify, in catalog order.
            return self
                .catalog
                .search_then_fill(ranking, self.max_results, &keep);
        }
        self.catalog
            .search(&query, self.max_results, &|_| true)
            .into_iter()
            .map(Found::from)
            .collect()
    }
}

impl ToolSearch {
    /// What a query returns and promotes: `select:` promotes every name it lists; a query
    /// that is exactly one tool's name (or its name on its server) promotes that tool,
    /// the ranked results following it unpromoted; a ranked search promotes the hits that
    /// score close to the best ([`CLOSE_TO_BEST`]).
    pub fn search(&self, query: &str) -> Outcome {
        let cut: String = query.trim().chars().take(MAX_QUERY_CHARS).collect();
        let trimmed = cut.as_str();
        if !trimmed.starts_with("select:")
            && let Some(index) = exact_name(&self.catalog, trimmed)
        {
            let mut found = vec![Found { index, score: None }];
            found.extend(
                self.find(query)
                    .into_iter()
                    .filter(|f| f.index != index)
                    .take(self.max_results.saturating_sub(1)),
            );
            return Outcome { found, promoted: 1 };
        }
        let found = self.find(query);
        let promoted = if trimmed.starts_with("select:") {
            found.len()
        } else {
            promoted_prefix(&found, CLOSE_TO_BEST)
        };
        Outcome { found, promoted }
    }

    /// The model's text for a search that found nothing: the query, and the names most
    /// like it, if any, to `select:`.
    fn nothing_found(&self, query: &str) -> String {
        let shown: String = query.trim().chars().take(MAX_QUERY_CHARS).collect();
        let mut text = format!("No tools found matching: {shown}");
        let probe = shown.strip_prefix("select:").unwrap_or(&shown);
        let closest = closest_names(&self.catalog, probe.trim_start_matches('+'));
        if !closest.is_empty() {
            text.push_str(&format!(
                "\nClosest tool names: {} (load one with select:NAME)",
                closest.join(", ")
            ));
        }
        text
    }
}

impl Tool for ToolSearch {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn role(&self) -> crate::protocol::ToolRole {
        crate::protocol::ToolRole::Search
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn call<'a>(&'a self, _ctx: ToolContext<'a>, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let query = match serde_json::from_value::<Args>(arguments) {
                Ok(args) => args.query,
                Err(err) => {
                    return ToolOutput::error(format!(
                        "Error: tool_search takes {{\"query\": string}}: {err}"
                    ));
                }
            };
            // The same cut as every query form gets, before anything reads it.
            let query: String = query.trim().chars().take(MAX_QUERY_CHARS).collect();
            // With the sentence encoder, off the async runtime: the first search may load
            // it and read its cache, and each one runs it over the query. Without it a
            // search takes well under a millisecond, less than the hand-over would.
            let outcome = if self.catalog.may_encode() {
                let searcher = self.clone();
                let asked = query.clone();
                match tokio::task::spawn_blocking(move || searcher.search(&asked)).await {
                    Ok(outcome) => outcome,
                    Err(err) => {
                        return ToolOutput::error(format!("Error: tool_search failed: {err}"));
                    }
                }
            } else {
                self.search(&query)
            };
            if outcome.found.is_empty() {
                return ToolOutput::ok(self.nothing_found(&query));
            }
            let infos = self.catalog.infos();
            let (promoted, named) = outcome.found.split_at(outcome.promoted);
            let found: Vec<usize> = promoted.iter().map(|f| f.index).collect();
            let schemas: Vec<Value> = found
                .iter()
                .map(|&i| function_schema(&infos[i])["function"].take())
                .collect();
            let mut text = Value::Array(schemas).to_string();
            if !named.is_empty() {
                let names: Vec<&str> = named.iter().map(|f| infos[f.index].name.as_str()).collect();
                text.push_str(&format!(
                    "\n\nAlso matched, not loaded (load one with select:NAME): {}",
                    names.join(", ")
                ));
            }
            let plain = query.trim_start();
            let ranked = !plain.starts_with("select:") && !plain.starts_with('+');
            if ranked
                && let Some((word, count)) = more_by_name(&self.catalog, &query, &outcome.found)
            {
                text.push_str(&format!(
                    "\n\n{count} tools have `{word}` in their name; this answer shows {}: narrow \
                     with \"+{word} <what you need>\" or load one by name with select:NAME.",
                    outcome.found.len()
                ));
            }
            let mut output = ToolOutput::ok(text);
            output.state_update = Some(Box::new(StateUpdate {
                promoted: Some(PromotedUpdate {
                    catalog_hash: self.catalog.hash().to_string(),
                    names: found.iter().map(|&i| infos[i].name.clone()).collect(),
                }),
                ..Default::default()
            }));
            output
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deferred::testing::sample_catalog;
    use crate::tools::CallStandalone;

    fn names(search: &ToolSearch, query: &str) -> Vec<String> {
        let infos = search.catalog.infos();
        search
            .find(query)
            .into_iter()
            .map(|f| infos[f.index].name.clone())
            .collect()
    }

    #[test]
    fn select_returns_exact_names_in_catalog_order_uncapped() {
        let search = ToolSearch::new(sample_catalog(), 5);
        let got = names(
            &search,
            "select:zhihu_trending,time_convert_time, word_add_paragraph,github_get_file,github_create_issue,word_convert_to_pdf,nope",
        );
        assert_eq!(
            got,
            [
                "github_create_issue",
                "github_get_file",
                "word_convert_to_pdf",
                "word_add_paragraph",
                "time_convert_time",
                "zhihu_trending"
            ]
        );
    }

    #[test]
    fn ranked_modes_are_capped_at_max_results() {
        let max = crate::config::ToolSearchConfig::default().max_results;
        assert_eq!(max, 5);
        let search = ToolSearch::new(sample_catalog(), max);
        assert_eq!(
            names(&search, "a the to in of for repository time issue word pdf").len(),
            5
        );
        assert_eq!(names(&search, "+_").len(), 5);
        assert_eq!(names(&search, "+_ convert").len(), 5);
        assert_eq!(
            ToolSearch::new(sample_catalog(), 2).find("+github").len(),
            2
        );
    }

    #[test]
    fn plus_term_filters_names_and_ranks_by_the_rest() {
        let search = ToolSearch::new(sample_catalog(), 5);
        let got = names(&search, "+github read a file");
        assert_eq!(got[0], "github_get_file");
        assert!(got.iter().all(|n| n.contains("github")));
        assert_eq!(got.len(), 3, "unranked name matches fill up");
        assert!(names(&search, "+").is_empty());
        assert!(names(&search, "+ convert").is_empty());
        assert!(names(&search, "+nomatch convert").is_empty());
    }

    #[test]
    fn empty_and_whitespace_queries_find_nothing() {
        let search = ToolSearch::new(sample_catalog(), 5);
        assert!(names(&search, "").is_empty());
        assert!(names(&search, "   \t ").is_empty());
    }

    #[test]
    fn plain_words_regex_and_invalid_regex() {
        let search = ToolSearch::new(sample_catalog(), 5);
        assert_eq!(
            names(&search, "convert a word file to pdf")[0],
            "word_convert_to_pdf"
        );
        let got = names(&search, "^github_.*issue");
        assert_eq!(got.len(), 2);
        assert!(
            got.iter()
                .all(|n| n.starts_with("github_") && n.contains("issue"))
        );
        let got = names(&search, "issue(");
        assert!(
            got.iter().any(|n| n.contains("issue")),
            "invalid regex falls back to words: {got:?}"
        );
        assert!(
            !names(&search, &"pdf ".repeat(10_000)).is_empty(),
            "long queries are cut, not rejected"
        );
    }

    #[tokio::test]
    async fn results_carry_schemas_and_a_promotion() {
        let catalog = sample_catalog();
        let search = ToolSearch::new(catalog.clone(), 5);
        let out = search
            .call_standalone(json!({"query": "select:time_get_current_time"}))
            .await;
        assert!(!out.is_error);
        let schemas: Value = serde_json::from_str(&out.content).unwrap();
        assert_eq!(schemas[0]["name"], "time_get_current_time");
        assert_eq!(schemas[0]["parameters"]["type"], "object");
        let promoted = out.state_update.unwrap().promoted.unwrap();
        assert_eq!(promoted.catalog_hash, catalog.hash());
        assert_eq!(promoted.names, ["time_get_current_time"]);

        let out = search
            .call_standalone(json!({"query": "select:nothing_here"}))
            .await;
        assert_eq!(out.content, "No tools found matching: select:nothing_here");
        assert!(out.state_update.is_none());
        let out = search.call_standalone(json!({"q": 1})).await;
        assert!(out.is_error);
        let long = format!("  {}  ", "zq".repeat(5000));
        let out = search.call_standalone(json!({ "query": long })).await;
        assert_eq!(
            out.content.len(),
            "No tools found matching: ".len() + MAX_QUERY_CHARS
        );
    }

    #[tokio::test]
    async fn promotions_fit_the_query() {
        let search = ToolSearch::new(sample_catalog(), 5);
        // A query that is a tool's own name promotes just that tool; the rest are named.
        let exact = search.search("get_file");
        assert_eq!(exact.promoted, 1);
        assert_eq!(
            search.catalog.infos()[exact.found[0].index].name,
            "github_get_file"
        );
        let out = search.call_standalone(json!({"query": "get_file"})).await;
        let (loaded, others) = out.content.split_once("\n\n").unwrap();
        let schemas: Value = serde_json::from_str(loaded).unwrap();
        assert_eq!(schemas.as_array().unwrap().len(), 1);
        assert!(others.starts_with("Also matched, not loaded (load one with select:NAME): "));
        let promoted = out.state_update.unwrap().promoted.unwrap();
        assert_eq!(promoted.names, ["github_get_file"]);

        // A ranked search promotes a prefix of what it found, at least one.
        let ranked = search.search("convert a word file to pdf");
        assert!(ranked.promoted >= 1 && ranked.promoted <= ranked.found.len());
        // select: promotes every name it lists.
        assert_eq!(
            search
                .search("select:github_get_file,zhihu_trending")
                .promoted,
            2
        );

        // More tools carry a query word in their name than were returned: say so.
        let narrow = ToolSearch::new(sample_catalog(), 1);
        let out = narrow
            .call_standalone(json!({"query": "github repository"}))
            .await;
        assert!(
            out.content
                .contains("3 tools have `github` in their name; this answer shows 1")
                && out.content.contains("+github <what you need>"),
            "{}",
            out.content
        );

        // Nothing found: the closest names, to select.
        let out = search
            .call_standalone(json!({"query": "select:github_get_fil"}))
            .await;
        assert!(
            out.content.contains("Closest tool names: github_get_file"),
            "{}",
            out.content
        );
        assert!(out.state_update.is_none());
    }
}

//! Which of a search's results are promoted: the ones that fit the query, not always
//! `max_results` of them. Every promoted schema is bound on every later call of the thread
//! and is one more tool a small model may pick by mistake, so a search for "echo" whose top
//! hit scores far above the rest promotes that one tool; the others are named in the result
//! for a `select:` if the model wants them.

use super::catalog::{DeferredCatalog, Found};
use crate::tools::ToolSource;

/// A ranked hit is promoted while its score is at least this share of the best score.
/// Tuned on the first half (A) of the shared dev queries and checked on the other (see
/// `benches/search_quality.rs`).
pub const CLOSE_TO_BEST: f32 = 0.75;

/// The longest tool name (see `mcp::naming`), so the longest query worth comparing.
const MAX_NAME_CHARS: usize = 64;
/// How many names an empty result suggests.
const CLOSEST: usize = 3;
/// How alike a name must be to the query to be suggested (normalised edit similarity).
const ALIKE: f64 = 0.5;

/// How many of `found` (best first) to promote: every result of a name lookup or of an
/// unranked name filter; of a ranked search, the leading hits scoring at least `ratio` of
/// the best (at least one).
pub fn promoted_prefix(found: &[Found], ratio: f32) -> usize {
    let Some(best) = found.first().and_then(|f| f.score) else {
        return found.len();
    };
    found
        .iter()
        .take_while(|f| f.score.is_some_and(|s| s >= best * ratio))
        .count()
        .max(1)
}

/// The one tool a query names exactly: its model-facing name, or its own name on its
/// server (the prefix left off), ignoring case. `None` when no tool, or several, match.
pub fn exact_name(catalog: &DeferredCatalog, query: &str) -> Option<usize> {
    let query = query.trim();
    if query.is_empty() {
        return None;
    }
    // Names are ASCII (see `mcp::naming`): comparing without case allocates nothing.
    if let Some(index) = catalog
        .infos()
        .iter()
        .position(|i| i.name.eq_ignore_ascii_case(query))
    {
        return Some(index);
    }
    let mut own = catalog.infos().iter().enumerate().filter(|(_, info)| {
        matches!(&info.source, ToolSource::Mcp { original_name, .. }
            if original_name.eq_ignore_ascii_case(query))
    });
    match (own.next(), own.next()) {
        (Some((index, _)), None) => Some(index),
        _ => None,
    }
}

/// Up to three tool names most like `query` (by edit distance over the whole name and the
/// server's own name), for a search that found nothing: the model can `select:` one.
pub fn closest_names<'a>(catalog: &'a DeferredCatalog, query: &str) -> Vec<&'a str> {
    // Names are at most 64 characters: a longer query is no name, and comparing it whole
    // with every name of a large catalog would make a search slow.
    let query: String = query
        .trim()
        .to_lowercase()
        .chars()
        .take(MAX_NAME_CHARS)
        .collect();
    if query.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(f64, &str)> = catalog
        .infos()
        .iter()
        .map(|info| {
            let own = match &info.source {
                ToolSource::Mcp { original_name, .. } => original_name.as_str(),
                _ => info.name.as_str(),
            };
            let alike =
                strsim::normalized_damerau_levenshtein(&query, &info.name.to_lowercase()).max(
                    strsim::normalized_damerau_levenshtein(&query, &own.to_lowercase()),
                );
            (alike, info.name.as_str())
        })
        .filter(|(alike, _)| *alike >= ALIKE)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.into_iter().take(CLOSEST).map(|(_, n)| n).collect()
}

/// For a ranked search that returned `returned` tools: the query word (three letters or
/// more) that is a whole token of the most tool names, with that count, when more tools
/// carry it than were returned, so the result can say how to narrow (`+word ...`) instead
/// of missing them silently.
pub fn more_by_name(
    catalog: &DeferredCatalog,
    query: &str,
    returned: usize,
) -> Option<(String, usize)> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .take(MAX_NAME_CHARS)
        .collect();
    if words.is_empty() {
        return None;
    }
    let counts: Vec<usize> = words
        .iter()
        .map(|word| catalog.name_token_count(word))
        .collect();
    let (best, count) = counts
        .iter()
        .enumerate()
        .max_by_key(|&(i, &c)| (c, std::cmp::Reverse(i)))?;
    (*count > returned).then(|| (words[best].clone(), *count))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deferred::testing::sample_catalog;

    fn hits(scores: &[Option<f32>]) -> Vec<Found> {
        scores
            .iter()
            .enumerate()
            .map(|(index, &score)| Found { index, score })
            .collect()
    }

    #[test]
    fn only_hits_close_to_the_best_are_promoted() {
        assert_eq!(
            promoted_prefix(&hits(&[Some(1.8), Some(0.27), Some(0.2)]), 0.6),
            1
        );
        assert_eq!(
            promoted_prefix(&hits(&[Some(1.0), Some(0.9), Some(0.61), Some(0.59)]), 0.6),
            3
        );
        assert_eq!(
            promoted_prefix(&hits(&[None, None]), 0.6),
            2,
            "name lookups: all"
        );
        assert_eq!(
            promoted_prefix(&hits(&[Some(1.0), None]), 0.6),
            1,
            "fill-ups are not"
        );
        assert_eq!(promoted_prefix(&hits(&[Some(0.0), Some(0.0)]), 0.6), 2);
        assert_eq!(promoted_prefix(&[], 0.6), 0);
    }

    #[test]
    fn a_query_that_is_a_name_finds_that_tool() {
        let catalog = sample_catalog();
        let name = |i: Option<usize>| i.map(|i| catalog.infos()[i].name.clone());
        assert_eq!(
            name(exact_name(&catalog, " GitHub_Get_File ")).as_deref(),
            Some("github_get_file")
        );
        assert_eq!(
            name(exact_name(&catalog, "get_file")).as_deref(),
            Some("github_get_file")
        );
        assert_eq!(exact_name(&catalog, "get file"), None);
        assert_eq!(exact_name(&catalog, ""), None);
    }

    #[test]
    fn more_name_matches_than_returned_are_counted() {
        let catalog = sample_catalog();
        assert_eq!(
            more_by_name(&catalog, "github repository", 1),
            Some((String::from("github"), 3))
        );
        assert_eq!(
            more_by_name(&catalog, "github repository", 3),
            None,
            "all returned"
        );
        assert_eq!(
            more_by_name(&catalog, "a an of", 0),
            None,
            "short words are not names"
        );
    }

    #[test]
    fn an_empty_result_suggests_alike_names() {
        let catalog = sample_catalog();
        let got = closest_names(&catalog, "github_get_fil");
        assert_eq!(got.first(), Some(&"github_get_file"));
        assert!(got.len() <= CLOSEST);
        assert!(closest_names(&catalog, "zzzzzzzzzzzzzzzzzzzz").is_empty());
        // A huge query is cut to a name's length before comparing.
        let long = format!("github_get_file{}", " x".repeat(100_000));
        assert!(closest_names(&catalog, &long).len() <= CLOSEST);
    }
}

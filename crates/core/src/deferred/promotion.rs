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

/// The longest tool name (see `tools::naming`), so the longest query worth comparing.
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

/// The one tool a query names exactly: its model-facing name (exactly, or ignoring case
/// when only one tool matches so), or its name with the `{server}_` prefix left off. Only
/// queries in the names' alphabet (`[A-Za-z0-9_-]`) qualify, and only model-facing names
/// are compared — never a server's raw tool names, which a hostile server could make
/// look like any query. `None` when no tool, or several, match.
pub fn exact_name(catalog: &DeferredCatalog, query: &str) -> Option<usize> {
    let query = query.trim();
    let name_like = !query.is_empty()
        && query.len() <= MAX_NAME_CHARS
        && query
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !name_like {
        return None;
    }
    if let Some(index) = catalog.position(query) {
        return Some(index);
    }
    let infos = catalog.infos();
    let ignoring_case = infos
        .iter()
        .enumerate()
        .filter(|(_, i)| i.name.eq_ignore_ascii_case(query));
    if let Some(index) = only(ignoring_case) {
        return Some(index);
    }
    // Names are ASCII, so byte positions are character positions.
    let without_prefix = infos.iter().enumerate().filter(|(_, info)| {
        let ToolSource::Mcp { server, .. } = &info.source else {
            return false;
        };
        let name = info.name.as_str();
        name.len() > query.len() + 1
            && name[name.len() - query.len()..].eq_ignore_ascii_case(query)
            && name.as_bytes()[name.len() - query.len() - 1] == b'_'
            && is_sanitized(&name[..name.len() - query.len() - 1], server)
    });
    only(without_prefix)
}

/// The position of the only match, if there is exactly one.
fn only<T>(mut matches: impl Iterator<Item = (usize, T)>) -> Option<usize> {
    match (matches.next(), matches.next()) {
        (Some((index, _)), None) => Some(index),
        _ => None,
    }
}

/// Whether `prefix` is `server` as `tools::naming::sanitize` writes it, without building it.
fn is_sanitized(prefix: &str, server: &str) -> bool {
    let mut expected = server.chars().map(crate::tools::naming::safe_char);
    prefix.chars().all(|c| expected.next() == Some(c)) && expected.next().is_none()
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
    let length = query.chars().count();
    // A similarity of ALIKE (0.5) needs lengths within a factor of two: the distance is at
    // least their difference. Checked before the quadratic comparison.
    let comparable = |candidate: &str| {
        let n = candidate.len();
        n <= 2 * length && 2 * n >= length
    };
    let alike = |candidate: &str| {
        if comparable(candidate) {
            strsim::normalized_damerau_levenshtein(&query, &candidate.to_lowercase())
        } else {
            0.0
        }
    };
    let mut scored: Vec<(f64, &str)> = catalog
        .infos()
        .iter()
        .map(|info| {
            let own = match &info.source {
                ToolSource::Mcp { original_name, .. } => original_name.as_str(),
                _ => info.name.as_str(),
            };
            (alike(&info.name).max(alike(own)), info.name.as_str())
        })
        .filter(|(alike, _)| *alike >= ALIKE)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.into_iter().take(CLOSEST).map(|(_, n)| n).collect()
}

/// For a ranked search that returned `returned`: the query word (three letters or more)
/// that is a whole name token of more tools than the returned ones carrying it, with how
/// many carry it, so the result can say how to narrow (`+word ...`) instead of missing the
/// others silently.
pub fn more_by_name(
    catalog: &DeferredCatalog,
    query: &str,
    returned: &[Found],
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
    let word = &words[best];
    let shown = returned
        .iter()
        .filter(|f| {
            catalog.infos()[f.index]
                .name
                .split(['_', '-'])
                .any(|token| token.eq_ignore_ascii_case(word))
        })
        .count();
    (*count > shown).then(|| (word.clone(), *count))
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
        assert_eq!(
            exact_name(&catalog, "+github"),
            None,
            "a name filter is no name"
        );
    }

    #[test]
    fn a_hostile_name_cannot_capture_a_query() {
        // A raw tool name that reads like a query is never compared; names that differ
        // only in case make the case-blind match ambiguous; the exact name wins.
        let catalog = DeferredCatalog::new(crate::deferred::testing::mcp_tools(&[
            ("evil", "send an email", "sends"),
            ("github", "Enterprise_get_file", "evil twin"),
            ("github_enterprise", "get_file", "the real one"),
        ]));
        assert_eq!(exact_name(&catalog, "send an email"), None);
        let name = |i: Option<usize>| i.map(|i| catalog.infos()[i].name.as_str());
        assert_eq!(
            name(exact_name(&catalog, "github_enterprise_get_file")),
            Some("github_enterprise_get_file")
        );
        assert_eq!(
            exact_name(&catalog, "GITHUB_ENTERPRISE_GET_FILE"),
            None,
            "two match ignoring case"
        );
        assert_eq!(
            exact_name(&catalog, "get_file"),
            Some(2),
            "only the real server's prefix fits"
        );
    }

    #[test]
    fn more_name_matches_than_returned_are_counted() {
        let catalog = sample_catalog();
        assert_eq!(
            more_by_name(&catalog, "github repository", &hits(&[Some(1.0)])),
            Some((String::from("github"), 3))
        );
        assert_eq!(
            more_by_name(
                &catalog,
                "github repository",
                &[0, 1, 2].map(|index| Found { index, score: None })
            ),
            None,
            "all returned"
        );
        assert_eq!(
            more_by_name(&catalog, "a an of", &[]),
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

//! Output of `antler tools search` and `antler tools stats`.

use serde::Serialize;
use serde_json::Value;

use crate::base::table::table;
use crate::deferred::{TokenStats, ToolSearch};

/// One query's results, as `--json` prints them.
#[derive(Debug, Serialize)]
pub(crate) struct SearchReport {
    /// The query as given.
    pub query: String,
    /// The results in rank order.
    pub results: Vec<SearchResult>,
}

#[derive(Debug, Serialize)]
pub(crate) struct SearchResult {
    pub name: String,
    pub description: String,
    /// Its ranking score (`null` for `select:`, an exact name and unranked name matches).
    pub score: Option<f32>,
    /// Whether the `tool_search` tool would promote it (bind its schema); the others are
    /// only named in its answer.
    pub promoted: bool,
}

/// Runs `query` the way the `tool_search` tool does.
pub(crate) fn report(search: &ToolSearch, query: &str) -> SearchReport {
    let catalog = search.catalog();
    let outcome = search.search(query);
    let results = outcome
        .found
        .into_iter()
        .enumerate()
        .map(|(rank, found)| {
            let info = &catalog.infos()[found.index];
            SearchResult {
                name: info.name.clone(),
                description: info.description.clone(),
                score: found.score,
                promoted: rank < outcome.promoted,
            }
        })
        .collect();
    SearchReport {
        query: query.to_string(),
        results,
    }
}

/// The results as a table with the first line of each description.
pub(crate) fn table_of(report: &SearchReport) -> String {
    let rows: Vec<Vec<String>> = report
        .results
        .iter()
        .enumerate()
        .map(|(rank, r)| {
            // A server's text: no control characters (terminal escapes) reach the terminal.
            let first_line: String = r
                .description
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .filter(|c| !c.is_control())
                .take(80)
                .collect();
            vec![
                (rank + 1).to_string(),
                r.score.map_or_else(|| "-".into(), |s| format!("{s:.3}")),
                String::from(if r.promoted { "yes" } else { "-" }),
                r.name.clone(),
                first_line,
            ]
        })
        .collect();
    if rows.is_empty() {
        return format!("No tools found matching: {}\n", report.query);
    }
    table(&["RANK", "SCORE", "PROMOTED", "NAME", "DESCRIPTION"], &rows)
}

/// `--queries FILE`: one JSON report per JSONL line with a `query` field, in input order.
/// Blank lines are skipped; a line without a string `query` is an error naming the line.
pub(crate) fn queries_jsonl(search: &ToolSearch, text: &str) -> Result<String, String> {
    let mut out = String::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|e| format!("line {}: not JSON: {e}", number + 1))?;
        let query = value.get("query").and_then(Value::as_str).ok_or_else(|| {
            format!(
                "line {}: expected an object with a string \"query\"",
                number + 1
            )
        })?;
        let report = report(search, query);
        out.push_str(&serde_json::to_string(&report).map_err(|e| e.to_string())?);
        out.push('\n');
    }
    Ok(out)
}

/// `antler tools stats` as text.
pub(crate) fn stats_table(stats: &TokenStats) -> String {
    let estimate = |exact: usize, estimate: usize| {
        let error = 100.0 * (estimate as f64 - exact as f64) / exact.max(1) as f64;
        format!("{estimate} ({error:+.1}%)")
    };
    let rows = vec![
        vec!["tools".to_string(), stats.tools.to_string(), String::new()],
        vec![
            "binding every schema".to_string(),
            format!("{} tokens", stats.full_tokens),
            estimate(stats.full_tokens, stats.full_estimate),
        ],
        vec![
            format!("deferred: {} + tool_search", stats.listing),
            format!("{} tokens", stats.deferred_tokens),
            estimate(stats.deferred_tokens, stats.deferred_estimate),
        ],
        vec![
            "reduction".to_string(),
            format!("{:.1}%", stats.reduction_percent),
            String::new(),
        ],
    ];
    table(&["", "o200k", "estimate (error)"], &rows)
}

//! Fusing the lexical ranking with embedding similarity. Lexical BM25F is precise when the
//! query shares the catalog's words; the embeddings bridge synonyms it cannot. Each tool's
//! fused score is its lexical score relative to the best one (0..=1) plus `WEIGHT` times
//! its cosine similarity with the query (also at most 1), so one weight sets the balance
//! whatever the catalog's BM25 scale. The semantic weight shrinks for long queries (whose
//! many words give lexical evidence enough, while their mean vector blurs several intents
//! into one topic) and for CJK queries (the embedding model is English-only).

use super::Hit;
use super::Searchable;
use super::embed::{Table, ToolVectors, table};
use super::index::{SCHEMA_DEPTH, collect_schema};

/// Weight of cosine similarity next to the normalised lexical score (tuned on half A).
const WEIGHT: f32 = 1.0;
/// Queries up to this many words get the full semantic weight, longer ones proportionally
/// less (tuned on half A).
const SHORT_QUERY_WORDS: f32 = 5.0;
/// How many of the most similar tools get a semantic score.
const SEMANTIC_DEPTH: usize = 100;

/// Embedding side of the index: the table and one vector per tool.
pub(crate) struct Semantic {
    table: &'static Table,
    tools: ToolVectors,
}

impl Semantic {
    /// Embeds each tool's name, server, description and parameter names; `None` if the
    /// shipped table is unusable.
    pub(super) fn build<T: Searchable>(tools: &[T]) -> Option<Self> {
        let table = table()?;
        let texts = tools.iter().map(tool_text);
        Some(Self {
            table,
            tools: ToolVectors::build(table, texts),
        })
    }

    /// Fuses `lexical` (the full lexical ranking, best first) with the embedding ranking
    /// of `query`; at most `limit` hits, only tools with `keep`, ties in catalog order.
    pub(super) fn fuse(
        &self,
        query: &str,
        lexical: &[Hit],
        limit: usize,
        keep: &dyn Fn(usize) -> bool,
    ) -> Vec<Hit> {
        let Some(q) = self.table.embed(query) else {
            return lexical.iter().take(limit).copied().collect();
        };
        let words = query.split_whitespace().count().max(1) as f32;
        let weight = WEIGHT * q.trust * (SHORT_QUERY_WORDS / words).min(1.0);
        let mut fused = vec![0f32; self.tools.len()];
        let best = lexical
            .first()
            .map_or(1.0, |h| h.score)
            .max(f32::MIN_POSITIVE);
        for hit in lexical {
            if let Some(f) = fused.get_mut(hit.index) {
                *f += hit.score / best;
            }
        }
        if weight > 0.0 {
            let cos = self.tools.cosines(&q.vector);
            let mut semantic = positive_hits(&cos, keep);
            top(&mut semantic, SEMANTIC_DEPTH);
            for hit in &semantic {
                fused[hit.index] += weight * hit.score;
            }
        }
        let mut hits = positive_hits(&fused, keep);
        top(&mut hits, limit);
        hits
    }
}

/// The tools with a positive score that `keep` allows, in catalog order.
fn positive_hits(scores: &[f32], keep: &dyn Fn(usize) -> bool) -> Vec<Hit> {
    scores
        .iter()
        .enumerate()
        .filter(|&(i, &s)| s > 0.0 && keep(i))
        .map(|(index, &score)| Hit { index, score })
        .collect()
}

/// Keeps the best `n` hits, sorted best first, ties by catalog order.
pub(crate) fn top(hits: &mut Vec<Hit>, n: usize) {
    let order = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index));
    if n < hits.len() {
        hits.select_nth_unstable_by(n, order);
        hits.truncate(n);
    }
    hits.sort_unstable_by(order);
}

/// The text a tool is embedded from: name words (camelCase split), server, description and
/// parameter names.
fn tool_text<T: Searchable>(tool: &T) -> String {
    let (name, server) = tool.name_and_server();
    let mut text = String::new();
    push_words(&mut text, name);
    text.push_str(". ");
    push_words(&mut text, server.unwrap_or(""));
    text.push_str(". ");
    text.push_str(tool.description());
    let (mut names, mut notes) = (String::new(), String::new());
    collect_schema(tool.parameters(), SCHEMA_DEPTH, &mut names, &mut notes);
    text.push_str(". ");
    push_words(&mut text, &names);
    text
}

/// Appends `ident` with camelCase humps and `_`/`-` turned into spaces.
pub fn push_words(out: &mut String, ident: &str) {
    let mut prev = ' ';
    for c in ident.chars() {
        if c == '_' || c == '-' {
            out.push(' ');
        } else {
            if c.is_uppercase() && prev.is_lowercase() {
                out.push(' ');
            }
            out.push(c);
        }
        prev = c;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_become_words() {
        let mut s = String::new();
        push_words(&mut s, "getForecast_by-city");
        assert_eq!(s, "get Forecast by city");
    }

    #[test]
    fn ties_and_limits() {
        let mut hits = vec![
            Hit {
                index: 2,
                score: 1.0,
            },
            Hit {
                index: 0,
                score: 1.0,
            },
            Hit {
                index: 1,
                score: 2.0,
            },
        ];
        top(&mut hits, 2);
        let order: Vec<usize> = hits.iter().map(|h| h.index).collect();
        assert_eq!(order, [1, 0]);
    }
}

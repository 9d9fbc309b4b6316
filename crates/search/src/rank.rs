//! Ranked word search: each query term (with its morphological variants and compounds)
//! counts once, by its best-matching variant's BM25F score, at tool level and at server
//! level (a server's tools share its evidence); a tool covering more of the query's idf
//! mass gets a bonus, so several moderately rare matches beat one rare incidental word.

use std::collections::HashMap;

use super::Hit;
use super::index::{Index, Level};
use super::query::weighted_tokens;
use super::tokenize::{Kind, Token, Tokenizer};

/// Query weight of a CJK unigram: single characters are weak evidence next to bigrams.
const UNIGRAM: f32 = 0.3;
/// Query weight of a number: `2023` or `5` rarely names what a tool does.
const NUMBER: f32 = 0.5;
/// Factor of a morphological variant or compound half, below an exact match.
const VARIANT: f32 = 0.5;
/// Weight of server-level evidence added to each of the server's tools.
const SERVER: f32 = 0.3;
/// Bonus for covering all of the query's idf mass (scaled by the share covered).
const COVERAGE: f32 = 0.5;
/// Minimum length of a word for prefix variants.
const MIN_PREFIX: usize = 4;

/// One query concept: the terms that count for it, each with a factor, and its weight.
struct Group {
    variants: Vec<(u32, f32)>,
    weight: f32,
}

/// Ranks tools for a plain-word query.
pub(crate) fn rank(
    index: &Index,
    tokenizer: &Tokenizer,
    query: &str,
    limit: usize,
    keep: &dyn Fn(usize) -> bool,
) -> Vec<Hit> {
    rank_also(index, tokenizer, query, limit, keep, &|_| false)
}

/// [`rank`], keeping beyond the best `limit` every match with `also(index)`.
pub(crate) fn rank_also(
    index: &Index,
    tokenizer: &Tokenizer,
    query: &str,
    limit: usize,
    keep: &dyn Fn(usize) -> bool,
    also: &dyn Fn(usize) -> bool,
) -> Vec<Hit> {
    let groups = groups(index, tokenizer, query);
    if groups.is_empty() || limit == 0 {
        return Vec::new();
    }
    let n = index.group_of.len();
    // Per tool: BM25F score, share of the query's idf mass it matches; per server: score.
    let mut score = vec![0f32; n];
    let mut covered = vec![0f32; n];
    let mut server = vec![0f32; index.members.len()];
    // Scratch for one group: its best variant per tool / server, and who was touched.
    let mut best = vec![0f32; n];
    let mut best_server = vec![0f32; index.members.len()];
    let mut touched = Vec::new();
    let mut touched_servers = Vec::new();
    let mut total = 0.0;
    for g in &groups {
        let mut importance = 0f32;
        for &(term, factor) in &g.variants {
            let w = g.weight * factor;
            importance = importance.max(w * index.tools.idf(term));
            max_into(&index.tools, term, w, &mut best, &mut touched);
            max_into(
                &index.servers,
                term,
                w,
                &mut best_server,
                &mut touched_servers,
            );
        }
        total += importance;
        for d in touched.drain(..) {
            let d = d as usize;
            score[d] += best[d];
            covered[d] += importance;
            best[d] = 0.0;
        }
        for s in touched_servers.drain(..) {
            let s = s as usize;
            server[s] += best_server[s];
            best_server[s] = 0.0;
        }
    }
    let total = total.max(f32::MIN_POSITIVE);
    let mut hits: Vec<Hit> = (0..n)
        .filter_map(|d| {
            let from_server = index.group_of[d]
                .and_then(|s| server.get(s as usize))
                .map_or(0.0, |s| SERVER * s);
            let s = (score[d] + from_server) * (1.0 + COVERAGE * covered[d] / total);
            (s > 0.0 && keep(d)).then_some(Hit { index: d, score: s })
        })
        .collect();
    let order = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index));
    if limit < hits.len() {
        hits.select_nth_unstable_by(limit, order);
        let rest = hits.split_off(limit);
        hits.extend(rest.into_iter().filter(|h| also(h.index)));
    }
    hits.sort_unstable_by(order);
    hits
}

/// Raises `best[d]` to this term's weighted BM25F score for each tool or server `d` that
/// has it, noting first touches (a group counts its best-matching variant once).
fn max_into(level: &Level, term: u32, weight: f32, best: &mut [f32], touched: &mut Vec<u32>) {
    let w = weight * level.idf(term);
    let (docs, sat) = level.postings(term);
    for (&d, &s) in docs.iter().zip(sat) {
        if let Some(b) = best.get_mut(d as usize) {
            if *b == 0.0 {
                touched.push(d);
            }
            *b = b.max(w * s);
        }
    }
}

/// The query's concepts: distinct terms with their variants, plus joined compounds.
fn groups(index: &Index, tokenizer: &Tokenizer, query: &str) -> Vec<Group> {
    let tokens = weighted_tokens(tokenizer, query);
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<Group> = Vec::new();
    let mut push = |text: String, weight: f32, variants: &dyn Fn() -> Vec<(u32, f32)>| {
        if let Some(&i) = seen.get(&text) {
            if let Some(g) = out.get_mut(i) {
                g.weight = g.weight.max(weight);
            }
        } else {
            let variants = variants();
            if !variants.is_empty() {
                seen.insert(text, out.len());
                out.push(Group { variants, weight });
            }
        }
    };
    for (i, (token, w)) in tokens.iter().enumerate() {
        push(token.text.clone(), w * weight(token), &|| {
            variants(index, tokenizer, token)
        });
        // "mind map" also looks for "mindmap".
        if let Some((next, nw)) = tokens.get(i + 1)
            && token.kind == Kind::Word
            && next.kind == Kind::Word
            && let Some(joined) = tokenizer.normalise(&format!("{}{}", token.raw, next.raw))
            && let Some(&id) = index.vocab.get(&joined)
        {
            push(joined, w.min(*nw), &|| vec![(id, 1.0)]);
        }
    }
    out
}

fn weight(token: &Token) -> f32 {
    match token.kind {
        Kind::CjkUnigram => UNIGRAM,
        Kind::CjkBigram => 1.0,
        Kind::Word if token.text.chars().all(|c| c.is_ascii_digit()) => NUMBER,
        Kind::Word => 1.0,
    }
}

/// The vocabulary terms that count for a query term: itself, words sharing a long prefix
/// (`analysis`/`analyze`, `stat`/`statistics`), or, for an unknown word, its two halves
/// (`sitemap` → `site` + `map`).
fn variants(index: &Index, tokenizer: &Tokenizer, token: &Token) -> Vec<(u32, f32)> {
    let mut out = Vec::new();
    if let Some(&id) = index.vocab.get(&token.text) {
        out.push((id, 1.0));
    }
    if token.kind != Kind::Word {
        return out;
    }
    let q: Vec<char> = token.text.chars().collect();
    if q.len() >= MIN_PREFIX {
        let prefix: String = q[..MIN_PREFIX].iter().collect();
        let from = index
            .sorted_words
            .partition_point(|(w, _)| w.as_str() < prefix.as_str());
        for (word, id) in &index.sorted_words[from..] {
            if !word.starts_with(&prefix) {
                break;
            }
            if *word == token.text {
                continue;
            }
            let w: Vec<char> = word.chars().collect();
            let common = q.iter().zip(&w).take_while(|(a, b)| a == b).count();
            let shorter = q.len().min(w.len());
            if common == shorter || common >= (shorter - 1).max(5) {
                out.push((*id, VARIANT));
            }
        }
    }
    if out.is_empty() {
        let raw: Vec<char> = token.raw.chars().collect();
        for cut in 3..raw.len().saturating_sub(2) {
            let left: String = raw[..cut].iter().collect();
            let right: String = raw[cut..].iter().collect();
            let ids = (
                tokenizer.normalise(&left).and_then(|l| index.vocab.get(&l)),
                tokenizer
                    .normalise(&right)
                    .and_then(|r| index.vocab.get(&r)),
            );
            if let (Some(&l), Some(&r)) = ids {
                out.push((l, VARIANT));
                out.push((r, VARIANT));
                break;
            }
        }
    }
    out
}

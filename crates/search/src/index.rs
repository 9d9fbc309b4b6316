//! The inverted index: one vocabulary, and BM25F postings at two levels — tools, and
//! servers (all of a server's tools as one document, so evidence spread over sibling tools
//! still points at the right server).

use std::collections::HashMap;

use serde_json::Value;

use super::Searchable;
use super::tokenize::{Token, Tokenizer};

/// The fields of a tool document, from most to least telling.
#[derive(Debug, Clone, Copy)]
enum Field {
    /// The tool's own name (without the server prefix).
    Name,
    /// The server it comes from.
    Server,
    /// The first sentence of the description, which usually says what the tool does.
    Lead,
    /// The rest of the description.
    Body,
    /// Parameter names.
    ParamName,
    /// Parameter descriptions and enum values.
    ParamText,
}

const FIELDS: usize = 6;
/// BM25F field weights: a word in the name says far more than one in a parameter note.
const WEIGHT: [f32; FIELDS] = [3.0, 1.5, 1.5, 1.0, 0.6, 0.4];
/// BM25F length normalisation per field: names and server names vary little in length.
const B: [f32; FIELDS] = [0.5, 0.5, 0.75, 0.75, 0.75, 0.75];
/// BM25 term-frequency saturation (the textbook value).
const K1: f32 = 1.2;
/// How deep parameter schemas are walked.
pub(crate) const SCHEMA_DEPTH: usize = 3;

/// Postings of every term at one level, stored as compressed rows: `docs[start[t]..start[t + 1]]`
/// are the documents containing term `t` (ascending), and `sat` their saturated BM25F weights.
#[derive(Debug, Default)]
pub(crate) struct Level {
    start: Vec<u32>,
    docs: Vec<u32>,
    sat: Vec<f32>,
    idf: Vec<f32>,
}

impl Level {
    /// The documents containing `term` and their saturated weights.
    pub(super) fn postings(&self, term: u32) -> (&[u32], &[f32]) {
        let t = term as usize;
        match (self.start.get(t), self.start.get(t + 1)) {
            (Some(&a), Some(&b)) => {
                let r = a as usize..b as usize;
                (&self.docs[r.clone()], &self.sat[r])
            }
            _ => (&[], &[]),
        }
    }

    /// The inverse document frequency of `term` at this level (0 if absent).
    pub(super) fn idf(&self, term: u32) -> f32 {
        self.idf.get(term as usize).copied().unwrap_or(0.0)
    }
}

/// Everything the ranker needs about a catalog.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// Term text to id.
    pub vocab: HashMap<String, u32>,
    /// Word terms (not CJK), sorted, for prefix look-ups of variants.
    pub sorted_words: Vec<(String, u32)>,
    /// Tool-level postings.
    pub tools: Level,
    /// Server-level postings.
    pub servers: Level,
    /// The server (group) of each tool, if it has one.
    pub group_of: Vec<Option<u32>>,
    /// The tools of each server, ascending.
    pub members: Vec<Vec<u32>>,
}

/// One document under construction: per-field term counts and lengths.
#[derive(Default)]
struct Doc {
    counts: HashMap<u32, [u32; FIELDS]>,
    len: [u32; FIELDS],
}

impl Doc {
    fn add(&mut self, field: Field, terms: &[u32]) {
        let f = field as usize;
        for &t in terms {
            self.counts.entry(t).or_insert([0; FIELDS])[f] += 1;
        }
        self.len[f] += u32::try_from(terms.len()).unwrap_or(u32::MAX);
    }

    fn merge(&mut self, other: &Doc) {
        for (&t, c) in &other.counts {
            let mine = self.counts.entry(t).or_insert([0; FIELDS]);
            for (m, &o) in mine.iter_mut().zip(c) {
                *m = m.saturating_add(o);
            }
        }
        for (m, &o) in self.len.iter_mut().zip(&other.len) {
            *m = m.saturating_add(o);
        }
    }
}

impl Index {
    /// Indexes `tools` in order.
    pub(super) fn build<T: Searchable>(tools: &[T], tokenizer: &Tokenizer) -> Self {
        let mut index = Index::default();
        let mut groups: HashMap<String, u32> = HashMap::new();
        let mut memo = HashMap::new();
        let mut docs = Vec::with_capacity(tools.len());
        for (i, tool) in tools.iter().enumerate() {
            let (name, server) = tool.name_and_server();
            let group = server.map(|s| {
                let next = u32::try_from(groups.len()).unwrap_or(u32::MAX);
                let g = *groups.entry(s.to_string()).or_insert(next);
                if g as usize == index.members.len() {
                    index.members.push(Vec::new());
                }
                g
            });
            if let Some(g) = group {
                index.members[g as usize].push(u32::try_from(i).unwrap_or(u32::MAX));
            }
            index.group_of.push(group);
            let mut doc = Doc::default();
            let mut add = |field, text: &str| {
                let terms = index.intern(&tokenizer.tokens_memo(text, &mut memo));
                doc.add(field, &terms);
            };
            add(Field::Name, name);
            add(Field::Server, server.unwrap_or(""));
            let (lead, body) = split_lead(tool.description());
            add(Field::Lead, lead);
            add(Field::Body, body);
            let mut names = String::new();
            let mut notes = String::new();
            collect_schema(tool.parameters(), SCHEMA_DEPTH, &mut names, &mut notes);
            add(Field::ParamName, &names);
            add(Field::ParamText, &notes);
            docs.push(doc);
        }
        let mut server_docs: Vec<Doc> = index.members.iter().map(|_| Doc::default()).collect();
        for (doc, group) in docs.iter().zip(&index.group_of) {
            if let Some(g) = group {
                server_docs[*g as usize].merge(doc);
            }
        }
        let terms = index.vocab.len();
        index.tools = level(&docs, terms);
        index.servers = level(&server_docs, terms);
        let mut words: Vec<(String, u32)> = index
            .vocab
            .iter()
            .filter(|(t, _)| !t.chars().any(super::tokenize::is_cjk))
            .map(|(t, &id)| (t.clone(), id))
            .collect();
        words.sort_unstable();
        index.sorted_words = words;
        index
    }

    fn intern(&mut self, tokens: &[Token]) -> Vec<u32> {
        tokens
            .iter()
            .map(|t| {
                let next = u32::try_from(self.vocab.len()).unwrap_or(u32::MAX);
                *self.vocab.entry(t.text.clone()).or_insert(next)
            })
            .collect()
    }
}

/// Splits a description into its first sentence and the rest.
fn split_lead(description: &str) -> (&str, &str) {
    let text = description.trim_start();
    let mut prev = ' ';
    for (i, c) in text.char_indices() {
        let end = matches!(c, '。' | '！' | '？' | '\n')
            || (matches!(prev, '.' | '!' | '?') && c.is_whitespace());
        if end && i > 0 {
            return (&text[..i], &text[i..]);
        }
        prev = c;
    }
    (text, "")
}

/// Gathers parameter names into `names` and their descriptions, titles and enum values into
/// `notes`, walking nested objects and arrays up to `depth` levels.
pub(crate) fn collect_schema(schema: &Value, depth: usize, names: &mut String, notes: &mut String) {
    if depth == 0 {
        return;
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            names.push_str(name);
            names.push(' ');
            for key in ["description", "title"] {
                if let Some(text) = prop.get(key).and_then(Value::as_str) {
                    notes.push_str(text);
                    notes.push('\n');
                }
            }
            if let Some(values) = prop.get("enum").and_then(Value::as_array) {
                for v in values.iter().filter_map(Value::as_str) {
                    notes.push_str(v);
                    notes.push(' ');
                }
            }
            collect_schema(prop, depth - 1, names, notes);
        }
    }
    if let Some(items) = schema.get("items") {
        collect_schema(items, depth - 1, names, notes);
    }
}

/// Builds one level's postings from its documents.
fn level(docs: &[Doc], terms: usize) -> Level {
    let n = docs.len().max(1) as f32;
    let mut avg = [0f32; FIELDS];
    let mut df = vec![0f32; terms];
    for doc in docs {
        for (a, &len) in avg.iter_mut().zip(&doc.len) {
            *a += len as f32;
        }
        for &t in doc.counts.keys() {
            df[t as usize] += 1.0;
        }
    }
    for a in &mut avg {
        *a = (*a / n).max(1.0);
    }
    let idf: Vec<f32> = df
        .iter()
        .map(|&df| ((n - df + 0.5) / (df + 0.5)).ln_1p())
        .collect();
    let mut rows: Vec<Vec<(u32, f32)>> = vec![Vec::new(); terms];
    for (d, doc) in docs.iter().enumerate() {
        let norm: [f32; FIELDS] =
            std::array::from_fn(|f| 1.0 - B[f] + B[f] * doc.len[f] as f32 / avg[f]);
        for (&t, counts) in &doc.counts {
            let tf: f32 = (0..FIELDS)
                .filter(|&f| counts[f] > 0)
                .map(|f| WEIGHT[f] * counts[f] as f32 / norm[f])
                .sum();
            let d = u32::try_from(d).unwrap_or(u32::MAX);
            rows[t as usize].push((d, tf / (K1 + tf)));
        }
    }
    let mut out = Level {
        idf,
        ..Level::default()
    };
    out.start.reserve(terms + 1);
    out.start.push(0);
    for mut row in rows {
        row.sort_unstable_by_key(|r| r.0);
        for (d, sat) in row {
            out.docs.push(d);
            out.sat.push(sat);
        }
        out.start
            .push(u32::try_from(out.docs.len()).unwrap_or(u32::MAX));
    }
    out
}

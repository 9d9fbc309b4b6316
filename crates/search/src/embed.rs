//! Static word embeddings: general English knowledge that no catalog spells out
//! (`remove` ≈ `delete`, `encyclopedia` ≈ `wikipedia`), so a query can find a tool that
//! shares none of its words. The shipped table (`assets/`, distilled from all-MiniLM-L6-v2
//! the model2vec way, see `assets/README.md`) gives each WordPiece token a vector; a text is
//! the mean of its tokens' vectors, normalised, and tools are scored by cosine similarity.

use std::sync::OnceLock;

use crate::semantic::wordpiece::WordPiece;

/// The int8 table: `AEMB`, rows and dims (u32 LE), one f32 LE scale per row, rows × dims i8.
static TABLE_BYTES: &[u8] = include_bytes!("../../../assets/embeddings.bin");
/// The WordPiece vocabulary of the table, one token per line, line `i` being row `i`.
static VOCAB: &str = include_str!("../../../assets/vocab.txt");

/// A text's embedding: its unit vector, and how much of it is trustworthy (the share of its
/// tokens that are not CJK characters, which the English-only model barely knows).
pub(crate) struct Embedding {
    /// Unit-length mean of the token vectors.
    pub vector: Vec<f32>,
    /// Share of non-CJK tokens, in 0..=1.
    pub trust: f32,
}

/// The parsed table: tokenizer, per-row scales and the quantised rows.
pub(crate) struct Table {
    wordpiece: WordPiece,
    dims: usize,
    scales: Vec<f32>,
    rows: &'static [u8],
}

/// The shipped table, parsed once per process; `None` if it is malformed (then search is
/// lexical only, never broken).
pub(crate) fn table() -> Option<&'static Table> {
    static TABLE: OnceLock<Option<Table>> = OnceLock::new();
    TABLE
        .get_or_init(|| Table::parse(TABLE_BYTES, VOCAB))
        .as_ref()
}

fn u32_at(bytes: &[u8], at: usize) -> Option<usize> {
    let b: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    usize::try_from(u32::from_le_bytes(b)).ok()
}

impl Table {
    /// Checks and splits the table; `None` unless header, sizes and vocabulary agree.
    pub(super) fn parse(bytes: &'static [u8], vocab: &'static str) -> Option<Table> {
        if bytes.get(..4)? != b"AEMB" {
            return None;
        }
        let (n, dims) = (u32_at(bytes, 4)?, u32_at(bytes, 8)?);
        let scales_end = 12 + 4 * n;
        let scales = bytes
            .get(12..scales_end)?
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let rows = bytes.get(scales_end..)?;
        if dims == 0 || rows.len() != n * dims || vocab.lines().count() != n {
            return None;
        }
        Some(Table {
            wordpiece: WordPiece::new(vocab),
            dims,
            scales,
            rows,
        })
    }

    /// The vectors' dimension.
    pub(super) fn dims(&self) -> usize {
        self.dims
    }

    /// Embeds `text`; `None` if it has no known token.
    pub(super) fn embed(&self, text: &str) -> Option<Embedding> {
        let mut tokens = Vec::new();
        self.wordpiece.tokenize(text, &mut tokens);
        let mut sum = vec![0f32; self.dims];
        let mut cjk = 0usize;
        for &(id, is_cjk) in &tokens {
            cjk += usize::from(is_cjk);
            let id = id as usize;
            let (Some(&scale), Some(row)) = (
                self.scales.get(id),
                self.rows.get(id * self.dims..(id + 1) * self.dims),
            ) else {
                continue;
            };
            for (s, &q) in sum.iter_mut().zip(row) {
                *s += scale * f32::from(q as i8);
            }
        }
        let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
        if tokens.is_empty() || norm <= f32::EPSILON {
            return None;
        }
        sum.iter_mut().for_each(|x| *x /= norm);
        Some(Embedding {
            vector: sum,
            trust: 1.0 - cjk as f32 / tokens.len() as f32,
        })
    }
}

/// One unit vector per tool (zeros for a tool with no known token), row-major, int8 with a
/// per-row scale: a quarter of the memory of f32, so scoring 10,000 tools stays in cache.
pub(crate) struct ToolVectors {
    dims: usize,
    scales: Vec<f32>,
    data: Vec<i8>,
}

impl ToolVectors {
    /// Embeds each of `texts` in order.
    pub(super) fn build<'a>(table: &Table, texts: impl Iterator<Item = String> + 'a) -> Self {
        let dims = table.dims();
        let (mut scales, mut data) = (Vec::new(), Vec::new());
        for text in texts {
            let vector = table.embed(&text).map(|e| e.vector);
            let vector = vector.unwrap_or_else(|| vec![0.0; dims]);
            let (scale, q) = quantise(&vector);
            scales.push(scale);
            data.extend(q);
        }
        Self { dims, scales, data }
    }

    /// How many tools.
    pub(super) fn len(&self) -> usize {
        self.scales.len()
    }

    /// Cosine similarity of every tool with the unit `query` vector, in catalog order.
    pub(super) fn cosines(&self, query: &[f32]) -> Vec<f32> {
        if query.len() != self.dims {
            return vec![0.0; self.len()];
        }
        let (qs, q) = quantise(query);
        self.data
            .chunks_exact(self.dims)
            .zip(&self.scales)
            .map(|(row, scale)| scale * qs * dot(row, &q) as f32)
            .collect()
    }
}

/// Integer dot product: exact and associative, so the compiler vectorises it.
fn dot(a: &[i8], b: &[i8]) -> i32 {
    let mut lanes = [0i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: i32 = (ca.remainder().iter().zip(cb.remainder()))
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum();
    for (x, y) in ca.zip(cb) {
        for ((l, &x), &y) in lanes.iter_mut().zip(x).zip(y) {
            *l += i32::from(x) * i32::from(y);
        }
    }
    lanes.iter().sum::<i32>() + tail
}

/// Quantises a vector to int8 with one scale (`x ≈ scale * q`).
fn quantise(vector: &[f32]) -> (f32, Vec<i8>) {
    let max = vector.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    // In range by construction: |x| / scale <= 127.
    (
        scale,
        vector.iter().map(|x| (x / scale).round() as i8).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &str, b: &str) -> f32 {
        let t = table().expect("shipped table parses");
        let (a, b) = (t.embed(a).expect("known"), t.embed(b).expect("known"));
        a.vector.iter().zip(&b.vector).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn shipped_table_knows_synonyms() {
        assert!(cos("remove a file", "delete a file") > cos("remove a file", "weather forecast"));
        assert!(cos("encyclopedia", "wikipedia") > cos("encyclopedia", "stock price"));
        assert!(cos("discount", "sale") > cos("discount", "git commit"));
    }

    #[test]
    fn cjk_text_is_marked_untrusted() {
        let t = table().expect("shipped table parses");
        let e = t.embed("中国天").expect("known characters");
        assert!(e.trust < 0.01);
        let e = t.embed("weather forecast").expect("known words");
        assert!((e.trust - 1.0).abs() < 1e-6);
        assert!(t.embed("").is_none());
    }

    #[test]
    fn malformed_tables_are_rejected() {
        assert!(Table::parse(b"nope", "a\n").is_none());
        assert!(Table::parse(b"AEMB\x01\0\0\0\x02\0\0\0\0\0\x80\x3f\x01", "a\n").is_none());
        let ok = Table::parse(b"AEMB\x01\0\0\0\x02\0\0\0\0\0\x80\x3f\x01\x02", "a\n");
        assert!(ok.is_some_and(|t| t.embed("a").is_some()));
    }

    #[test]
    fn dot_handles_tails() {
        let a: Vec<i8> = (0..11).collect();
        assert_eq!(dot(&a, &a), 385);
        let (s, q) = quantise(&[0.5, -1.0, 0.0]);
        assert_eq!(q, [64, -127, 0]);
        assert!((s * 127.0 - 1.0).abs() < 1e-6);
    }

    #[test]
    fn tool_vectors_score_by_cosine() {
        let t = table().expect("shipped table parses");
        let texts = ["delete file", "weather forecast", "知"].map(String::from);
        let tv = ToolVectors::build(t, texts.into_iter());
        let q = t.embed("remove a document").expect("known");
        let c = tv.cosines(&q.vector);
        assert_eq!(c.len(), 3);
        assert!(c[0] > c[1]);
    }
}

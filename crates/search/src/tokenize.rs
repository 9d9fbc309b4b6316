//! Turns text into index terms: words split at `_ - . /`, camelCase and digit boundaries,
//! lower-cased, stopwords dropped and Snowball-stemmed; CJK runs (which have no spaces)
//! become character bigrams plus unigrams so Chinese queries meet Chinese descriptions.

use std::collections::HashMap;

use rust_stemmers::{Algorithm, Stemmer};

/// What kind of unit a term is; CJK unigrams are weak evidence and get less query weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A stemmed word (or a number).
    Word,
    /// One CJK character.
    CjkUnigram,
    /// Two adjacent CJK characters.
    CjkBigram,
}

/// One term of a text, in text order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    /// The normalised term (stemmed word, or CJK characters).
    pub text: String,
    /// What kind of unit it is.
    pub kind: Kind,
    /// The word lower-cased but not stemmed (for joining compounds); empty for CJK.
    pub raw: String,
}

/// A generic English stopword list (function words, pronouns, auxiliaries): words that
/// say nothing about what a tool does in any catalog.
#[rustfmt::skip]
const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
    "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself",
    "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
    "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on",
    "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same",
    "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
    "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
    "yourselves", "let", "lets", "please", "also", "may", "might", "must", "shall", "us", "e",
    "g", "eg", "ie", "etc", "via", "whether", "within", "without", "s", "t", "d", "ll", "m",
    "re", "ve",
];

/// Whether `c` belongs to a script written without spaces between words.
pub(crate) fn is_cjk(c: char) -> bool {
    is_han(c)
        || matches!(c as u32,
            0x3040..=0x30FF        // Hiragana, Katakana
            | 0xAC00..=0xD7AF      // Hangul syllables
            | 0x1100..=0x11FF      // Hangul jamo
            | 0x3130..=0x318F) // Hangul compatibility jamo
}

/// Whether `c` is a Han character (Chinese, and the kanji and hanja of Japanese and Korean).
pub(crate) fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF        // CJK extension A
        | 0x4E00..=0x9FFF      // CJK unified ideographs
        | 0xF900..=0xFAFF      // CJK compatibility ideographs
        | 0x20000..=0x2FA1F) // CJK extensions B and later
}

/// Splits text into terms; holds the stemmer so callers need not.
pub(crate) struct Tokenizer {
    stemmer: Stemmer,
}

impl Tokenizer {
    /// An English Snowball tokenizer.
    pub(super) fn new() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }

    /// The terms of `text`, in order.
    pub(super) fn tokens(&self, text: &str) -> Vec<Token> {
        tokens_with(text, &mut |lower| self.normalise(lower))
    }

    /// Like [`Tokenizer::tokens`], remembering each word's stem in `memo`: indexing a large
    /// catalog stems the same few thousand words over and over.
    pub(super) fn tokens_memo(
        &self,
        text: &str,
        memo: &mut HashMap<String, Option<String>>,
    ) -> Vec<Token> {
        tokens_with(text, &mut |lower| {
            if let Some(known) = memo.get(lower) {
                return known.clone();
            }
            let stem = self.normalise(lower);
            memo.insert(lower.to_string(), stem.clone());
            stem
        })
    }

    /// Stems one lower-case word, or `None` for a stopword or a lone letter.
    pub(super) fn normalise(&self, lower: &str) -> Option<String> {
        let mut chars = lower.chars();
        let first = chars.next()?;
        if chars.next().is_none() && !first.is_ascii_digit() {
            return None;
        }
        if STOPWORDS.contains(&lower) {
            return None;
        }
        Some(self.stemmer.stem(lower).into_owned())
    }
}

/// Splits `text` into terms, normalising words with `norm`.
fn tokens_with(text: &str, norm: &mut dyn FnMut(&str) -> Option<String>) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut cjk = String::new();
    for c in text.chars() {
        if is_cjk(c) {
            flush_word(&mut word, norm, &mut out);
            cjk.push(c);
        } else if c.is_alphanumeric() {
            flush_cjk(&mut cjk, &mut out);
            word.push(c);
        } else {
            flush_word(&mut word, norm, &mut out);
            flush_cjk(&mut cjk, &mut out);
        }
    }
    flush_word(&mut word, norm, &mut out);
    flush_cjk(&mut cjk, &mut out);
    out
}

fn flush_word(
    word: &mut String,
    norm: &mut dyn FnMut(&str) -> Option<String>,
    out: &mut Vec<Token>,
) {
    if word.is_empty() {
        return;
    }
    for part in split_word(word) {
        let lower = part.to_lowercase();
        if let Some(text) = norm(&lower) {
            out.push(Token {
                text,
                kind: Kind::Word,
                raw: lower,
            });
        }
    }
    word.clear();
}

fn flush_cjk(run: &mut String, out: &mut Vec<Token>) {
    let chars: Vec<char> = run.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        out.push(Token {
            text: c.to_string(),
            kind: Kind::CjkUnigram,
            raw: String::new(),
        });
        if let Some(&next) = chars.get(i + 1) {
            out.push(Token {
                text: [c, next].iter().collect(),
                kind: Kind::CjkBigram,
                raw: String::new(),
            });
        }
    }
    run.clear();
}

/// Splits an alphanumeric run at camelCase (`npmTrends`, `HTMLParser`) and letter/digit
/// (`utf8`, `9to5mac`) boundaries.
fn split_word(word: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next_lower = chars.get(i + 1).is_some_and(|&(_, n)| n.is_lowercase());
        let boundary = (prev.is_lowercase() && c.is_uppercase())
            || (prev.is_uppercase() && c.is_uppercase() && next_lower)
            || (prev.is_ascii_digit() != c.is_ascii_digit());
        if boundary {
            parts.push(&word[start..at]);
            start = at;
        }
    }
    parts.push(&word[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        Tokenizer::new()
            .tokens(s)
            .into_iter()
            .map(|t| t.text)
            .collect()
    }

    #[test]
    fn splits_snake_kebab_camel_and_digits() {
        assert_eq!(
            texts("get_stock-price.v2/npmTrends"),
            ["get", "stock", "price", "2", "npm", "trend"]
        );
        assert_eq!(texts("HTMLParser utf8"), ["html", "parser", "utf", "8"]);
        assert_eq!(texts("9to5Mac"), ["9", "5", "mac"]);
    }

    #[test]
    fn drops_stopwords_and_stems() {
        assert_eq!(texts("What are the running processes?"), ["run", "process"]);
    }

    #[test]
    fn cjk_runs_become_unigrams_and_bigrams() {
        let tokens = Tokenizer::new().tokens("知乎热榜 top");
        let bigrams: Vec<&str> = tokens
            .iter()
            .filter(|t| t.kind == Kind::CjkBigram)
            .map(|t| t.text.as_str())
            .collect();
        assert_eq!(bigrams, ["知乎", "乎热", "热榜"]);
        assert_eq!(
            tokens.iter().filter(|t| t.kind == Kind::CjkUnigram).count(),
            4
        );
        assert_eq!(tokens.last().map(|t| t.text.as_str()), Some("top"));
    }
}

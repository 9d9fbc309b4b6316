//! BERT-uncased WordPiece tokenisation, so text maps onto the rows of the shipped embedding
//! table exactly as the model that produced it saw text: lower-cased, accents stripped,
//! split at whitespace and punctuation, CJK characters alone, then each word cut greedily
//! into the longest vocabulary pieces (`##` marks a continuation). A word that cannot be
//! cut is skipped, or becomes the unknown token when the vocabulary has one set (as the
//! sentence encoder needs: BERT saw `[UNK]` there).

use std::collections::HashMap;

/// Words longer than this (in characters) are unknown, as in BERT.
const MAX_WORD_CHARS: usize = 100;

/// A WordPiece vocabulary: token text to row.
pub(crate) struct WordPiece {
    ids: HashMap<Box<str>, u32>,
    /// The longest token, in characters (`##` left off): no longer piece is tried, so
    /// cutting a word costs its length times this, not its length cubed.
    longest: usize,
    /// The row of words that cannot be cut; `None` skips them.
    unknown: Option<u32>,
}

impl WordPiece {
    /// Reads a vocabulary with one token per line; line `i` is row `i`.
    pub(crate) fn new(vocab: &str) -> Self {
        Self::from_tokens(vocab.lines().enumerate().map(|(i, t)| (t, i)))
    }

    /// A vocabulary of `(token, row)` pairs; the first row given for a token wins.
    pub(crate) fn from_tokens<'a>(tokens: impl Iterator<Item = (&'a str, usize)>) -> Self {
        let mut ids = HashMap::new();
        let mut longest = 1;
        for (token, row) in tokens {
            let chars = token.strip_prefix("##").unwrap_or(token).chars().count();
            longest = longest.max(chars);
            ids.entry(token.into())
                .or_insert(u32::try_from(row).unwrap_or(u32::MAX));
        }
        Self {
            ids,
            longest,
            unknown: None,
        }
    }

    /// The highest row of any token.
    pub(crate) fn max_row(&self) -> Option<u32> {
        self.ids.values().copied().max()
    }

    /// Words that cannot be cut become `token` (if the vocabulary has it) instead of being
    /// skipped.
    pub(crate) fn with_unknown(mut self, token: &str) -> Self {
        self.unknown = self.id(token);
        self
    }

    /// The row of `token`.
    pub(crate) fn id(&self, token: &str) -> Option<u32> {
        self.ids.get(token).copied()
    }

    /// Appends the rows of `text`'s tokens to `out`. Each token comes with whether it was a
    /// CJK character (the caller may trust those less).
    pub(crate) fn tokenize(&self, text: &str, out: &mut Vec<(u32, bool)>) {
        self.tokenize_at_most(text, usize::MAX, out);
    }

    /// Like [`WordPiece::tokenize`], stopping once `out` holds at least `limit` tokens: a
    /// caller that keeps only the first tokens never reads the rest of a huge text.
    pub(crate) fn tokenize_at_most(&self, text: &str, limit: usize, out: &mut Vec<(u32, bool)>) {
        let mut word = String::new();
        for c in text.chars() {
            if out.len() >= limit {
                return;
            }
            if c.is_whitespace() || c.is_control() {
                self.word(&word, out);
                word.clear();
            } else if is_cjk_char(c) || is_punct(c) {
                self.word(&word, out);
                word.clear();
                let mut buf = [0u8; 4];
                let one = c.encode_utf8(&mut buf);
                if let Some(id) = self.id(one).or(self.unknown) {
                    out.push((id, is_cjk_char(c)));
                }
            } else {
                for l in c.to_lowercase() {
                    word.push(strip_accent(l));
                }
            }
        }
        self.word(&word, out);
    }

    /// Greedy longest-match of one lower-cased word; if some part has no piece, the unknown
    /// token or nothing.
    fn word(&self, word: &str, out: &mut Vec<(u32, bool)>) {
        if word.is_empty() {
            return;
        }
        if word.chars().count() > MAX_WORD_CHARS {
            out.extend(self.unknown.map(|id| (id, false)));
            return;
        }
        let mark = out.len();
        let mut piece = String::with_capacity(word.len() + 2);
        let mut start = 0;
        while start < word.len() {
            let rest = &word[start..];
            let mut found = None;
            let mut ends: Vec<usize> = rest
                .char_indices()
                .map(|(i, _)| i)
                .skip(1)
                .take(self.longest)
                .collect();
            if ends.len() < self.longest {
                ends.push(rest.len());
            }
            for &end in ends.iter().rev() {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.push_str(&rest[..end]);
                if let Some(&id) = self.ids.get(piece.as_str()) {
                    found = Some((id, end));
                    break;
                }
            }
            match found {
                Some((id, end)) => {
                    out.push((id, false));
                    start += end;
                }
                None => {
                    out.truncate(mark);
                    out.extend(self.unknown.map(|id| (id, false)));
                    return;
                }
            }
        }
    }
}

/// BERT's CJK ranges: each such character is a token of its own.
fn is_cjk_char(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B820..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

/// Punctuation splits words: all ASCII non-alphanumerics, and other non-alphanumeric
/// visible characters (a close stand-in for Unicode's P categories without tables).
fn is_punct(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_punctuation()
    } else {
        !c.is_alphanumeric() && !c.is_whitespace() && !is_combining(c)
    }
}

/// Combining diacritical marks, which BERT drops when stripping accents.
fn is_combining(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F)
}

/// The base letter of a common accented Latin lower-case letter (BERT strips accents by
/// NFD decomposition; Latin-1 and the usual Extended-A letters cover real tool text).
fn strip_accent(c: char) -> char {
    match c {
        'à'..='å' | 'ā' | 'ă' | 'ą' => 'a',
        'ç' | 'ć' | 'č' => 'c',
        'è'..='ë' | 'ē' | 'ė' | 'ę' | 'ě' => 'e',
        'ì'..='ï' | 'ī' | 'į' => 'i',
        'ñ' | 'ń' | 'ň' => 'n',
        'ò'..='ö' | 'ō' | 'ő' => 'o',
        'ù'..='ü' | 'ū' | 'ů' | 'ű' => 'u',
        'ý' | 'ÿ' => 'y',
        'ś' | 'š' => 's',
        'ź' | 'ż' | 'ž' => 'z',
        'ř' => 'r',
        'ď' => 'd',
        'ť' => 't',
        'ğ' => 'g',
        _ => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VOCAB: &str = "[UNK]\nthe\nun\n##aff\n##able\nrun\n##ning\n,\n知\n乎\ncafe\n";

    fn ids(text: &str) -> Vec<u32> {
        let wp = WordPiece::new(VOCAB);
        let mut out = Vec::new();
        wp.tokenize(text, &mut out);
        out.into_iter().map(|(id, _)| id).collect()
    }

    #[test]
    fn greedy_longest_match_with_continuations() {
        assert_eq!(ids("unaffable"), [2, 3, 4]);
        assert_eq!(ids("The RUNNING"), [1, 5, 6]);
    }

    #[test]
    fn punctuation_and_cjk_are_single_tokens() {
        assert_eq!(ids("the,run"), [1, 7, 5]);
        assert_eq!(ids("知乎the"), [8, 9, 1]);
        let wp = WordPiece::new(VOCAB);
        let mut out = Vec::new();
        wp.tokenize("知the", &mut out);
        assert_eq!(out, [(8, true), (1, false)]);
    }

    #[test]
    fn unknown_words_are_skipped_and_accents_stripped() {
        assert_eq!(ids("the unxyz run"), [1, 5]);
        assert_eq!(ids("Café"), [10]);
        assert_eq!(ids(&"a".repeat(200)), Vec::<u32>::new());
    }

    #[test]
    fn pieces_longer_than_the_longest_token_are_not_tried_and_limits_stop_early() {
        let wp = WordPiece::new("ab\n##ab\n##c\n");
        assert_eq!(wp.longest, 2);
        let mut out = Vec::new();
        wp.tokenize("ababc", &mut out);
        assert_eq!(out, [(0, false), (1, false), (2, false)]);
        let mut out = Vec::new();
        wp.tokenize_at_most(&"ab ".repeat(1_000_000), 5, &mut out);
        assert_eq!(out.len(), 5);
    }

    #[test]
    fn unknown_token_stands_for_uncuttable_words_when_set() {
        let wp = WordPiece::new(VOCAB).with_unknown("[UNK]");
        let mut out = Vec::new();
        wp.tokenize("the unxyz ☃ run", &mut out);
        let ids: Vec<u32> = out.iter().map(|&(id, _)| id).collect();
        assert_eq!(ids, [1, 0, 0, 5]);
        assert_eq!(WordPiece::new(VOCAB).with_unknown("[NOPE]").unknown, None);
    }
}

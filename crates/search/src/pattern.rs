//! Regex mode: a query written as a regular expression (`^github_.*issue`) is matched
//! case-insensitively over tool names and descriptions, name matches first.

use regex::{Regex, RegexBuilder};

use super::Hit;

/// Bounds the compiled program so a hostile pattern cannot eat memory; matching itself is
/// linear-time in the `regex` crate.
const SIZE_LIMIT: usize = 1 << 20;

/// A compiled query, matched against lower-cased text (a case-sensitive scan of folded
/// text is about twice as fast as a case-insensitive one). It is multi-line, so `^` and `$`
/// match at the ends of each text of a [`Haystack`] (texts hold no newlines, so on one text
/// it means the same as plain).
pub(crate) struct Pattern(Regex);

/// Compiles `query` if it reads as a regular expression rather than words: it must use a
/// regex operator (sentence punctuation such as a final `?` or `.` does not count) and compile.
pub(crate) fn compile(query: &str) -> Option<Pattern> {
    if !looks_like_regex(query) {
        return None;
    }
    RegexBuilder::new(&fold_literals(query))
        .multi_line(true)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(SIZE_LIMIT)
        .build()
        .ok()
        .map(Pattern)
}

/// Lower-cases a pattern's literal characters, leaving escapes (`\S`, `\W`, `\P{..}`) and
/// flag groups (`(?U)`) alone, so it matches lower-cased text as `(?i)` would the original.
fn fold_literals(query: &str) -> String {
    let mut out = String::with_capacity(query.len());
    let mut chars = query.chars().peekable();
    let mut in_flags = false;
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.push(c);
            if let Some(next) = chars.next() {
                out.push(next);
                // `\p{Greek}`: the class name is copied as written.
                if matches!(next, 'p' | 'P') && chars.peek() == Some(&'{') {
                    for c in chars.by_ref() {
                        out.push(c);
                        if c == '}' {
                            break;
                        }
                    }
                }
            }
        } else if in_flags {
            in_flags = !matches!(c, ')' | ':');
            out.push(c);
        } else if c == '(' && chars.peek() == Some(&'?') {
            in_flags = true;
            out.push(c);
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

fn looks_like_regex(query: &str) -> bool {
    let chars: Vec<char> = query.chars().collect();
    chars.iter().enumerate().any(|(i, &c)| {
        let next = chars.get(i + 1).copied();
        match c {
            '^' | '$' | '*' | '+' | '[' | ']' | '{' | '}' | '|' | '\\' | '(' | ')' => true,
            // `.` only as a wildcard before a repetition (`.*`, `.+`, `.?`, `.{2}`).
            '.' => matches!(next, Some('*' | '+' | '?' | '{')),
            // `?` only inside a pattern, not ending a question.
            '?' => next.is_some_and(|n| !n.is_whitespace()),
            _ => false,
        }
    })
}

/// Many short texts, lower-cased and joined by newlines (newlines inside them become
/// spaces), so one
/// regex scan with its literal prefilters covers the catalog instead of one call per text.
#[derive(Debug, Default)]
pub(crate) struct Haystack {
    text: String,
    starts: Vec<usize>,
}

impl Haystack {
    /// Joins `texts` in order.
    pub(super) fn new<'a>(texts: impl Iterator<Item = &'a str>) -> Self {
        let mut out = Self::default();
        for t in texts {
            out.starts.push(out.text.len());
            out.text.extend(
                t.to_lowercase()
                    .chars()
                    .map(|c| if c == '\n' { ' ' } else { c }),
            );
            out.text.push('\n');
        }
        out
    }

    /// Text `i`, without its separator.
    fn entry(&self, i: usize) -> &str {
        let Some(&start) = self.starts.get(i) else {
            return "";
        };
        let next = self.starts.get(i + 1).copied().unwrap_or(self.text.len());
        self.text
            .get(start..next.saturating_sub(1).max(start))
            .unwrap_or("")
    }

    /// Adds `points` to `scores[i]` for every text `i` the pattern matches.
    fn score(&self, pattern: &Pattern, points: f32, scores: &mut [f32]) {
        let mut at = 0;
        while at < self.text.len() {
            // The earliest-ending match after `at` ends in the first text that can match on
            // its own (a line-wise match may run across texts, so that text is checked alone).
            let Some(end) = pattern.0.shortest_match_at(&self.text, at) else {
                break;
            };
            let last = if end > at { end - 1 } else { at };
            let i = self
                .starts
                .partition_point(|&s| s <= last)
                .saturating_sub(1);
            if pattern.0.is_match(self.entry(i))
                && let Some(s) = scores.get_mut(i)
            {
                *s += points;
            }
            at = self.starts.get(i + 1).copied().unwrap_or(self.text.len());
        }
    }
}

/// Scores 2 for a name match and 1 for a description match; best first, then catalog order.
pub(crate) fn search(
    pattern: &Pattern,
    names: &Haystack,
    descriptions: &Haystack,
    limit: usize,
    keep: &dyn Fn(usize) -> bool,
) -> Vec<Hit> {
    let mut scores = vec![0f32; names.starts.len()];
    names.score(pattern, 2.0, &mut scores);
    descriptions.score(pattern, 1.0, &mut scores);
    let mut hits: Vec<Hit> = scores
        .iter()
        .enumerate()
        .filter(|&(i, &score)| score > 0.0 && keep(i))
        .map(|(index, &score)| Hit { index, score })
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
    hits.truncate(limit);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_are_not_patterns() {
        assert!(compile("What time is it in Tokyo?").is_none());
        assert!(compile("Open https://news.ycombinator.com in the browser.").is_none());
        assert!(compile("moment.js alternatives").is_none());
        assert!(compile("^github_.*issue").is_some());
        assert!(compile("get_(stock|crypto)_price").is_some());
    }

    #[test]
    fn matches_never_run_across_texts() {
        let hay = Haystack::new(["get_issue", "call\nme", "x"].into_iter());
        let scores = |q: &str| {
            let mut s = vec![0.0; 3];
            hay.score(&compile(q).unwrap(), 1.0, &mut s);
            s
        };
        assert_eq!(scores("issue\\s*call"), [0.0, 0.0, 0.0]);
        assert_eq!(scores("^(call|x)"), [0.0, 1.0, 1.0]);
        assert_eq!(scores("^ME$|ISSUE$"), [1.0, 0.0, 0.0]);
        assert_eq!(scores("q*"), [1.0, 1.0, 1.0]);
    }

    #[test]
    fn folding_keeps_escapes_and_flags() {
        assert_eq!(
            fold_literals(r"^GitHub_\S+\W(?U)[A-Z]\P{Lu}"),
            r"^github_\S+\W(?U)[a-z]\P{Lu}"
        );
        let hay = Haystack::new(["Get_Stock", "x"].into_iter());
        let mut s = vec![0.0; 2];
        hay.score(&compile(r"^GET_[A-Z]+$").unwrap(), 1.0, &mut s);
        assert_eq!(s, [1.0, 0.0]);
    }

    #[test]
    fn invalid_patterns_do_not_compile() {
        assert!(compile("get_(stock").is_none());
        assert!(compile("a{99999}{99999}").is_none());
    }
}

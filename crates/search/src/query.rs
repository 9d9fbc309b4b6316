//! Query understanding before ranking: URLs and file paths in a query say what kind of
//! argument the wanted tool takes (a URL, a file, a directory) more than their random
//! parts do, so they become that concept plus down-weighted parts.

use super::tokenize::{Token, Tokenizer};

/// Weight of the words inside a URL or path (host, directories, file stem).
const PART_WEIGHT: f32 = 0.5;

/// The query's terms, each with a weight multiplier, in query order.
pub(crate) fn weighted_tokens(tokenizer: &Tokenizer, query: &str) -> Vec<(Token, f32)> {
    let mut out = Vec::new();
    let mut plain = String::new();
    let flush = |plain: &mut String, out: &mut Vec<(Token, f32)>| {
        out.extend(tokenizer.tokens(plain).into_iter().map(|t| (t, 1.0)));
        plain.clear();
    };
    for chunk in query.split_whitespace() {
        let trimmed = chunk.trim_matches(|c: char| {
            matches!(
                c,
                '"' | '\'' | '`' | '(' | ')' | '<' | '>' | ',' | ';' | '，' | '。'
            )
        });
        let trimmed = trimmed.trim_end_matches(['.', '?', '!', ':']);
        let concept = if let Some(rest) = url_rest(trimmed) {
            flush(&mut plain, &mut out);
            Some(("url", rest, None))
        } else if is_path(trimmed) {
            flush(&mut plain, &mut out);
            let file = trimmed.rsplit(['/', '\\']).next().unwrap_or("");
            match file.rsplit_once('.') {
                Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => Some((
                    "file path",
                    &trimmed[..trimmed.len() - ext.len() - 1],
                    Some(ext),
                )),
                _ => Some(("directory path", trimmed, None)),
            }
        } else {
            None
        };
        match concept {
            Some((words, parts, ext)) => {
                out.extend(tokenizer.tokens(words).into_iter().map(|t| (t, 1.0)));
                out.extend(
                    tokenizer
                        .tokens(parts)
                        .into_iter()
                        .map(|t| (t, PART_WEIGHT)),
                );
                if let Some(ext) = ext {
                    out.extend(tokenizer.tokens(ext).into_iter().map(|t| (t, 1.0)));
                }
            }
            None => {
                plain.push_str(chunk);
                plain.push(' ');
            }
        }
    }
    flush(&mut plain, &mut out);
    out
}

/// For a URL, the part after the scheme and `www.`; `None` for anything else.
fn url_rest(chunk: &str) -> Option<&str> {
    let rest = match chunk.split_once("://") {
        Some((scheme, rest))
            if !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphabetic()) =>
        {
            rest
        }
        _ if chunk.starts_with("www.") => chunk,
        _ => return None,
    };
    Some(rest.strip_prefix("www.").unwrap_or(rest))
}

/// Whether a chunk is a file-system path: it has a letter (so `10/06/2024` is a date) and
/// is absolute, home- or dot-relative, a drive path, or at least two separators deep.
fn is_path(chunk: &str) -> bool {
    let mut chars = chunk.chars();
    let drive = matches!(
        (chars.next(), chars.next(), chars.next()),
        (Some(d), Some(':'), Some('\\' | '/')) if d.is_ascii_alphabetic()
    );
    chunk.chars().any(|c| c.is_alphabetic())
        && (chunk.starts_with('/')
            || chunk.starts_with("~/")
            || chunk.starts_with("./")
            || chunk.starts_with("../")
            || drive
            || chunk.matches('/').count() >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(q: &str) -> Vec<(String, f32)> {
        weighted_tokens(&Tokenizer::new(), q)
            .into_iter()
            .map(|(t, w)| (t.text, w))
            .collect()
    }

    #[test]
    fn urls_become_the_url_concept() {
        let got = terms("open https://www.youtube.com/watch in browser");
        assert_eq!(got[0], ("open".to_string(), 1.0));
        assert_eq!(got[1], ("url".to_string(), 1.0));
        assert!(got.contains(&("youtub".to_string(), PART_WEIGHT)));
        assert!(!got.iter().any(|(t, _)| t == "https" || t == "www"));
        assert_eq!(got.last(), Some(&("browser".to_string(), 1.0)));
    }

    #[test]
    fn paths_become_file_or_directory() {
        let got = terms("save to /root/markdown/report.md.");
        assert!(got.contains(&("file".to_string(), 1.0)));
        assert!(got.contains(&("md".to_string(), 1.0)));
        assert!(got.contains(&("report".to_string(), PART_WEIGHT)));
        let got = terms("list /root/pdf");
        assert!(got.contains(&("directori".to_string(), 1.0)));
        let got = terms("moment.js and sitemap.xml, feature/login on 10/06/2024");
        assert!(got.iter().all(|(_, w)| *w == 1.0));
    }
}

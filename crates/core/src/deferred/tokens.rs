//! Token counts. Exact ones use the o200k tokenizer (GPT-4o and later), which takes ~200 ms
//! and ~45 MB to load: only `antler tools stats` and the next call in the chat's `/context`
//! pay that. Everything a run decides or reports on its own (`enabled: auto`,
//! `listing: auto`, the context ledger) uses [`estimate_tokens`], which needs nothing
//! loaded.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

use crate::protocol::Counting;
use crate::tools::ToolInfo;

/// The tokenizer could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("cannot load the o200k tokenizer: {0}")]
pub struct TokenizerError(String);

static BPE: OnceLock<Result<CoreBPE, String>> = OnceLock::new();

fn tokenizer() -> Result<&'static CoreBPE, TokenizerError> {
    BPE.get_or_init(|| tiktoken_rs::o200k_base().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| TokenizerError(e.clone()))
}

/// The number of o200k tokens of `text`. The tokenizer is loaded once, on first use.
pub fn count_tokens(text: &str) -> Result<usize, TokenizerError> {
    Ok(tokenizer()?.encode_ordinary(text).len())
}

/// The tokens of `text`, counted as `counting` says.
pub fn count_with(counting: Counting, text: &str) -> Result<usize, TokenizerError> {
    match counting {
        Counting::O200k => count_tokens(text),
        Counting::Estimate => Ok(estimate_tokens(text)),
    }
}

/// Tokens of binding `tools`: their function schemas as the JSON array a provider receives
/// in `tools`. One definition for the `auto` decision, `tools stats` and the context
/// ledger.
pub fn schemas_with<'a>(
    counting: Counting,
    tools: impl IntoIterator<Item = &'a ToolInfo>,
) -> Result<usize, TokenizerError> {
    count_with(counting, &schemas_text(tools))
}

/// o200k tokens of binding `tools` (see [`schemas_with`]).
pub fn schemas_tokens<'a>(
    tools: impl IntoIterator<Item = &'a ToolInfo>,
) -> Result<usize, TokenizerError> {
    schemas_with(Counting::O200k, tools)
}

/// The `tools` array a provider receives for `tools`, as text: each tool as
/// [`super::function_schema`] writes it, serialized from borrowed parts (the `auto` decision runs
/// on every start, and copying every schema into a JSON value first cost more than the
/// estimate itself).
fn schemas_text<'a>(tools: impl IntoIterator<Item = &'a ToolInfo>) -> String {
    #[derive(serde::Serialize)]
    struct Schema<'a> {
        r#type: &'static str,
        function: Function<'a>,
    }
    #[derive(serde::Serialize)]
    struct Function<'a> {
        name: &'a str,
        description: &'a str,
        parameters: &'a serde_json::Value,
    }
    let schemas: Vec<Schema<'a>> = tools
        .into_iter()
        .map(|info| Schema {
            r#type: "function",
            function: Function {
                name: &info.name,
                description: &info.description,
                parameters: &info.parameters,
            },
        })
        .collect();
    // Serializing borrowed strings and values into a string cannot fail.
    serde_json::to_string(&schemas).unwrap_or_default()
}

/// The estimated tokens of binding `tools` (see [`schemas_with`]).
pub fn estimate_schemas_tokens<'a>(tools: impl IntoIterator<Item = &'a ToolInfo>) -> usize {
    estimate_tokens(&schemas_text(tools))
}

/// Weights of each kind of piece [`estimate_tokens`] splits text into, in tokens: a word.
const WORD: f64 = 1.2;
/// A word right after punctuation (`_request`, `.org`, `"type`): identifiers split more.
const WORD_AFTER_PUNCTUATION: f64 = 1.64;
/// A long word is at least one token per this many letters.
const LETTERS_PER_TOKEN: f64 = 8.0;
/// One letter of a wide script (CJK and after), counted one by one.
const WIDE_LETTER: f64 = 0.8;
/// A group of up to three digits.
const DIGITS: f64 = 1.83;
/// A run of punctuation (one mark before a word is part of the word).
const PUNCTUATION: f64 = 0.7;
/// A long run of ASCII punctuation is at least one token per this many marks; any other
/// symbol (an emoji, an invisible or bidi character) is a token of its own, so that text a
/// server fills with them cannot pass for small.
const MARKS_PER_TOKEN: f64 = 6.0;
/// Whitespace, unless it is one space before the next piece.
const SPACE: f64 = 0.7;
/// A long run of whitespace is at least one token per this many characters.
const SPACES_PER_TOKEN: f64 = 16.0;
/// The estimate is at least one token per this many bytes of text.
const BYTES_PER_TOKEN: usize = 6;
/// The first letter counted as [`WIDE_LETTER`].
const FIRST_WIDE: char = '\u{2E80}';

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Letter,
    Digit,
    Space,
    Punctuation,
}

impl Kind {
    fn of(c: char) -> Self {
        if c.is_whitespace() {
            Self::Space
        } else if c.is_alphabetic() {
            Self::Letter
        } else if c.is_numeric() {
            Self::Digit
        } else {
            Self::Punctuation
        }
    }
}

/// About how many o200k tokens `text` is, in one pass that loads and allocates nothing.
///
/// The text is split roughly as o200k's pre-tokenizer splits it (words, a camelCase hump
/// starting a new one; digits in threes; runs of punctuation; whitespace), and each piece
/// is weighed by its kind. The weights were fitted against o200k on the LiveMCPBench
/// catalog (schemas, descriptions, names) and on Rust and Markdown text; `cargo bench
/// --bench listing_tokens` reports the error on that catalog and the synthetic
/// 10,000-tool one (a few percent, over rather than under).
pub fn estimate_tokens(text: &str) -> usize {
    let mut chars = text.chars().peekable();
    let mut total = 0.0;
    let mut before = None;
    while let Some(first) = chars.next() {
        let kind = Kind::of(first);
        let (mut len, mut last) = (1_usize, first);
        let mut wide = usize::from(first >= FIRST_WIDE);
        let mut non_ascii = usize::from(!first.is_ascii());
        while let Some(&c) = chars.peek() {
            let hump = kind == Kind::Letter && c.is_uppercase() && last.is_lowercase();
            if Kind::of(c) != kind || hump {
                break;
            }
            len += 1;
            wide += usize::from(c >= FIRST_WIDE);
            non_ascii += usize::from(!c.is_ascii());
            last = c;
            chars.next();
        }
        let next = chars.peek().map(|&c| Kind::of(c));
        total += match kind {
            Kind::Letter => {
                let narrow = len - wide;
                let word = match before {
                    Some(Kind::Punctuation) => WORD_AFTER_PUNCTUATION,
                    _ => WORD,
                };
                let narrow = match narrow {
                    0 => 0.0,
                    n => word.max(n as f64 / LETTERS_PER_TOKEN),
                };
                wide as f64 * WIDE_LETTER + narrow
            }
            Kind::Digit => len.div_ceil(3) as f64 * DIGITS,
            Kind::Punctuation if len == 1 && next == Some(Kind::Letter) => 0.0,
            Kind::Punctuation => {
                let ascii = (len - non_ascii) as f64 / MARKS_PER_TOKEN;
                PUNCTUATION.max(ascii + non_ascii as f64)
            }
            Kind::Space if len == 1 && first == ' ' && next.is_some() => 0.0,
            Kind::Space => SPACE.max(len as f64 / SPACES_PER_TOKEN),
        };
        before = Some(kind);
    }
    // A token is at least one byte: whatever the pieces, the estimate is never more than
    // BYTES_PER_TOKEN times under.
    (total.round() as usize).max(text.len() / BYTES_PER_TOKEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schemas_text_is_what_a_provider_receives() {
        let tools = crate::deferred::testing::mcp_tools(&[
            ("srv", "get", "Gets a \"thing\" — quickly."),
            ("srv", "put", ""),
        ]);
        let infos: Vec<&ToolInfo> = tools.iter().map(|t| t.info()).collect();
        let expected: Vec<_> = infos
            .iter()
            .map(|i| crate::deferred::function_schema(i))
            .collect();
        let expected = serde_json::Value::Array(expected).to_string();
        assert_eq!(schemas_text(infos.iter().copied()), expected);
        assert_eq!(schemas_text(std::iter::empty()), "[]");
    }

    #[test]
    fn counts_o200k_tokens() {
        assert_eq!(count_tokens("").unwrap(), 0);
        assert_eq!(count_tokens("hello world").unwrap(), 2);
        assert!(count_tokens("知乎热榜").unwrap() >= 1);
    }

    #[test]
    fn estimates_are_close_to_o200k_on_every_kind_of_text() {
        let texts = [
            "The quick brown fox jumps over the lazy dog, twice; then it rests.",
            r#"{"type":"function","function":{"name":"github_create_issue","description":"Open an issue in a repository.","parameters":{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"title":{"type":"string"}},"required":["owner","repo","title"]}}}"#,
            "fn estimate(text: &str) -> usize {\n    text.chars().filter(|c| c.is_alphabetic()).count()\n}\n",
            "使用必应搜索指定的关键词，并返回搜索结果列表",
            "getPullRequest listIssues create_issue 2026-12-02 12:34:56",
        ];
        for text in texts {
            let (exact, estimate) = (count_tokens(text).unwrap(), estimate_tokens(text));
            let error = (estimate as f64 - exact as f64).abs() / exact as f64;
            assert!(error < 0.5, "{estimate} for {exact}: {text}");
        }
        assert_eq!(estimate_tokens(""), 0);
    }

    /// Text a hostile server fills with one long word (of one script or two), invisible
    /// characters, wide spaces, emoji or punctuation is not estimated as small: each is
    /// within a few times o200k's count, never a thousand times under.
    #[test]
    fn padding_cannot_pass_for_small() {
        let cases = [
            ("a".repeat(1000), 125),
            (format!("中{}", "a".repeat(1000)), 126),
            ("\u{3000}".repeat(1000), 63),
            ("\u{200B}".repeat(1000), 250),
            ("\u{1F600}".repeat(1000), 1000),
            ("!@#$%^&*()".repeat(100), 700),
            ("=".repeat(1000), 16),
            ("\n".repeat(1000), 63),
        ];
        for (text, o200k) in cases {
            let (exact, estimate) = (count_tokens(&text).unwrap(), estimate_tokens(&text));
            assert_eq!(exact, o200k, "{text:?}");
            assert!(
                estimate * 6 >= exact && estimate <= exact * 16,
                "{estimate} for {exact}: {:?}",
                text.chars().take(5).collect::<String>()
            );
        }
    }
}

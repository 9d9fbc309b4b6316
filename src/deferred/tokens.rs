//! Token counts with the o200k tokenizer (GPT-4o and later), for the `auto` deferral
//! decision and `antler tools stats`.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

use super::hash::function_schema;
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

/// Whether the tokenizer is loaded already (so counting costs no load).
pub fn tokenizer_loaded() -> bool {
    BPE.get().is_some_and(Result::is_ok)
}

/// The number of o200k tokens of `text`. The tokenizer is loaded once, on first use.
pub fn count_tokens(text: &str) -> Result<usize, TokenizerError> {
    Ok(tokenizer()?.encode_ordinary(text).len())
}

/// Tokens of binding `tools`: their function schemas as the JSON array a provider receives
/// in `tools`. One definition for the `auto` decision, `tools stats` and the context ledger.
pub fn schemas_tokens<'a>(
    tools: impl IntoIterator<Item = &'a ToolInfo>,
) -> Result<usize, TokenizerError> {
    let schemas: Vec<_> = tools.into_iter().map(function_schema).collect();
    count_tokens(&serde_json::Value::Array(schemas).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_o200k_tokens() {
        assert_eq!(count_tokens("").unwrap(), 0);
        assert_eq!(count_tokens("hello world").unwrap(), 2);
        assert!(count_tokens("知乎热榜").unwrap() >= 1);
    }
}

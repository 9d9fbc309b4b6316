//! Token counts with the o200k tokenizer (GPT-4o and later), for the `auto` deferral
//! decision and `antler tools stats`.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

/// The tokenizer could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("cannot load the o200k tokenizer: {0}")]
pub struct TokenizerError(String);

fn tokenizer() -> Result<&'static CoreBPE, TokenizerError> {
    static BPE: OnceLock<Result<CoreBPE, String>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| TokenizerError(e.clone()))
}

/// The number of o200k tokens of `text`. The tokenizer is loaded once, on first use.
pub fn count_tokens(text: &str) -> Result<usize, TokenizerError> {
    Ok(tokenizer()?.encode_ordinary(text).len())
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

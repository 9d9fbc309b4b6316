//! A prompt cache the way hosted providers report one: the request is serialized tools
//! first, then messages, and the part of it that starts like an earlier request (the
//! longest common prefix with any of them) counts as cached. Tokens are estimated as one
//! per 4 bytes, the same rule for the prompt and the cached part, so shares are exact for
//! this model of a cache.

use serde_json::Value;

/// The requests seen so far, serialized.
#[derive(Default)]
pub(crate) struct PromptCache {
    seen: Vec<String>,
}

/// What one request cost: its prompt tokens and how many of them were cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CacheUse {
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
}

impl PromptCache {
    /// The cache use of `body`, which is then remembered.
    pub(crate) fn lookup(&mut self, body: &Value) -> CacheUse {
        let text = serialize(body);
        let common = self
            .seen
            .iter()
            .map(|earlier| common_prefix(earlier, &text))
            .max()
            .unwrap_or(0);
        let use_ = CacheUse {
            prompt_tokens: (text.len() as u64).div_ceil(4),
            cached_tokens: common as u64 / 4,
        };
        self.seen.push(text);
        use_
    }
}

/// The request as a provider renders it: `tools`, then `messages`.
pub(crate) fn serialize(body: &Value) -> String {
    format!("{}{}", body["tools"], body["messages"])
}

/// How many leading bytes `a` and `b` share.
fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// `events` with the usage chunk's prompt figures replaced by `use_`.
pub(crate) fn with_usage(events: Vec<String>, use_: CacheUse) -> Vec<String> {
    events
        .into_iter()
        .map(|event| {
            let Ok(mut chunk) = serde_json::from_str::<Value>(&event) else {
                return event;
            };
            let usage = &mut chunk["usage"];
            if !usage.is_object() {
                return event;
            }
            let completion = usage["completion_tokens"].as_u64().unwrap_or(0);
            usage["prompt_tokens"] = use_.prompt_tokens.into();
            usage["total_tokens"] = (use_.prompt_tokens + completion).into();
            usage["prompt_tokens_details"]["cached_tokens"] = use_.cached_tokens.into();
            chunk.to_string()
        })
        .collect()
}

//! Redaction: every value antler loaded as a secret (API keys, MCP header values, what
//! secret-named variables expanded to) is replaced by `[redacted]` in every tool result,
//! before the result reaches the model, the events, the store or a saved output. A tool
//! that prints the environment or a config file then leaks nothing it could send on.

use std::borrow::Cow;
use std::sync::Arc;

use crate::agent::middleware::Layer;
use crate::agent::state::ThreadState;
use crate::tools::{PreparedCall, ToolOutput};

/// What a secret becomes.
pub(crate) const REDACTED: &str = "[redacted]";
/// Values shorter than this are not redacted: replacing every `1` or `true` would mangle
/// results and protect nothing.
pub(crate) const MIN_SECRET_CHARS: usize = 6;

/// The secret values to redact, longest first (so that a key containing another is
/// replaced whole).
#[derive(Debug, Clone, Default)]
pub struct Redact {
    secrets: Arc<Vec<String>>,
}

impl Redact {
    /// Redacts `values` (duplicates and too-short ones dropped). For `Bearer <token>` and
    /// `Basic <token>` header values the token alone is redacted too.
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut secrets: Vec<String> = Vec::new();
        for value in values {
            let value = value.trim().to_string();
            let token = value
                .split_once(' ')
                .filter(|(scheme, _)| {
                    scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("basic")
                })
                .map(|(_, token)| token.trim().to_string());
            secrets.extend(token);
            secrets.push(value);
        }
        secrets.retain(|s| s.chars().count() >= MIN_SECRET_CHARS);
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Self {
            secrets: Arc::new(secrets),
        }
    }

    /// Whether there is anything to redact.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every secret replaced (borrowed when there was none: most results).
    pub fn apply<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for secret in self.secrets.iter() {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        out
    }
}

impl Layer for Redact {
    fn name(&self) -> &'static str {
        "redact"
    }

    fn after_tool(&self, _state: &mut ThreadState, _call: &PreparedCall, output: &mut ToolOutput) {
        if let Cow::Owned(redacted) = self.apply(&output.content) {
            output.content = redacted;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::middleware::Chain;
    use crate::protocol::ToolCall;

    #[test]
    fn secrets_are_replaced_longest_first_and_short_values_left_alone() {
        let redact = Redact::new([
            String::from("sk-test-secret-4242"),
            String::from("Bearer ghp_abcdef123"),
            String::from("sk-test"),
            String::from("true"),
        ]);
        let text = "key=sk-test-secret-4242 auth=ghp_abcdef123 flag=true short=sk-test!";
        assert_eq!(
            redact.apply(text),
            "key=[redacted] auth=[redacted] flag=true short=[redacted]!"
        );
        assert!(Redact::new([String::from("12345")]).is_empty());
    }

    #[test]
    fn the_layer_redacts_every_tool_result() {
        let chain = Chain::new().with(Redact::new([String::from("hunter2-secret")]));
        let call = ToolCall {
            id: "c".into(),
            name: "bash".into(),
            arguments: "{}".into(),
        };
        let out = chain.end_tool_call(
            &mut ThreadState::default(),
            &(&call).into(),
            1,
            ToolOutput::error("PASSWORD=hunter2-secret"),
        );
        assert_eq!(out.content, "PASSWORD=[redacted]");
        assert!(out.is_error);
    }
}

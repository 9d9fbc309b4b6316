//! Tool errors: every way a tool call can go wrong becomes a result the model can read and
//! act on — an unknown name, arguments that are not a JSON object, a tool that fails
//! without saying why. (A tool that panics is caught where it runs: see
//! [`crate::agent::middleware::execute`].)

use std::collections::BTreeSet;

use crate::agent::middleware::Layer;
use crate::agent::state::ThreadState;
use crate::tools::{PreparedCall, ToolOutput};

/// How many similar names an unknown-tool error suggests.
const SUGGESTIONS: usize = 3;

/// Answers calls to unknown tools and calls with bad arguments before anything runs, and
/// makes sure a failed result always says what failed.
pub(crate) struct ToolErrors {
    known: BTreeSet<String>,
}

impl ToolErrors {
    /// The layer for a toolset whose callable names (bound and deferred) are `known`.
    pub(crate) fn new(known: impl IntoIterator<Item = String>) -> Self {
        Self {
            known: known.into_iter().collect(),
        }
    }

    fn unknown(&self, name: &str) -> String {
        let wanted = name.to_lowercase();
        let similar: Vec<&str> = self
            .known
            .iter()
            .filter(|k| {
                let k = k.to_lowercase();
                !wanted.is_empty() && (k.contains(&wanted) || wanted.contains(&k))
            })
            .take(SUGGESTIONS)
            .map(String::as_str)
            .collect();
        let mut message = format!("Error: there is no tool named '{name}'.");
        if !similar.is_empty() {
            message.push_str(&format!(" Did you mean: {}?", similar.join(", ")));
        }
        message.push_str(" Call only tools you were given or found with tool_search.");
        message
    }
}

impl Layer for ToolErrors {
    fn name(&self) -> &'static str {
        "tool_errors"
    }

    fn before_tool(&self, _state: &mut ThreadState, call: &PreparedCall) -> Option<ToolOutput> {
        if !self.known.contains(&call.name) {
            return Some(ToolOutput::error(self.unknown(&call.name)));
        }
        call.input()
            .err()
            .map(|message| ToolOutput::error(format!("Error: {}: {message}", call.name)))
    }

    fn after_tool(&self, _state: &mut ThreadState, call: &PreparedCall, output: &mut ToolOutput) {
        if output.is_error && output.content.trim().is_empty() {
            output.content = format!(
                "Error: the tool '{}' failed without saying why. Try different arguments or \
                 another tool.",
                call.name
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::middleware::{Chain, ToolStep};
    use crate::protocol::ToolCall;

    fn layer() -> Chain {
        Chain::new().with(ToolErrors::new(
            ["github_get_file", "github_list_issues", "tool_search"].map(String::from),
        ))
    }

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "1".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    fn answer(chain: &Chain, call: &ToolCall) -> Option<String> {
        match chain.begin_tool_call(&mut ThreadState::default(), &call.into()) {
            ToolStep::Answered { output, .. } => {
                assert!(output.is_error);
                Some(output.content)
            }
            ToolStep::Run => None,
        }
    }

    #[test]
    fn unknown_names_get_suggestions() {
        let chain = layer();
        let text = answer(&chain, &call("get_file", "{}")).unwrap();
        assert_eq!(
            text,
            "Error: there is no tool named 'get_file'. Did you mean: github_get_file? Call \
             only tools you were given or found with tool_search."
        );
        let text = answer(&chain, &call("zzz", "{}")).unwrap();
        assert!(!text.contains("Did you mean"), "{text}");
    }

    #[test]
    fn bad_arguments_are_answered_and_good_ones_run() {
        let chain = layer();
        let text = answer(&chain, &call("github_get_file", "{\"path\": ")).unwrap();
        assert!(text.starts_with("Error: github_get_file: the arguments are not valid JSON"));
        let text = answer(&chain, &call("github_get_file", "\"x\"")).unwrap();
        assert!(text.contains("not a string"), "{text}");
        assert!(answer(&chain, &call("github_get_file", "{\"path\":\"a\"}")).is_none());
        assert!(answer(&chain, &call("github_get_file", "")).is_none());
    }

    #[test]
    fn a_silent_failure_gets_a_message() {
        let chain = layer();
        let out = chain.end_tool_call(
            &mut ThreadState::default(),
            &(&call("github_get_file", "{}")).into(),
            1,
            ToolOutput::error("  "),
        );
        assert!(
            out.content
                .contains("'github_get_file' failed without saying why")
        );
    }
}

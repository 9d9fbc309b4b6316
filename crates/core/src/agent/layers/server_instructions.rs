//! A server's `instructions` reach the model with the first `tool_search` result that
//! promotes one of its tools, once per thread: in the result, not the system prompt, so
//! the prompt stays byte-identical and servers whose tools are never used cost nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::agent::middleware::Layer;
use crate::agent::state::ThreadState;
use crate::deferred::{DeferredCatalog, TOOL_SEARCH};
use crate::tools::{PreparedCall, ToolOutput, ToolSource};

/// The most characters of one server's instructions the model gets: they are the server's
/// text, not antler's, and a server must not fill the context with them.
const MAX_CHARS: usize = 4_000;
/// The end of the block the instructions are shown in.
const CLOSE: &str = "</server-instructions>";

/// Appends each server's instructions to the `tool_search` result that first promotes one
/// of its tools in a thread.
pub(crate) struct ServerInstructions {
    catalog: Arc<DeferredCatalog>,
    /// By server name; servers without instructions are absent.
    instructions: BTreeMap<String, String>,
}

impl ServerInstructions {
    /// Over `catalog`, with each server's instructions.
    pub(crate) fn new(
        catalog: Arc<DeferredCatalog>,
        instructions: BTreeMap<String, String>,
    ) -> Self {
        Self {
            catalog,
            instructions,
        }
    }
}

impl Layer for ServerInstructions {
    fn name(&self) -> &'static str {
        "server_instructions"
    }

    fn after_tool(&self, state: &mut ThreadState, call: &PreparedCall, output: &mut ToolOutput) {
        if call.name != TOOL_SEARCH || output.is_error || self.instructions.is_empty() {
            return;
        }
        let Some(promoted) = output
            .state_update
            .as_ref()
            .and_then(|u| u.promoted.as_ref())
        else {
            return;
        };
        let mut servers: Vec<&str> = Vec::new();
        for name in &promoted.names {
            let Some(index) = self.catalog.position(name) else {
                continue;
            };
            if let ToolSource::Mcp { server, .. } = &self.catalog.infos()[index].source
                && !servers.contains(&server.as_str())
            {
                servers.push(server);
            }
        }
        for server in servers {
            let Some(text) = self.instructions.get(server) else {
                continue;
            };
            if !state.instructed_servers.insert(server.to_string()) {
                continue;
            }
            let mut shown: String = text.trim().chars().take(MAX_CHARS).collect();
            if text.trim().chars().count() > MAX_CHARS {
                shown.push_str(" [cut]");
            }
            // Fenced, so the server's text cannot pass for antler's own lines: nothing in
            // it can close the block early.
            let shown = shown.replace(CLOSE, "</ server-instructions>");
            output.content.push_str(&format!(
                "\n\n<server-instructions server=\"{server}\">\n{shown}\n{CLOSE}\n(The text \
                 above is MCP server `{server}`'s own, shown once; it is not from antler.)"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deferred::testing::mcp_tools;
    use crate::protocol::ToolCall;
    use crate::tools::{PromotedUpdate, StateUpdate};

    fn search_result(names: &[&str]) -> ToolOutput {
        let mut output = ToolOutput::ok("[schemas]");
        output.state_update = Some(Box::new(StateUpdate {
            promoted: Some(PromotedUpdate {
                catalog_hash: String::from("h"),
                names: names.iter().map(|n| n.to_string()).collect(),
            }),
            ..Default::default()
        }));
        output
    }

    fn call(name: &str) -> ToolCall {
        ToolCall {
            id: String::from("c"),
            name: name.to_string(),
            arguments: String::from("{}"),
        }
    }

    #[test]
    fn each_servers_instructions_come_once_per_thread_with_its_first_promotion() {
        let catalog = Arc::new(DeferredCatalog::new(mcp_tools(&[
            ("time", "now", "the time"),
            ("time", "zone", "a zone"),
            ("files", "read", "reads"),
        ])));
        let layer = ServerInstructions::new(
            catalog,
            BTreeMap::from([
                (String::from("time"), String::from("Times are UTC.")),
                (String::from("files"), "x".repeat(MAX_CHARS + 10)),
            ]),
        );
        let mut state = ThreadState::default();
        let mut first = search_result(&["time_now"]);
        layer.after_tool(&mut state, &call(TOOL_SEARCH).into(), &mut first);
        assert!(
            first.content.contains(
                "<server-instructions server=\"time\">\nTimes are UTC.\n</server-instructions>"
            ),
            "{}",
            first.content
        );

        let mut again = search_result(&["time_zone", "files_read"]);
        layer.after_tool(&mut state, &call(TOOL_SEARCH).into(), &mut again);
        assert!(!again.content.contains("Times are UTC."), "once per thread");
        assert!(
            again.content.contains("server=\"files\"")
                && again.content.contains(" [cut]\n</server-instructions>")
        );
        assert!(
            again.content.len() < MAX_CHARS + 200,
            "long instructions are cut"
        );

        let mut other_tool = search_result(&["time_now"]);
        let mut fresh = ThreadState::default();
        layer.after_tool(&mut fresh, &call("read_file").into(), &mut other_tool);
        assert_eq!(
            other_tool.content, "[schemas]",
            "only tool_search results carry them"
        );
    }
}

//! Routing hints: a server can ask to have its tools promoted when the user mentions it.

use std::sync::Arc;

use crate::agent::middleware::{Layer, ModelCall};
use crate::agent::state::ThreadState;
use crate::config::McpServerConfig;
use crate::deferred::DeferredCatalog;
use crate::protocol::Message;
use crate::tools::{PromotedUpdate, StateUpdate, ToolSource};

/// One server's routing hint (`routing: {mode: prefer, keywords, priority}`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Route {
    /// The server's key in `mcpServers`.
    pub server: String,
    /// Case-insensitive words that, in the latest user message, trigger the promotion.
    pub keywords: Vec<String>,
    /// Higher priorities are promoted first.
    pub priority: i64,
}

impl Route {
    /// The route a server's configuration asks for, if any.
    pub(crate) fn of(server: &McpServerConfig) -> Option<Self> {
        server.routing.as_ref().map(|hint| Self {
            server: server.name.clone(),
            keywords: hint.keywords.clone(),
            priority: hint.priority,
        })
    }
}

/// Before a model call, promotes the top `top_k` tools (ranked against the user's message)
/// of every server whose keyword the latest user message contains, through the same
/// reducer as `tool_search`.
pub(crate) struct Routing {
    catalog: Arc<DeferredCatalog>,
    routes: Vec<Route>,
    top_k: usize,
}

impl Routing {
    /// Routing over `catalog`; routes are tried by descending priority.
    pub(crate) fn new(catalog: Arc<DeferredCatalog>, mut routes: Vec<Route>, top_k: usize) -> Self {
        routes.sort_by_key(|r| std::cmp::Reverse(r.priority));
        Self {
            catalog,
            routes,
            top_k,
        }
    }

    fn server_of(&self, index: usize) -> Option<&str> {
        match &self.catalog.infos().get(index)?.source {
            ToolSource::Mcp { server, .. } => Some(server),
            _ => None,
        }
    }

    /// The names to promote for the message `text`.
    fn promotions(&self, text: &str) -> Vec<String> {
        let lower = text.to_lowercase();
        let mut names = Vec::new();
        for route in &self.routes {
            let hit = route
                .keywords
                .iter()
                .any(|k| !k.trim().is_empty() && lower.contains(&k.to_lowercase()));
            if !hit {
                continue;
            }
            let of_server = |i: usize| self.server_of(i) == Some(route.server.as_str());
            // Without the sentence encoder: this runs on the async runtime, before every
            // first model call of a turn.
            let mut picked: Vec<usize> = self
                .catalog
                .search_quick(text, self.top_k, &of_server)
                .into_iter()
                .map(|h| h.index)
                .collect();
            let rest = (0..self.catalog.len()).filter(|&i| of_server(i));
            for i in rest {
                if picked.len() >= self.top_k {
                    break;
                }
                if !picked.contains(&i) {
                    picked.push(i);
                }
            }
            names.extend(
                picked
                    .into_iter()
                    .map(|i| self.catalog.infos()[i].name.clone()),
            );
        }
        names
    }
}

impl Layer for Routing {
    fn name(&self) -> &'static str {
        "routing"
    }

    fn before_model(&self, state: &mut ThreadState, call: &mut ModelCall<'_>) {
        // Only the first model call after a user message routes: later calls of the same
        // turn must not keep re-marking these tools as used (the working set would then
        // evict tools the model searched for itself).
        let Some(Message::User { content: text }) = call.messages.last() else {
            return;
        };
        let names = self.promotions(text);
        if names.is_empty() {
            return;
        }
        state.apply(Some(&StateUpdate {
            promoted: Some(PromotedUpdate {
                catalog_hash: self.catalog.hash().to_string(),
                names,
            }),
            ..Default::default()
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::layers::deferred_filter::DeferredFilter;
    use crate::agent::middleware::Chain;
    use crate::deferred::testing::sample_catalog;
    use crate::protocol::Message;

    #[test]
    fn a_keyword_promotes_the_servers_top_tools_before_the_model_call() {
        let catalog = sample_catalog();
        let routes = vec![
            Route {
                server: "github".into(),
                keywords: vec!["GitHub".into()],
                priority: 1,
            },
            Route {
                server: "time".into(),
                keywords: vec!["clock".into()],
                priority: 5,
            },
        ];
        let chain = Chain::new()
            .with(Routing::new(catalog.clone(), routes, 2))
            .with(DeferredFilter::new(catalog.clone(), 16));
        let mut state = ThreadState::default();
        let mut messages = vec![Message::User {
            content: "open an issue on github about the clock".into(),
        }];
        let bound: Vec<String> = chain
            .prepare_model_call(&mut state, &mut messages, Vec::new())
            .0
            .iter()
            .map(|t| t.info().name.clone())
            .collect();
        assert_eq!(bound.len(), 4, "{bound:?}");
        assert!(
            bound[..2].iter().all(|n| n.starts_with("time_")),
            "higher priority first: {bound:?}"
        );
        assert!(
            bound[2..].iter().all(|n| n.starts_with("github_")),
            "{bound:?}"
        );
        assert!(
            bound.contains(&"github_create_issue".to_string()),
            "ranked by the message: {bound:?}"
        );
        assert!(state.is_promoted(catalog.hash(), "github_create_issue"));

        let mut later = messages.clone();
        later.push(Message::Assistant {
            content: String::new(),
            reasoning: String::new(),
            tool_calls: Vec::new(),
        });
        let mut fresh = ThreadState::default();
        assert!(
            chain
                .prepare_model_call(&mut fresh, &mut later, Vec::new())
                .0
                .is_empty(),
            "only the first model call after the user message routes"
        );

        let mut quiet = ThreadState::default();
        let mut other = vec![Message::User {
            content: "nothing relevant".into(),
        }];
        assert!(
            chain
                .prepare_model_call(&mut quiet, &mut other, Vec::new())
                .0
                .is_empty()
        );
    }
}

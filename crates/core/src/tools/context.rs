//! What a tool call gets besides its arguments: which call it is, when to stop, where its
//! own events go, and what the run it belongs to has already used.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::protocol::{Event, Usage};

/// Where a tool's own events go (a subagent's events, wrapped), for as long as the call.
pub type EventEmitter<'a> = &'a (dyn Fn(Event) + Send + Sync);

/// Where the events of a call outside any run go: nowhere.
const NO_EVENTS: EventEmitter<'static> = &|_| {};

/// The context of one tool call; it lives as long as the call.
#[derive(Clone)]
pub struct ToolContext<'a> {
    /// The call's id, as the model gave it.
    pub call_id: String,
    /// The run's turn the call belongs to, for the events it emits.
    pub turn: u32,
    /// Cancelled when the run is (a child of the run's token): a long call should stop.
    pub cancel: CancellationToken,
    /// Where the call's own events go.
    pub events: EventEmitter<'a>,
    /// What the run has used so far, shared by its calls.
    pub scope: RunScope,
}

impl std::fmt::Debug for ToolContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl ToolContext<'static> {
    /// A call outside any run (a one-off call, a test): nothing cancels it, its events go
    /// nowhere, it has a scope of its own.
    pub fn standalone(call_id: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            turn: 0,
            cancel: CancellationToken::new(),
            events: NO_EVENTS,
            scope: RunScope::default(),
        }
    }
}

/// What one run has used, shared by its tool calls: counted budgets (subagents started)
/// and the tokens its tools spent on models (subagents' calls), which the run adds to its
/// own usage.
#[derive(Debug, Clone, Default)]
pub struct RunScope {
    inner: Arc<Mutex<ScopeState>>,
}

#[derive(Debug, Default)]
struct ScopeState {
    counters: BTreeMap<&'static str, usize>,
    /// By model id.
    usage: BTreeMap<String, Usage>,
    notices: Vec<String>,
    /// The thread the run is on (what hooks get as `session_id`).
    thread_id: String,
    /// A hook ended the run, with its reason.
    stop: Option<String>,
    /// Who is told when something waits for the user (the Notification hooks).
    notify: Option<Arc<dyn Notify>>,
}

/// Tells the user's programs that something waits for the user.
pub trait Notify: Send + Sync + std::fmt::Debug {
    /// `kind`: `permission_prompt` or `elicitation_dialog`; `message`: what waits.
    fn notify<'a>(
        &'a self,
        kind: &'a str,
        message: &'a str,
        thread_id: &'a str,
        events: EventEmitter<'a>,
    ) -> futures::future::BoxFuture<'a, ()>;
}

impl RunScope {
    fn state(&self) -> std::sync::MutexGuard<'_, ScopeState> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes one unit of the budget `name` if fewer than `max` were taken in this run.
    pub fn take(&self, name: &'static str, max: usize) -> bool {
        let mut state = self.state();
        let taken = state.counters.entry(name).or_default();
        if *taken >= max {
            return false;
        }
        *taken += 1;
        true
    }

    /// Adds tokens a tool spent on the model `model`.
    pub fn add_usage(&self, model: &str, usage: &Usage) {
        self.state()
            .usage
            .entry(model.to_string())
            .or_default()
            .add(usage);
    }

    /// The tokens added since the last call, by model, and resets them.
    pub fn take_usage(&self) -> BTreeMap<String, Usage> {
        std::mem::take(&mut self.state().usage)
    }

    /// Adds a notice for the user (not the model), e.g. that a call was refused.
    pub fn add_notice(&self, message: String) {
        self.state().notices.push(message);
    }

    /// The notices added since the last call, and resets them.
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut self.state().notices)
    }

    /// A scope for a run on the thread `id`.
    pub fn for_thread(id: &str) -> Self {
        let scope = Self::default();
        scope.state().thread_id = id.to_string();
        scope
    }

    /// The scope with `notify` told whenever a call waits for the user.
    pub fn with_notify(self, notify: Arc<dyn Notify>) -> Self {
        self.state().notify = Some(notify);
        self
    }

    /// Waits for `answer` (the user's), telling the notifier what waits meanwhile.
    pub async fn waiting<T>(
        &self,
        events: EventEmitter<'_>,
        kind: &str,
        message: &str,
        answer: impl std::future::Future<Output = T>,
    ) -> T {
        let (notify, thread) = {
            let state = self.state();
            (state.notify.clone(), state.thread_id.clone())
        };
        match notify {
            Some(notify) => {
                // The answer never waits for the hooks: once it is in, they are ended.
                let told = notify.notify(kind, message, &thread, events);
                tokio::pin!(answer);
                tokio::select! {
                    biased;
                    answer = &mut answer => answer,
                    () = told => answer.await,
                }
            }
            None => answer.await,
        }
    }

    /// The run's thread id (empty outside a run).
    pub fn thread_id(&self) -> String {
        self.state().thread_id.clone()
    }

    /// Ends the run after the current tool calls (the first reason counts).
    pub fn stop_run(&self, reason: String) {
        self.state().stop.get_or_insert(reason);
    }

    /// Why the run must end, once.
    pub fn take_stop(&self) -> Option<String> {
        self.state().stop.take()
    }
}

/// Calls a tool outside any run, for tests.
#[cfg(test)]
pub(crate) trait CallStandalone {
    /// [`Tool::call`](crate::tools::Tool::call) with [`ToolContext::standalone`].
    fn call_standalone(&self, arguments: serde_json::Value) -> crate::tools::ToolFuture<'_>;
}

#[cfg(test)]
impl<T: crate::tools::Tool + ?Sized> CallStandalone for T {
    fn call_standalone(&self, arguments: serde_json::Value) -> crate::tools::ToolFuture<'_> {
        self.call(ToolContext::standalone("test"), arguments)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_and_usage_are_shared_by_clones() {
        let scope = RunScope::default();
        let other = scope.clone();
        assert!(scope.take("subagents", 2));
        assert!(other.take("subagents", 2));
        assert!(!scope.take("subagents", 2));
        assert!(scope.take("else", 1));
        let usage = Usage {
            input_tokens: 3,
            cached_input_tokens: 1,
            output_tokens: 2,
        };
        other.add_usage("m", &usage);
        other.add_usage("m", &usage);
        other.add_usage("small", &usage);
        let taken = scope.take_usage();
        assert_eq!(taken["m"].input_tokens, 6);
        assert_eq!(taken["small"].output_tokens, 2);
        assert!(scope.take_usage().is_empty());
        scope.add_notice(String::from("n"));
        assert_eq!(other.take_notices(), ["n"]);
        assert!(scope.take_notices().is_empty());
    }
}

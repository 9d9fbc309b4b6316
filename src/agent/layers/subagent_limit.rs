//! The subagent budget of a run: at most `subagents.max_total_per_run` `task` calls per
//! run; the calls beyond it get an error result instead of a subagent.

use crate::agent::message::ToolCall;
use crate::agent::middleware::Layer;
use crate::agent::state::ThreadState;
use crate::tools::ToolOutput;

/// The tool whose calls are counted.
const TASK: &str = "task";

/// Counts `task` calls in the run's counters and refuses those over the limit.
pub struct SubagentLimit {
    max_total: usize,
}

impl SubagentLimit {
    /// At most `max_total` subagents per run.
    pub fn new(max_total: usize) -> Self {
        Self { max_total }
    }
}

impl Layer for SubagentLimit {
    fn name(&self) -> &'static str {
        "subagent_limit"
    }

    fn before_tool(&self, state: &mut ThreadState, call: &ToolCall) -> Option<ToolOutput> {
        if call.name != TASK {
            return None;
        }
        let started = state.run_counters.entry(TASK.to_string()).or_default();
        if *started >= self.max_total {
            return Some(ToolOutput::error(format!(
                "Error: this run has already started {} subagents (subagents.max_total_per_run); \
                 do the remaining work yourself.",
                self.max_total
            )));
        }
        *started += 1;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::middleware::{Chain, ToolStep};

    #[test]
    fn calls_beyond_the_limit_are_refused_until_the_next_run() {
        let chain = Chain::new().with(SubagentLimit::new(2));
        let mut state = ThreadState::default();
        let call = |name: &str| ToolCall {
            id: "1".into(),
            name: name.into(),
            arguments: "{}".into(),
        };
        let refused = |state: &mut ThreadState, name: &str| {
            matches!(
                chain.begin_tool_call(state, &call(name)),
                ToolStep::Answered { .. }
            )
        };
        assert!(!refused(&mut state, "task"));
        assert!(!refused(&mut state, "task"));
        assert!(refused(&mut state, "task"));
        assert!(!refused(&mut state, "other"), "other tools are not counted");
        state.run_counters.clear();
        assert!(!refused(&mut state, "task"), "a new run has a new budget");
    }
}

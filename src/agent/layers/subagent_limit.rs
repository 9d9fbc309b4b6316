//! The subagent budget of a run: at most `subagents.max_total_per_run` subagents per run;
//! `task` calls beyond it get an error result instead of a subagent. A call the `task` tool
//! refused itself (bad arguments, all slots busy) gives its place back.

use crate::agent::middleware::Layer;
use crate::agent::state::ThreadState;
use crate::protocol::ToolCall;
use crate::tools::ToolOutput;
use crate::tools::builtin::task::{NOT_STARTED, TASK};

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

    fn after_tool(&self, state: &mut ThreadState, call: &ToolCall, output: &mut ToolOutput) {
        if call.name == TASK
            && output.is_error
            && output.content.starts_with(NOT_STARTED)
            && let Some(started) = state.run_counters.get_mut(TASK)
        {
            *started = started.saturating_sub(1);
        }
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
        let given_back = chain.end_tool_call(
            &mut state,
            &call("task"),
            1,
            ToolOutput::error(format!("{NOT_STARTED}busy")),
        );
        assert!(given_back.is_error);
        assert!(
            !refused(&mut state, "task"),
            "a refused call gave its place back"
        );
        assert!(refused(&mut state, "task"));
        state.run_counters.clear();
        assert!(!refused(&mut state, "task"), "a new run has a new budget");
    }
}

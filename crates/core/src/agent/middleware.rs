//! The middleware chain: ordered layers with hooks before and after each model call and
//! around each tool call. New behaviour is a new layer; existing layers are not touched.

use std::sync::Arc;

use super::state::{OutcomeChange, ThreadState};
use crate::protocol::{Message, ToolCall};
use crate::provider::ModelReply;
use crate::tools::{PreparedCall, Tool, ToolContext, ToolOutput};

/// What a model call will be given; layers edit it before the call.
pub struct ModelCall<'a> {
    /// The thread's history. A layer that edits it (e.g. patching dangling tool calls) sets
    /// `rewritten` so the core stores the whole history again.
    pub messages: &'a mut Vec<Message>,
    /// Whether a layer changed `messages`.
    pub rewritten: bool,
    /// The tools whose schemas are bound to this call, in order.
    pub tools: Vec<Arc<dyn Tool>>,
}

/// The model's reply as layers see it after the call, before the core acts on it.
pub struct ModelTurn<'a> {
    /// The history the reply answers (without the reply).
    pub history: &'a [Message],
    /// The reply; layers may change its text or drop tool calls.
    pub reply: &'a mut ModelReply,
    /// Messages for the user (not the model), e.g. "the answer was cut".
    pub notices: Vec<String>,
    /// Set by a layer to end the run after this reply, with the reason.
    pub stop: Option<String>,
}

/// One layer. Every hook has a no-op default, so a layer implements only what it needs.
pub trait Layer: Send + Sync {
    /// A short name for logs and docs.
    fn name(&self) -> &'static str;

    /// Before each model call: may change the history, the thread state and the bound tools.
    fn before_model(&self, _state: &mut ThreadState, _call: &mut ModelCall<'_>) {}

    /// After each model call, with the model's reply: may change the reply, add notices for
    /// the user, or stop the run.
    fn after_model(&self, _state: &mut ThreadState, _turn: &mut ModelTurn<'_>) {}

    /// Before a tool call runs: returning an output answers the call instead of the tool.
    /// Later layers and the tool are skipped; the answer's state update is still merged,
    /// and `after_tool` runs for this layer and the ones before it.
    fn before_tool(&self, _state: &mut ThreadState, _call: &PreparedCall) -> Option<ToolOutput> {
        None
    }

    /// After a tool call, once its state update has been merged: may change the output and
    /// the state.
    fn after_tool(&self, _state: &mut ThreadState, _call: &PreparedCall, _output: &mut ToolOutput) {
    }
}

/// How far a tool call got through the `before_tool` hooks.
#[derive(Debug)]
pub enum ToolStep {
    /// Every layer let it through: run the tool, then pass its output to
    /// [`Chain::end_tool_call`].
    Run,
    /// A layer answered it; `ran` layers must see `after_tool`.
    Answered {
        /// What the model gets instead of the tool's result.
        output: ToolOutput,
        /// How many layers ran `before_tool`.
        ran: usize,
    },
}

/// Layers in order: `before_*` hooks run first to last, `after_*` hooks last to first, so a
/// layer wraps everything after it.
#[derive(Default)]
pub struct Chain {
    layers: Vec<Box<dyn Layer>>,
}

impl Chain {
    /// An empty chain.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a layer (it runs after the ones already there).
    pub fn with(mut self, layer: impl Layer + 'static) -> Self {
        self.layers.push(Box::new(layer));
        self
    }

    /// Appends every layer of `other` after these.
    pub fn then(mut self, other: Chain) -> Self {
        self.layers.extend(other.layers);
        self
    }

    /// The layer names in order, for logs and `doctor`.
    pub fn names(&self) -> Vec<&'static str> {
        self.layers.iter().map(|l| l.name()).collect()
    }

    /// Runs the `before_model` hooks: returns the tools to bind, starting from `tools`, and
    /// whether a layer rewrote `messages`.
    pub fn prepare_model_call(
        &self,
        state: &mut ThreadState,
        messages: &mut Vec<Message>,
        tools: Vec<Arc<dyn Tool>>,
    ) -> (Vec<Arc<dyn Tool>>, bool) {
        let mut call = ModelCall {
            messages,
            rewritten: false,
            tools,
        };
        for layer in &self.layers {
            layer.before_model(state, &mut call);
        }
        (call.tools, call.rewritten)
    }

    /// Lets the layers see the model's reply, last layer first. Returns the notices for the
    /// user and, if a layer stopped the run, why.
    pub fn finish_model_call(
        &self,
        state: &mut ThreadState,
        history: &[Message],
        reply: &mut ModelReply,
    ) -> (Vec<String>, Option<String>) {
        let mut turn = ModelTurn {
            history,
            reply,
            notices: Vec::new(),
            stop: None,
        };
        for layer in self.layers.iter().rev() {
            layer.after_model(state, &mut turn);
        }
        (turn.notices, turn.stop)
    }

    /// Runs the `before_tool` hooks of one call, in order, until one answers.
    pub fn begin_tool_call(&self, state: &mut ThreadState, call: &PreparedCall) -> ToolStep {
        for (i, layer) in self.layers.iter().enumerate() {
            if let Some(output) = layer.before_tool(state, call) {
                return ToolStep::Answered { output, ran: i + 1 };
            }
        }
        ToolStep::Run
    }

    /// Merges the output's state update, then runs the `after_tool` hooks of the layers that
    /// saw the call, last first.
    pub fn end_tool_call(
        &self,
        state: &mut ThreadState,
        call: &PreparedCall,
        ran: usize,
        mut output: ToolOutput,
    ) -> ToolOutput {
        if let Some(promoted) = output
            .state_update
            .as_ref()
            .and_then(|u| u.promoted.as_ref())
        {
            let change = if state.promoted.catalog_hash.as_deref() == Some(&promoted.catalog_hash)
                || state.promoted.catalog_hash.is_none()
            {
                OutcomeChange::Promoted(promoted.names.clone())
            } else {
                OutcomeChange::Catalog
            };
            state.outcome_changes.insert(call.id.clone(), change);
        }
        state.apply(output.state_update.as_deref());
        for layer in self.layers[..ran.min(self.layers.len())].iter().rev() {
            layer.after_tool(state, call, &mut output);
        }
        output
    }

    /// How many layers a call that was not answered went through.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether the chain has no layers.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Runs one tool call through the layers and the tool, alone. `lookup` finds a tool by
    /// name among all tools (deferred ones included; the layers decide what may run).
    pub async fn run_tool_call(
        &self,
        state: &mut ThreadState,
        call: &ToolCall,
        lookup: &(dyn Fn(&str) -> Option<Arc<dyn Tool>> + Sync),
    ) -> ToolOutput {
        let call = &PreparedCall::from(call);
        match self.begin_tool_call(state, call) {
            ToolStep::Answered { output, ran } => self.end_tool_call(state, call, ran, output),
            ToolStep::Run => {
                let output =
                    execute(ToolContext::standalone(&call.id), call, lookup(&call.name)).await;
                self.end_tool_call(state, call, self.layers.len(), output)
            }
        }
    }
}

/// Runs `tool` with the call's arguments. A missing tool, arguments that are not a JSON
/// object, and a panic inside the tool all become error results: a tool call never takes
/// the agent down.
pub async fn execute(
    ctx: ToolContext<'_>,
    call: &PreparedCall,
    tool: Option<Arc<dyn Tool>>,
) -> ToolOutput {
    use futures::FutureExt;

    let Some(tool) = tool else {
        return ToolOutput::error(format!("Error: there is no tool named '{}'.", call.name));
    };
    let arguments = match call.input() {
        Ok(value) => value.clone(),
        Err(message) => return ToolOutput::error(format!("Error: {}: {message}", call.name)),
    };
    match std::panic::AssertUnwindSafe(tool.call(ctx, arguments))
        .catch_unwind()
        .await
    {
        Ok(output) => output,
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| String::from("no message"));
            tracing::error!(tool = %call.name, "tool panicked: {why}");
            ToolOutput::error(format!(
                "Error: the tool '{}' crashed ({why}). This is a bug in the tool, not in \
                 your call; try another approach.",
                call.name
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::{Map, Value, json};

    use super::*;
    use crate::tools::{ToolFuture, ToolInfo, ToolSource};

    /// Records every hook it sees; answers tool calls when `answers`.
    struct Recorder {
        name: &'static str,
        log: Arc<Mutex<Vec<String>>>,
        answers: bool,
    }

    impl Layer for Recorder {
        fn name(&self) -> &'static str {
            self.name
        }
        fn before_model(&self, _: &mut ThreadState, _: &mut ModelCall<'_>) {
            self.log
                .lock()
                .unwrap()
                .push(format!("before_model {}", self.name));
        }
        fn after_model(&self, _: &mut ThreadState, _: &mut ModelTurn<'_>) {
            self.log
                .lock()
                .unwrap()
                .push(format!("after_model {}", self.name));
        }
        fn before_tool(&self, _: &mut ThreadState, _: &PreparedCall) -> Option<ToolOutput> {
            self.log
                .lock()
                .unwrap()
                .push(format!("before_tool {}", self.name));
            self.answers
                .then(|| ToolOutput::error("answered by a layer"))
        }
        fn after_tool(&self, _: &mut ThreadState, _: &PreparedCall, _: &mut ToolOutput) {
            self.log
                .lock()
                .unwrap()
                .push(format!("after_tool {}", self.name));
        }
    }

    struct Echo(ToolInfo);
    impl Tool for Echo {
        fn info(&self) -> &ToolInfo {
            &self.0
        }
        fn call<'a>(&'a self, _ctx: ToolContext<'a>, arguments: Value) -> ToolFuture<'a> {
            Box::pin(async move { ToolOutput::ok(arguments.to_string()) })
        }
    }

    fn chain(log: &Arc<Mutex<Vec<String>>>, answering: Option<&str>) -> Chain {
        ["a", "b", "c"]
            .into_iter()
            .fold(Chain::new(), |chain, name| {
                chain.with(Recorder {
                    name,
                    log: log.clone(),
                    answers: answering == Some(name),
                })
            })
    }

    fn lookup(name: &str) -> Option<Arc<dyn Tool>> {
        (name == "echo").then(|| {
            Arc::new(Echo(ToolInfo {
                name: "echo".into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
                source: ToolSource::BuiltIn,
                metadata: Map::new(),
                parallel: false,
            })) as Arc<dyn Tool>
        })
    }

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "1".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[tokio::test]
    async fn hooks_run_in_order_and_after_hooks_unwind() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let chain = chain(&log, None);
        let mut state = ThreadState::default();
        chain.prepare_model_call(&mut state, &mut Vec::new(), Vec::new());
        chain.finish_model_call(&mut state, &[], &mut ModelReply::default());
        let out = chain
            .run_tool_call(&mut state, &call("echo", r#"{"x":1}"#), &lookup)
            .await;
        assert_eq!(out.content, r#"{"x":1}"#);
        assert_eq!(
            *log.lock().unwrap(),
            [
                "before_model a",
                "before_model b",
                "before_model c",
                "after_model c",
                "after_model b",
                "after_model a",
                "before_tool a",
                "before_tool b",
                "before_tool c",
                "after_tool c",
                "after_tool b",
                "after_tool a",
            ]
        );
    }

    #[tokio::test]
    async fn a_layer_can_answer_instead_of_the_tool() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let chain = chain(&log, Some("b"));
        let out = chain
            .run_tool_call(&mut ThreadState::default(), &call("echo", "{}"), &lookup)
            .await;
        assert_eq!(out.content, "answered by a layer");
        assert_eq!(
            *log.lock().unwrap(),
            [
                "before_tool a",
                "before_tool b",
                "after_tool b",
                "after_tool a"
            ]
        );
    }

    #[tokio::test]
    async fn unknown_tools_and_invalid_arguments_are_error_results() {
        let chain = Chain::new();
        let mut state = ThreadState::default();
        let out = chain
            .run_tool_call(&mut state, &call("nope", "{}"), &lookup)
            .await;
        assert_eq!(
            (out.is_error, out.content.as_str()),
            (true, "Error: there is no tool named 'nope'.")
        );
        let out = chain
            .run_tool_call(&mut state, &call("echo", "{not json"), &lookup)
            .await;
        assert!(
            out.is_error && out.content.contains("not valid JSON"),
            "{}",
            out.content
        );
        let out = chain
            .run_tool_call(&mut state, &call("echo", "[1]"), &lookup)
            .await;
        assert!(
            out.is_error && out.content.contains("not an array"),
            "{}",
            out.content
        );
        let out = chain
            .run_tool_call(&mut state, &call("echo", "  "), &lookup)
            .await;
        assert_eq!(out.content, "{}", "empty arguments are an empty object");
    }

    struct Panics(ToolInfo);
    impl Tool for Panics {
        fn info(&self) -> &ToolInfo {
            &self.0
        }
        fn call<'a>(&'a self, _ctx: ToolContext<'a>, _: Value) -> ToolFuture<'a> {
            Box::pin(async move { panic!("boom") })
        }
    }

    #[tokio::test]
    async fn a_panicking_tool_is_an_error_result() {
        let tool: Arc<dyn Tool> = Arc::new(Panics(ToolInfo {
            name: "bad".into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
            source: ToolSource::BuiltIn,
            metadata: Map::new(),
            parallel: false,
        }));
        let out = execute(
            ToolContext::standalone("c"),
            &(&call("bad", "{}")).into(),
            Some(tool),
        )
        .await;
        assert!(out.is_error);
        assert!(out.content.contains("crashed (boom)"), "{}", out.content);
    }
}

//! The middleware chain: ordered layers with hooks before each model call and around each
//! tool call. New behaviour is a new layer; existing layers are not touched.

use std::sync::Arc;

use serde_json::Value;

use super::message::{Message, ToolCall};
use super::state::ThreadState;
use crate::tools::{Tool, ToolOutput};

/// What a model call will be given; layers edit it before the call.
pub struct ModelCall<'a> {
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The tools whose schemas are bound to this call, in order.
    pub tools: Vec<Arc<dyn Tool>>,
}

/// One layer. Every hook has a no-op default, so a layer implements only what it needs.
pub trait Layer: Send + Sync {
    /// A short name for logs and docs.
    fn name(&self) -> &'static str;

    /// Before each model call: may change the thread state and the bound tools.
    fn before_model(&self, _state: &mut ThreadState, _call: &mut ModelCall<'_>) {}

    /// After each model call, with the model's reply (an assistant message): may change the
    /// reply and the state before the core acts on it.
    fn after_model(&self, _state: &mut ThreadState, _reply: &mut Message) {}

    /// Before a tool call runs: returning an output answers the call instead of the tool.
    /// Later layers and the tool are skipped; the answer's state update is still merged,
    /// and `after_tool` runs for this layer and the ones before it.
    fn before_tool(&self, _state: &mut ThreadState, _call: &ToolCall) -> Option<ToolOutput> {
        None
    }

    /// After a tool call, once its state update has been merged: may change the output and
    /// the state.
    fn after_tool(&self, _state: &mut ThreadState, _call: &ToolCall, _output: &mut ToolOutput) {}
}

/// Layers in order: `before_*` hooks run first to last, `after_tool` last to first, so a
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

    /// The tools to bind for the next model call, starting from `tools`.
    pub fn prepare_model_call(
        &self,
        state: &mut ThreadState,
        messages: &[Message],
        tools: Vec<Arc<dyn Tool>>,
    ) -> Vec<Arc<dyn Tool>> {
        let mut call = ModelCall { messages, tools };
        for layer in &self.layers {
            layer.before_model(state, &mut call);
        }
        call.tools
    }

    /// Lets the layers see the model's reply, last layer first.
    pub fn finish_model_call(&self, state: &mut ThreadState, reply: &mut Message) {
        for layer in self.layers.iter().rev() {
            layer.after_model(state, reply);
        }
    }

    /// Runs one tool call through the layers. `lookup` finds a tool by name among all
    /// tools (deferred ones included; the layers decide what may run). Unknown tools and
    /// invalid JSON arguments become error results; the result's state update is merged
    /// into `state` by the reducer.
    pub async fn run_tool_call(
        &self,
        state: &mut ThreadState,
        call: &ToolCall,
        lookup: &(dyn Fn(&str) -> Option<Arc<dyn Tool>> + Sync),
    ) -> ToolOutput {
        let mut ran = 0;
        let mut output = None;
        for layer in &self.layers {
            ran += 1;
            if let Some(answer) = layer.before_tool(state, call) {
                output = Some(answer);
                break;
            }
        }
        let mut output = match output {
            Some(answer) => answer,
            None => execute(call, lookup).await,
        };
        state.apply(output.state_update.as_ref());
        for layer in self.layers[..ran].iter().rev() {
            layer.after_tool(state, call, &mut output);
        }
        output
    }
}

async fn execute(
    call: &ToolCall,
    lookup: &(dyn Fn(&str) -> Option<Arc<dyn Tool>> + Sync),
) -> ToolOutput {
    let Some(tool) = lookup(&call.name) else {
        return ToolOutput::error(format!("Error: there is no tool named '{}'.", call.name));
    };
    let arguments = if call.arguments.trim().is_empty() {
        Value::Object(Default::default())
    } else {
        match serde_json::from_str(&call.arguments) {
            Ok(value) => value,
            Err(err) => {
                return ToolOutput::error(format!(
                    "Error: the arguments of '{}' are not valid JSON ({err}); send a JSON object.",
                    call.name
                ));
            }
        }
    };
    tool.call(arguments).await
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::{Map, json};

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
        fn after_model(&self, _: &mut ThreadState, _: &mut Message) {
            self.log
                .lock()
                .unwrap()
                .push(format!("after_model {}", self.name));
        }
        fn before_tool(&self, _: &mut ThreadState, _: &ToolCall) -> Option<ToolOutput> {
            self.log
                .lock()
                .unwrap()
                .push(format!("before_tool {}", self.name));
            self.answers
                .then(|| ToolOutput::error("answered by a layer"))
        }
        fn after_tool(&self, _: &mut ThreadState, _: &ToolCall, _: &mut ToolOutput) {
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
        fn call(&self, arguments: Value) -> ToolFuture<'_> {
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
        chain.prepare_model_call(&mut state, &[], Vec::new());
        let mut reply = Message::Assistant {
            content: String::new(),
            reasoning: String::new(),
            tool_calls: Vec::new(),
        };
        chain.finish_model_call(&mut state, &mut reply);
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
            .run_tool_call(&mut state, &call("echo", "  "), &lookup)
            .await;
        assert_eq!(out.content, "{}", "empty arguments are an empty object");
    }
}

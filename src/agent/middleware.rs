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

    /// Before a tool call runs: returning an output answers the call instead of the tool
    /// (later layers and the tool itself are skipped).
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

    /// The layer names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.layers.iter().map(|l| l.name()).collect()
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

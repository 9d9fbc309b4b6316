//! What the permission tests share: a tool that says what it does, its calls, and the
//! context a call runs in.

use serde_json::{Map, Value, json};

use crate::protocol::ToolCall;
use crate::tools::{
    Effect, EventEmitter, RunScope, Tool, ToolContext, ToolFuture, ToolInfo, ToolOutput, ToolSource,
};

/// A tool of `effect` whose subject is its `subject` argument.
pub(super) struct Fake {
    info: ToolInfo,
    effect: Effect,
    subject: &'static str,
}

impl Fake {
    /// A tool named `name`, described by `description`.
    pub(super) fn new(
        name: &str,
        description: &str,
        effect: Effect,
        subject: &'static str,
    ) -> Self {
        Self {
            info: ToolInfo {
                name: name.to_string(),
                description: description.to_string(),
                parameters: json!({"type": "object"}),
                source: ToolSource::BuiltIn,
                metadata: Map::new(),
                parallel: false,
            },
            effect,
            subject,
        }
    }

    /// A call of this tool with `subject` as its subject argument.
    pub(super) fn call(&self, id: &str, subject: &str) -> ToolCall {
        ToolCall {
            id: id.to_string(),
            name: self.info.name.clone(),
            arguments: json!({ self.subject: subject }).to_string(),
        }
    }
}

impl Tool for Fake {
    fn info(&self) -> &ToolInfo {
        &self.info
    }
    fn call<'a>(&'a self, _: ToolContext<'a>, _: Value) -> ToolFuture<'a> {
        Box::pin(async { ToolOutput::ok("done") })
    }
    fn effect(&self) -> Effect {
        self.effect
    }
    fn subject(&self, arguments: &Value) -> Option<String> {
        arguments[self.subject].as_str().map(str::to_string)
    }
}

/// The context of call `id` in turn 1, its events to `events`.
pub(super) fn context<'a>(id: &str, events: EventEmitter<'a>, scope: RunScope) -> ToolContext<'a> {
    ToolContext {
        call_id: id.to_string(),
        turn: 1,
        cancel: Default::default(),
        events,
        scope,
    }
}

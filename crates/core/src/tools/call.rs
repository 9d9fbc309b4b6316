//! A tool call as the call path works on it: the model's call with its arguments parsed
//! once. Every gate and layer reads the parsed value; a gate that rewrites the input
//! (a hook's `updatedInput`) changes it in one place; the history keeps the model's call.

use std::ops::Deref;

use serde_json::Value;

use crate::base::describe::json_kind;
use crate::protocol::ToolCall;

/// A tool call with its arguments parsed.
#[derive(Debug, Clone)]
pub struct PreparedCall {
    call: ToolCall,
    input: Result<Value, String>,
}

impl PreparedCall {
    /// Parses `call`'s arguments (see [`parse_arguments`]).
    pub fn new(call: ToolCall) -> Self {
        let input = parse_arguments(&call.arguments);
        Self { call, input }
    }

    /// The call as the model made it (with the arguments as they are now).
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// The arguments as a JSON object, or why they are not one (for the model).
    pub fn input(&self) -> Result<&Value, &str> {
        self.input.as_ref().map_err(String::as_str)
    }

    /// The arguments when they are an object.
    pub fn value(&self) -> Option<&Value> {
        self.input.as_ref().ok()
    }

    /// Replaces the arguments with `input` (a JSON object), also in the call's text.
    pub fn replace_input(&mut self, input: Value) {
        self.call.arguments = input.to_string();
        self.input = Ok(input);
    }
}

impl Deref for PreparedCall {
    type Target = ToolCall;

    fn deref(&self) -> &ToolCall {
        &self.call
    }
}

impl From<ToolCall> for PreparedCall {
    fn from(call: ToolCall) -> Self {
        Self::new(call)
    }
}

impl From<&ToolCall> for PreparedCall {
    fn from(call: &ToolCall) -> Self {
        Self::new(call.clone())
    }
}

/// Parses a tool call's arguments: empty means `{}`; anything else must be a JSON object.
pub fn parse_arguments(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(format!(
            "the arguments must be a JSON object, not {}; send an object such as {{\"key\": \"value\"}}",
            json_kind(&other)
        )),
        Err(err) => Err(format!(
            "the arguments are not valid JSON ({err}); send a JSON object"
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(arguments: &str) -> PreparedCall {
        PreparedCall::new(ToolCall {
            id: "1".into(),
            name: "t".into(),
            arguments: arguments.into(),
        })
    }

    #[test]
    fn arguments_are_parsed_once_and_replaced_in_one_place() {
        assert_eq!(call("  ").value(), Some(&json!({})));
        assert!(call("[1]").input().unwrap_err().contains("not an array"));
        assert!(call("{x").input().unwrap_err().contains("not valid JSON"));
        let mut prepared = call(r#"{"a":1}"#);
        prepared.replace_input(json!({"b": 2}));
        assert_eq!(prepared.value(), Some(&json!({"b": 2})));
        assert_eq!(prepared.arguments, r#"{"b":2}"#, "the call's text follows");
    }
}

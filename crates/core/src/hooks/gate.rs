//! `PreToolUse` and `PostToolUse` on the call gate. Before a call, after the policy: a
//! hook may refuse it (its reason is the tool error the model reads), ask the user, approve
//! it (as the user would; never against a deny rule, which the policy applied first), or
//! rewrite its input, which must fit the tool's schema and is checked by the policy again.
//! After a call: a hook's reason or context is added to the result the model reads.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{HookEvent, Hooks, Target, Verdict};
use crate::permissions::{Admission, CallGate, GateFuture, refuse};
use crate::protocol::Denial;
use crate::tools::{Effect, PreparedCall, Tool, ToolContext, ToolOutput, schema_check};

/// The call gate that runs the `PreToolUse` hooks before a call and `PostToolUse` after it.
#[derive(Debug)]
pub(crate) struct HookGate {
    hooks: Arc<Hooks>,
    /// `PreToolUse` context waiting for its call's result, by call id.
    context: Mutex<HashMap<String, String>>,
}

impl HookGate {
    /// The gate over `hooks`; `None` when no tool hook is configured (a session without
    /// them has no gate to pass).
    pub(crate) fn new(hooks: Arc<Hooks>) -> Option<Self> {
        (hooks.has(HookEvent::PreToolUse) || hooks.has(HookEvent::PostToolUse)).then(|| Self {
            hooks,
            context: Mutex::default(),
        })
    }

    fn context(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.context.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn run(
        &self,
        event: HookEvent,
        ctx: &ToolContext<'_>,
        call: &PreparedCall,
        tool: Option<&dyn Tool>,
        extra: Option<(&str, Value)>,
    ) -> Verdict {
        let subject = tool.and_then(|t| call.value().and_then(|a| t.subject(a)));
        let source = tool.map(|t| t.info().source.clone());
        let builtin = crate::tools::ToolSource::BuiltIn;
        let target = Target::Tool {
            name: &call.name,
            source: source.as_ref().unwrap_or(&builtin),
            subject: subject.as_deref(),
            commands: tool.is_some_and(|t| t.effect() == Effect::RunsCommands),
        };
        let mut fields = Map::new();
        fields.insert("tool_name".into(), Value::String(call.name.clone()));
        fields.insert(
            "tool_input".into(),
            call.value().cloned().unwrap_or(Value::Null),
        );
        fields.insert("tool_use_id".into(), Value::String(call.id.clone()));
        if let Some((key, value)) = extra {
            fields.insert(key.into(), value);
        }
        let ran = self
            .hooks
            .run(event, target, &ctx.scope.thread_id(), fields, ctx.events)
            .await;
        let verdict = Verdict::of(event, ran);
        for notice in &verdict.notices {
            ctx.scope.add_notice(notice.clone());
        }
        if let Some(stop) = &verdict.stop {
            ctx.scope.stop_run(stop.clone());
        }
        verdict
    }
}

impl CallGate for HookGate {
    fn before<'a>(
        &'a self,
        ctx: &'a ToolContext<'a>,
        call: &'a mut PreparedCall,
        tool: &'a dyn Tool,
        admission: &'a mut Admission,
    ) -> GateFuture<'a> {
        Box::pin(async move {
            if !self.hooks.has(HookEvent::PreToolUse) {
                return Ok(());
            }
            let verdict = self
                .run(HookEvent::PreToolUse, ctx, call, Some(tool), None)
                .await;
            if let Some(reason) = verdict.blocked.or(verdict.stop) {
                return Err(refuse(ctx, call, Denial::Hook, &reason, None));
            }
            if let Some(input) = verdict.updated_input {
                if let Some(problem) = schema_check::problem(&tool.info().parameters, &input) {
                    let reason = format!(
                        "a hook rewrote the call's arguments, and they do not fit the tool's \
                         schema: {problem}"
                    );
                    return Err(refuse(ctx, call, Denial::Hook, &reason, None));
                }
                call.replace_input(input);
            }
            if let Some(reason) = verdict.ask {
                admission.ask = Some(format!("a hook asks: {reason}"));
            } else if let Some(by) = verdict.allowed_by {
                admission.approved_by = Some(format!("the hook `{by}`"));
            }
            if !verdict.context.is_empty() {
                self.context()
                    .insert(call.id.clone(), verdict.context.join("\n"));
            }
            Ok(())
        })
    }

    fn after<'a>(
        &'a self,
        ctx: &'a ToolContext<'a>,
        call: &'a PreparedCall,
        tool: &'a dyn Tool,
        output: &'a mut ToolOutput,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut added: Vec<String> = self.context().remove(&call.id).into_iter().collect();
            if self.hooks.has(HookEvent::PostToolUse) {
                let response = json!({"content": output.content, "is_error": output.is_error});
                let verdict = self
                    .run(
                        HookEvent::PostToolUse,
                        ctx,
                        call,
                        Some(tool),
                        Some(("tool_response", response)),
                    )
                    .await;
                added.extend(verdict.blocked);
                added.extend(verdict.context);
            }
            if !added.is_empty() {
                output.content.push_str(&format!(
                    "\n\n<hook-context>\n{}\n</hook-context>",
                    added.join("\n")
                ));
            }
        })
    }
}

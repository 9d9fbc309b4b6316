//! The run's own hook events: `UserPromptSubmit` before the user's message is stored,
//! `Stop` when the model answered, `PreCompact` before a summary. With no hook configured
//! for an event, its step costs one lookup.

use serde_json::{Map, Value};

use super::{Outcome, Run};
use crate::hooks::{HookEvent, Target, Verdict};
use crate::protocol::{ErrorKind, Message};

impl Run<'_> {
    async fn fire(
        &mut self,
        event: HookEvent,
        target: Target<'_>,
        fields: Map<String, Value>,
    ) -> Verdict {
        let hooks = self.agent.get().hooks.clone();
        // Ctrl-C does not wait for a hook: it is ended with its group.
        let ran = tokio::select! {
            biased;
            () = self.cancel.cancelled() => Vec::new(),
            ran = hooks.run(event, target, &self.thread.id, fields, self.emit) => ran,
        };
        let verdict = Verdict::of(event, ran);
        for notice in &verdict.notices {
            self.notice(notice.clone());
        }
        verdict
    }

    /// The user's message as it goes to the model: with the hooks' context added, or
    /// refused (never stored, never sent).
    pub(super) async fn submit_prompt(&mut self, input: String) -> Result<String, Outcome> {
        if !self.agent.get().hooks.has(HookEvent::UserPromptSubmit) {
            return Ok(input);
        }
        let mut fields = Map::new();
        fields.insert("prompt".into(), Value::String(input.clone()));
        let verdict = self
            .fire(HookEvent::UserPromptSubmit, Target::Any, fields)
            .await;
        if let Some(reason) = verdict.blocked.as_ref().or(verdict.stop.as_ref()) {
            return Err(Outcome::Failed(
                ErrorKind::Hook,
                format!("a UserPromptSubmit hook refused the prompt: {reason}"),
            ));
        }
        Ok(match verdict.context_block(HookEvent::UserPromptSubmit) {
            Some(context) => format!("{input}\n\n{context}"),
            None => input,
        })
    }

    /// Whether the run goes on after the model answered: a `Stop` hook that blocks hands
    /// its reason to the model as the next message. `Err`: a hook ended the run.
    pub(super) async fn stop_blocked(&mut self) -> Result<bool, Outcome> {
        let event = self.agent.get().hooks.stop_event();
        if !self.agent.get().hooks.has(event) {
            return Ok(false);
        }
        let mut fields = Map::new();
        // Claude Code's loop guard: a hook sees that it kept the run going already.
        fields.insert(
            "stop_hook_active".into(),
            Value::Bool(self.stop_hook_active),
        );
        let verdict = self.fire(event, Target::Any, fields).await;
        if let Some(reason) = verdict.stop {
            return Err(Outcome::Failed(ErrorKind::Hook, reason));
        }
        let Some(reason) = verdict.blocked else {
            return Ok(false);
        };
        self.stop_hook_active = true;
        self.notice(format!(
            "a {} hook kept the run going: {reason}",
            event.name()
        ));
        self.thread.messages.push(Message::User {
            content: format!(
                "<hook-feedback event=\"{}\">\n{reason}\n</hook-feedback>",
                event.name()
            ),
        });
        self.save().map_err(Outcome::storage)?;
        Ok(true)
    }

    /// `PreCompact`, before older messages are summarised.
    pub(super) async fn before_compact(&mut self) {
        if !self.agent.get().hooks.has(HookEvent::PreCompact) {
            return;
        }
        let mut fields = Map::new();
        fields.insert("trigger".into(), Value::String("auto".into()));
        fields.insert("custom_instructions".into(), Value::String(String::new()));
        self.fire(HookEvent::PreCompact, Target::Word("auto"), fields)
            .await;
    }
}

//! Building the transcript: the core's events applied as they come (streams, retries,
//! tool cards, promotions, subagents), and stored messages turned into entries.

use serde_json::Value;

use super::transcript::{
    Answer, Entry, Promotion, Reasoning, ToolCard, ToolStatus, Transcript, format_duration,
};
use antler_protocol::{Event, HookDecision, Message, RunStatus, SUBAGENT_TOOL, ToolRole};

impl Transcript {
    /// Applies one event of the core.
    pub(crate) fn apply(&mut self, event: Event) {
        match event {
            Event::TurnStarted { .. } => self.turn_start = self.items.len(),
            Event::TextDelta { text, .. } => self.stream(text, false),
            Event::ReasoningDelta { text, .. } => self.stream(text, true),
            Event::Retrying {
                attempt,
                delay_ms,
                reason,
                ..
            } => self.retrying(attempt, delay_ms, &reason),
            Event::Notice { message, .. } => self.push(Entry::Notice(message)),
            Event::SkillLoaded {
                name,
                source,
                tokens,
                by,
                ..
            } => self.skill_loaded(&name, &source, tokens, by),
            Event::HookFinished {
                event,
                command,
                decision: Some(decision @ (HookDecision::Block | HookDecision::Deny)),
                ..
            } => self.hook_refused(&event, &command, decision),
            Event::HookStarted { .. } | Event::HookFinished { .. } => {}
            // The refusal is a notice of the run and the call's card shows the error.
            Event::ElicitationRequested { .. }
            | Event::ApprovalRequested { .. }
            | Event::PermissionDenied { .. } => {}
            Event::ElicitationAnswered {
                server,
                message,
                action,
                automatic,
                ..
            } => self.elicitation_answered(&server, &message, action, automatic),
            Event::Summarized {
                replaced_messages, ..
            } => {
                self.push(Entry::Info(format!(
                    "Summarised {replaced_messages} earlier messages to keep the context small."
                )));
            }
            Event::TurnCompleted { .. } => self.end_streams(),
            Event::TurnFailed { error, .. } => {
                self.end_streams();
                self.push(Entry::Error(error));
            }
            Event::ToolCallStarted { .. }
            | Event::ToolProgress { .. }
            | Event::ToolCallFinished { .. }
            | Event::ToolsPromoted { .. } => self.apply_tool_event(event),
            Event::FilesPresented { files, .. } => self.push(Entry::Files(files)),
            Event::Subagent {
                parent_call_id,
                subagent,
                description,
                event,
            } => self.subagent(parent_call_id, subagent, &description, *event),
            Event::RunFinished(result) => self.run_finished(result),
            Event::RunStarted { .. } | Event::Usage { .. } => {}
        }
    }

    fn skill_loaded(
        &mut self,
        name: &str,
        source: &str,
        tokens: usize,
        by: antler_protocol::SkillLoadedBy,
    ) {
        let who = match by {
            antler_protocol::SkillLoadedBy::Model => "by the model",
            antler_protocol::SkillLoadedBy::User => "by you",
        };
        self.push(Entry::Info(format!(
            "Skill `{}` loaded {who} ({source} skill, about {tokens} tokens)",
            antler_base::text::quoted(name)
        )));
    }

    /// A hook's refusal, as a line (its failure comes as the run's notice).
    fn hook_refused(&mut self, event: &str, command: &str, decision: HookDecision) {
        let what = match decision {
            HookDecision::Deny => "refused the call",
            _ => "blocked",
        };
        self.push(Entry::Notice(format!(
            "The {event} hook `{}` {what}",
            antler_base::text::short_line(command, 80).0
        )));
    }

    /// A retry drops what the failed attempt streamed in this turn and says why.
    fn retrying(&mut self, attempt: u32, delay_ms: u64, reason: &str) {
        let start = self.turn_start.min(self.items.len());
        let mut index = 0;
        self.items.retain(|item| {
            let keep =
                index < start || !matches!(item.entry, Entry::Answer(_) | Entry::Reasoning(_));
            index += 1;
            keep
        });
        let wait = format_duration(delay_ms);
        self.push(Entry::Notice(format!(
            "Retrying (attempt {attempt}, in {wait}): {reason}"
        )));
    }

    fn elicitation_answered(
        &mut self,
        server: &str,
        message: &str,
        action: antler_protocol::ElicitationAction,
        automatic: bool,
    ) {
        let what = match (action, automatic) {
            (_, true) => "declined: nobody can answer here",
            (antler_protocol::ElicitationAction::Accept, _) => "you answered",
            (antler_protocol::ElicitationAction::Decline, _) => "you declined",
            (antler_protocol::ElicitationAction::Cancel, _) => "you dismissed it",
        };
        self.push(Entry::Notice(format!(
            "MCP server `{server}` asked: {message} · {what}"
        )));
    }

    /// A tool call's card: opened, its progress, its result, the tools its search promoted.
    fn apply_tool_event(&mut self, event: Event) {
        match event {
            Event::ToolCallStarted {
                call_id,
                name,
                role,
                arguments,
                ..
            } => {
                self.end_streams();
                self.push(Entry::Tool(ToolCard::new(
                    call_id,
                    name,
                    role,
                    arguments,
                    ToolStatus::Running,
                )));
            }
            Event::ToolProgress {
                call_id,
                progress,
                total,
                message,
                ..
            } => {
                let index = self.card_index(&call_id);
                if let Some(Entry::Tool(card)) = index.and_then(|i| self.entry_mut(i)) {
                    card.progress = Some(progress_text(progress, total, message.as_deref()).into());
                }
            }
            Event::ToolCallFinished {
                call_id,
                is_error,
                content,
                duration_ms,
                name,
                role,
                ..
            } => {
                let card = self.card_to_finish(call_id, name, role);
                if let Some(card) = card {
                    card.status = if is_error {
                        ToolStatus::Failed
                    } else {
                        ToolStatus::Ok
                    };
                    card.duration_ms = Some(duration_ms);
                    card.result = content;
                    card.progress = None;
                }
            }
            Event::ToolsPromoted {
                added,
                removed,
                promoted,
                catalog_hash,
                ..
            } => self.promoted(Promotion {
                added,
                removed,
                working_set: Some(promoted.len()),
                catalog_hash,
            }),
            _ => {}
        }
    }

    /// The card of the call `call_id`, or a new one when its start was not seen (the
    /// transcript began mid-call).
    fn card_to_finish(
        &mut self,
        call_id: String,
        name: String,
        role: ToolRole,
    ) -> Option<&mut ToolCard> {
        if self.card_index(&call_id).is_none() {
            self.push(Entry::Tool(ToolCard::new(
                call_id.clone(),
                name,
                role,
                Value::Null,
                ToolStatus::Running,
            )));
        }
        let index = self.card_index(&call_id)?;
        match self.entry_mut(index) {
            Some(Entry::Tool(card)) => Some(card),
            _ => None,
        }
    }

    /// A promotion goes on the card of the search that caused it, else on a line of its own.
    fn promoted(&mut self, promotion: Promotion) {
        let search = (self.turn_start..self.items.len()).rev().find(|&i| {
            matches!(&self.items[i].entry, Entry::Tool(c) if c.role == ToolRole::Search && c.promotion.is_none())
        });
        match search.and_then(|i| self.entry_mut(i)) {
            Some(Entry::Tool(card)) => card.promotion = Some(promotion),
            _ => self.push(Entry::Promotion(promotion)),
        }
    }

    /// The run's end: cards still running failed with it, and its errors are shown once.
    fn run_finished(&mut self, result: antler_protocol::RunResult) {
        self.end_streams();
        for i in 0..self.items.len() {
            if matches!(&self.items[i].entry, Entry::Tool(c) if c.status == ToolStatus::Running)
                && let Some(Entry::Tool(card)) = self.entry_mut(i)
            {
                card.status = ToolStatus::Failed;
            }
        }
        match result.status {
            RunStatus::Success => {}
            RunStatus::Interrupted => self.push(Entry::Notice("Interrupted.".to_string())),
            RunStatus::Failed => {
                for error in result.errors {
                    let shown = self
                        .items
                        .iter()
                        .any(|i| i.entry == Entry::Error(error.clone()));
                    if !shown {
                        self.push(Entry::Error(error));
                    }
                }
            }
        }
    }

    /// Appends streamed text to the open answer or reasoning, or opens one.
    fn stream(&mut self, text: String, reasoning: bool) {
        let last = self.items.len().checked_sub(1);
        let open = last.is_some_and(|i| match &self.items[i].entry {
            Entry::Answer(a) => !reasoning && a.streaming,
            Entry::Reasoning(r) => reasoning && r.streaming,
            _ => false,
        });
        if open {
            match last.and_then(|i| self.entry_mut(i)) {
                Some(Entry::Answer(a)) => a.text.push_str(&text),
                Some(Entry::Reasoning(r)) => r.text.push_str(&text),
                _ => {}
            }
            return;
        }
        if !reasoning {
            self.end_streams();
        }
        self.push(if reasoning {
            Entry::Reasoning(Reasoning {
                text,
                streaming: true,
                expanded: false,
            })
        } else {
            Entry::Answer(Answer {
                text,
                streaming: true,
            })
        });
    }

    fn end_streams(&mut self) {
        for item in &mut self.items {
            match &mut item.entry {
                Entry::Answer(a) if a.streaming => a.streaming = false,
                Entry::Reasoning(r) if r.streaming => r.streaming = false,
                _ => continue,
            }
            item.cache = None;
        }
    }

    fn card_index(&self, call_id: &str) -> Option<usize> {
        self.items
            .iter()
            .rposition(|i| matches!(&i.entry, Entry::Tool(c) if c.call_id == call_id))
    }

    /// Routes a subagent's event into the transcript of the card of the `task` call that
    /// started it (a new card if that call is not on screen).
    fn subagent(&mut self, parent_call_id: String, number: u64, description: &str, event: Event) {
        let index = match self.card_index(&parent_call_id) {
            Some(index) => index,
            None => {
                let arguments = serde_json::json!({ "description": description });
                self.push(Entry::Tool(ToolCard::new(
                    parent_call_id,
                    SUBAGENT_TOOL.to_string(),
                    ToolRole::Subagent,
                    arguments,
                    ToolStatus::Running,
                )));
                self.items.len() - 1
            }
        };
        if let Some(Entry::Tool(card)) = self.entry_mut(index) {
            let (_, child) = card
                .subagent
                .get_or_insert_with(|| (number, Box::default()));
            child.apply(event);
        }
    }

    /// The transcript of stored messages (after a resume).
    pub(crate) fn from_messages(messages: &[Message]) -> Self {
        let mut t = Self::default();
        for message in messages {
            match message {
                Message::User { content } => t.push(Entry::User(content.clone())),
                Message::Assistant {
                    content,
                    reasoning,
                    tool_calls,
                } => {
                    if !reasoning.trim().is_empty() {
                        t.push(Entry::Reasoning(Reasoning {
                            text: reasoning.clone(),
                            ..Reasoning::default()
                        }));
                    }
                    if !content.trim().is_empty() {
                        t.push(Entry::Answer(Answer {
                            text: content.clone(),
                            streaming: false,
                        }));
                    }
                    for call in tool_calls {
                        let arguments = serde_json::from_str(&call.arguments)
                            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                        t.push(Entry::Tool(ToolCard::new(
                            call.id.clone(),
                            call.name.clone(),
                            ToolRole::of_stored_call(&call.name),
                            arguments,
                            ToolStatus::Unknown,
                        )));
                    }
                }
                Message::Tool {
                    call_id,
                    name,
                    content,
                    is_error,
                } => {
                    let index = match t.card_index(call_id) {
                        Some(i) => i,
                        None => {
                            t.push(Entry::Tool(ToolCard::new(
                                call_id.clone(),
                                name.clone(),
                                ToolRole::of_stored_call(name),
                                Value::Null,
                                ToolStatus::Unknown,
                            )));
                            t.items.len() - 1
                        }
                    };
                    if let Some(Entry::Tool(card)) = t.entry_mut(index) {
                        card.status = if *is_error {
                            ToolStatus::Failed
                        } else {
                            ToolStatus::Ok
                        };
                        card.result = content.clone();
                        if card.role == ToolRole::Search && !*is_error {
                            card.promotion = stored_promotion(content);
                        }
                    }
                }
                Message::Summary { .. } => {
                    t.push(Entry::Info("Earlier messages were summarised.".to_string()))
                }
                Message::Images { content, .. } => t.push(Entry::Info(content.clone())),
            }
        }
        t.turn_start = t.items.len();
        t
    }
}
/// A progress figure, short whatever the server sent.
fn number(n: f64) -> String {
    if n.abs() >= 1e9 {
        format!("{n:.2e}")
    } else if n.fract() == 0.0 {
        format!("{n:.0}")
    } else {
        format!("{n:.1}")
    }
}

/// `3/10 · message`, `40% · message` (a total of 1 or 100 reads as a share), or `3`.
fn progress_text(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let amount = match total {
        Some(total) if total > 0.0 && (total == 1.0 || total == 100.0) => {
            format!("{:.0}%", 100.0 * (progress / total).clamp(0.0, 1.0))
        }
        Some(total) if total > 0.0 => {
            format!("{}/{}", number(progress.clamp(0.0, total)), number(total))
        }
        _ => number(progress),
    };
    match message {
        Some(message) if !message.is_empty() => format!("{amount} · {message}"),
        _ => amount,
    }
}

/// What a stored `tool_search` result loaded, read back from its text (a JSON array of
/// the loaded schemas, then notes), so that a resumed thread's card shows the summary the
/// live one showed rather than the raw JSON.
fn stored_promotion(content: &str) -> Option<Promotion> {
    let first = serde_json::Deserializer::from_str(content)
        .into_iter::<Value>()
        .next()?
        .ok()?;
    let added: Vec<String> = first
        .as_array()?
        .iter()
        .filter_map(|schema| schema["name"].as_str().map(str::to_string))
        .collect();
    (!added.is_empty()).then_some(Promotion {
        added,
        removed: Vec::new(),
        working_set: None,
        catalog_hash: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_short_whatever_the_numbers() {
        assert_eq!(progress_text(3.0, Some(10.0), Some("step")), "3/10 · step");
        assert_eq!(progress_text(0.25, Some(1.0), None), "25%");
        assert_eq!(progress_text(1e308, Some(100.0), None), "100%");
        assert_eq!(progress_text(1e308, Some(1e300), None), "1.00e300/1.00e300");
        assert_eq!(progress_text(2.5, None, Some("")), "2.5");
    }
}

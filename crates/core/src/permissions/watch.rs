//! What the gate does after a call that may write: the guarded files it changed without a
//! rule allowing it are put back (or, where someone can answer, the user is asked whether
//! to keep the change), and the model and the user are told.

use super::guard::{Before, Change, Watched, mentions};
use super::{CallFacts, Permissions};
use crate::base::pending::next_id;
use crate::protocol::{ApprovalAnswer, ApprovalRequest, Event, Preview, ToolCall};
use crate::tools::{Effect, RunScope, ToolContext, ToolOutput};

/// A call the gate let through, with the guarded files as they stood before it when the
/// call may write. Settle it with the call's output; dropped unsettled (the run was
/// interrupted mid-call), it still puts back what the call changed.
#[derive(Debug)]
pub struct Admitted<'a> {
    gate: &'a Permissions,
    before: Option<Before<'a>>,
    name: String,
    /// A file tool's file, as the workspace shows it.
    file: Option<String>,
    /// A command call's text, which may name an instructions file it changes.
    command: Option<String>,
    /// The gate asked the user about an instructions file this call names, and they agreed.
    instructions_approved: bool,
    scope: RunScope,
}

impl<'a> Admitted<'a> {
    pub(super) async fn new(
        gate: &'a Permissions,
        ctx: &ToolContext<'_>,
        call: &ToolCall,
        facts: &CallFacts<'_>,
        instructions_approved: bool,
    ) -> Self {
        let watch = may_write(facts.effect) && !gate.policy.allows_everything();
        let before = match watch {
            true => Some(gate.guarded.before().await),
            false => None,
        };
        let subject = |effect: Effect| {
            (facts.effect == effect)
                .then(|| facts.subject.map(str::to_string))
                .flatten()
        };
        Self {
            gate,
            before,
            name: crate::base::text::printable(&call.name),
            file: subject(Effect::WritesFiles),
            command: subject(Effect::RunsCommands),
            instructions_approved,
            scope: ctx.scope.clone(),
        }
    }

    /// The call's output, with what it changed of the guarded files settled: allowed,
    /// kept by the user, or put back, each said to the model and the user.
    pub async fn settle(
        mut self,
        ctx: &ToolContext<'_>,
        call: &ToolCall,
        mut output: ToolOutput,
    ) -> ToolOutput {
        // Held to the end: no other watched call runs while these changes are settled.
        let Some(before) = self.before.take() else {
            return output;
        };
        let (allowed, rest): (Vec<_>, Vec<_>) =
            before.changes().into_iter().partition(|c| self.allowed(c));
        allowed.iter().for_each(Change::keep);
        let mut pending = Undo(rest);
        pending.0.reverse();
        // Each change stays in `pending` while the user is asked, so that it is put back
        // if the run ends meanwhile.
        while let Some(change) = pending.0.last() {
            let answer = self.ask_to_keep(ctx, call, change).await;
            let Some(change) = pending.0.pop() else {
                break;
            };
            let said = match answer {
                Some(Keep::Yes) => {
                    change.keep();
                    self.scope.add_notice(format!(
                        "kept the change `{}` made to {}",
                        self.name,
                        self.gate.guarded.shown(&change.path)
                    ));
                    continue;
                }
                Some(Keep::No(message)) => message,
                None => None,
            };
            let report = self.put_back(&change);
            output.content.push_str(&format!("\n\n{report}"));
            if let Some(said) = said.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
                output.content.push_str(&format!(" The user says: {said}"));
            }
        }
        drop(before);
        output
    }

    /// Whether a rule or the user allowed `change` to an instructions file: a file tool's
    /// call that names it (the gate asked, or a rule names that path), or a command the
    /// user approved because it names it (only for the workspace's files: a command
    /// naming AGENTS.md does not cover yours or a parent folder's).
    fn allowed(&self, change: &Change<'_>) -> bool {
        let guarded = &self.gate.guarded;
        let named_file = self
            .file
            .as_deref()
            .is_some_and(|file| guarded.names(file, &change.path));
        let named_by_command = self.instructions_approved
            && guarded.in_workspace(&change.path)
            && self
                .command
                .as_deref()
                .is_some_and(|command| mentions(command, &change.path));
        change.watched == Watched::Instructions && (named_file || named_by_command)
    }

    /// Asks the user whether to keep `change`, where someone can answer.
    async fn ask_to_keep(
        &self,
        ctx: &ToolContext<'_>,
        call: &ToolCall,
        change: &Change<'_>,
    ) -> Option<Keep> {
        let approver = self.gate.approver.as_ref()?;
        let shown = crate::base::text::printable(&self.gate.guarded.shown(&change.path));
        let preview = match change.texts() {
            Some((old, new)) => crate::tools::sandbox::unified_diff(&shown, &old, &new),
            None => Preview::Arguments {
                text: format!("{shown} changed (not as text)"),
            },
        };
        let deny = if change.restorable() {
            "deny puts the file back (what stands there now is kept aside)"
        } else {
            "it cannot be put back, so deny only reports it"
        };
        let request = ApprovalRequest {
            id: next_id(),
            tool: self.name.clone(),
            server: None,
            reason: format!(
                "it changed {shown}, which {}, and no rule allows that: allow keeps the \
                 change, {deny}",
                what(change.watched)
            ),
            preview: super::shown(preview),
            always: None,
        };
        let waiter = approver.register(request.id);
        (ctx.events)(Event::ApprovalRequested {
            turn: ctx.turn,
            call_id: call.id.clone(),
            request,
        });
        Some(match waiter.answer().await {
            Some(ApprovalAnswer::Once | ApprovalAnswer::Always) => Keep::Yes,
            Some(ApprovalAnswer::Deny { message }) => Keep::No(message),
            None => Keep::No(None),
        })
    }

    /// Puts `change` back; says what happened to the user (a notice) and returns what to
    /// tell the model.
    fn put_back(&self, change: &Change<'_>) -> String {
        let shown = crate::base::text::printable(&self.gate.guarded.shown(&change.path));
        let what = what(change.watched);
        let how = match change.watched {
            Watched::Instructions => {
                "ask the user to change it, or write it with write_file so that they are asked"
            }
            Watched::Startup => "ask the user to edit it",
        };
        match change.undo() {
            Ok(aside) => {
                let kept = aside
                    .map(|aside| {
                        format!(" (what the call left there is kept as {})", aside.display())
                    })
                    .unwrap_or_default();
                self.scope.add_notice(format!(
                    "`{}` changed {shown}, which no rule allows: antler put it back as it \
                     was{kept}",
                    self.name
                ));
                tracing::warn!("`{}` changed {shown}; put back as it was{kept}", self.name);
                format!(
                    "[antler: this call changed {shown}, which {what}; no rule allows that, so \
                     antler put it back as it was. Do not try again: {how}.]"
                )
            }
            Err(err) => {
                self.scope.add_notice(format!(
                    "`{}` changed {shown}, which no rule allows, and antler could not put it \
                     back ({err}): check it before the next session",
                    self.name
                ));
                format!(
                    "[antler: this call changed {shown}, which {what}; no rule allows that. \
                     Do not try again: {how}.]"
                )
            }
        }
    }
}

impl Drop for Admitted<'_> {
    /// A call that never finished (interrupted) is given no chance to keep a change: what
    /// it changed is put back.
    fn drop(&mut self) {
        let Some(before) = self.before.take() else {
            return;
        };
        for change in before.changes() {
            if self.allowed(&change) {
                change.keep();
            } else {
                self.put_back(&change);
            }
        }
    }
}

/// Changes still to settle: put back if the settling is dropped (the run was interrupted
/// while the user was asked).
struct Undo<'a>(Vec<Change<'a>>);

impl Drop for Undo<'_> {
    fn drop(&mut self) {
        for change in &self.0 {
            if let Err(err) = change.undo() {
                tracing::warn!("{} could not be put back: {err}", change.path.display());
            }
        }
    }
}

/// The user's answer to "keep this change?".
enum Keep {
    Yes,
    /// No, with a message for the model.
    No(Option<String>),
}

/// Why a watched file matters, in words.
fn what(watched: Watched) -> &'static str {
    match watched {
        Watched::Instructions => "instructs every later session in this project",
        Watched::Startup => "configures antler itself and runs at its next start",
    }
}

/// Whether a call of this effect may change files: reads, searches and the web do not,
/// nor a trusted server's tool it marks read-only.
fn may_write(effect: Effect) -> bool {
    match effect {
        Effect::ReadOnly | Effect::Network => false,
        Effect::Server {
            read_only_hint,
            destructive_hint,
            trusted,
        } => !(trusted && read_only_hint && !destructive_hint),
        Effect::WritesFiles | Effect::RunsCommands | Effect::Undeclared => true,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::config::{PermissionsConfig, parse_rule_list};
    use crate::permissions::testing::{Fake, context};
    use crate::permissions::{Approvals, Guarded, Policy};

    /// A command tool the policy allows by name.
    fn shell() -> Fake {
        Fake::new("sh", "Runs a command.", Effect::RunsCommands, "command")
    }

    fn gate(guarded: &Guarded, approver: bool) -> Permissions {
        let config = PermissionsConfig {
            allow: parse_rule_list(&[String::from("sh")]).unwrap(),
            ..Default::default()
        };
        Permissions::new(
            Policy::new(config, Vec::new(), Vec::new(), false),
            None,
            approver.then(Approvals::default),
        )
        .watching(guarded.clone())
    }

    /// Checks a call, lets it plant `planted` in `file`, settles it answering any question
    /// with `answer`; the output and the events.
    async fn planting(
        gate: &Permissions,
        file: &std::path::Path,
        answer: Option<ApprovalAnswer>,
    ) -> (ToolOutput, Vec<Event>) {
        let seen = Mutex::new(Vec::new());
        let approver = gate.approver.clone();
        let emit = |event: Event| {
            if let (Event::ApprovalRequested { request, .. }, Some(approver), Some(answer)) =
                (&event, &approver, &answer)
            {
                approver.answer(request.id, answer.clone());
            }
            seen.lock().unwrap().push(event);
        };
        let ctx = context("c1", &emit, RunScope::default());
        let call = shell().call("c1", "echo x >> AGENT''S.md");
        let tool = shell();
        let admitted = gate.check(&ctx, &(&call).into(), &tool).await.unwrap();
        std::fs::write(file, "planted").unwrap();
        let output = admitted.settle(&ctx, &call, ToolOutput::ok("ran")).await;
        (output, seen.into_inner().unwrap())
    }

    #[tokio::test]
    async fn where_someone_answers_the_user_decides_whether_a_change_stays() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join("AGENTS.md");
        let guarded = Guarded::new(vec![(agents.clone(), Watched::Instructions)], dir.path());
        let gate = gate(&guarded, true);
        std::fs::write(&agents, "mine").unwrap();
        let (output, events) = planting(&gate, &agents, Some(ApprovalAnswer::Once)).await;
        assert_eq!(std::fs::read_to_string(&agents).unwrap(), "planted");
        assert_eq!(output.content, "ran");
        let Some(Event::ApprovalRequested { request, .. }) = events.first() else {
            panic!("{events:?}");
        };
        assert!(
            request.reason.contains("it changed AGENTS.md"),
            "{}",
            request.reason
        );
        assert!(
            matches!(&request.preview, Preview::Diff { diff, .. } if diff.contains("+planted"))
        );
        assert_eq!(request.always, None);

        std::fs::write(&agents, "mine").unwrap();
        let deny = ApprovalAnswer::Deny {
            message: Some(String::from("leave it")),
        };
        let (output, _) = planting(&gate, &agents, Some(deny)).await;
        assert_eq!(std::fs::read_to_string(&agents).unwrap(), "mine");
        assert!(
            output.content.contains("antler put it back as it was")
                && output.content.ends_with("The user says: leave it"),
            "{}",
            output.content
        );
    }

    #[tokio::test]
    async fn where_nobody_answers_a_change_is_put_back_and_a_dropped_call_too() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join("AGENTS.md");
        let guarded = Guarded::new(vec![(agents.clone(), Watched::Instructions)], dir.path());
        let gate = gate(&guarded, false);
        std::fs::write(&agents, "mine").unwrap();
        let (output, events) = planting(&gate, &agents, None).await;
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(std::fs::read_to_string(&agents).unwrap(), "mine");
        assert!(
            output.content.contains("Do not try again"),
            "{}",
            output.content
        );

        // Interrupted mid-call: never settled, still put back.
        let emit = |_: Event| {};
        let scope = RunScope::default();
        let ctx = context("c2", &emit, scope.clone());
        let call = shell().call("c2", "make");
        let admitted = gate.check(&ctx, &(&call).into(), &shell()).await.unwrap();
        std::fs::write(&agents, "planted").unwrap();
        drop(admitted);
        assert_eq!(std::fs::read_to_string(&agents).unwrap(), "mine");
        assert!(scope.take_notices()[0].contains("put it back"));
    }

    /// Approving a command that names AGENTS.md covers the workspace's AGENTS.md only: what
    /// it changed of yours (or a parent folder's) is asked about again.
    #[tokio::test]
    async fn an_approved_command_covers_only_the_instructions_it_names_in_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        let user = dir.path().join("config");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::create_dir_all(&user).unwrap();
        let (ours, yours) = (workspace.join("AGENTS.md"), user.join("AGENTS.md"));
        std::fs::write(&ours, "ours").unwrap();
        std::fs::write(&yours, "yours").unwrap();
        let guarded = Guarded::new(
            vec![
                (ours.clone(), Watched::Instructions),
                (yours.clone(), Watched::Instructions),
            ],
            &workspace,
        );
        let gate =
            Permissions::new(Policy::default(), None, Some(Approvals::default())).watching(guarded);
        let asked = Mutex::new(Vec::new());
        let approver = gate.approver.clone().unwrap();
        let emit = |event: Event| {
            if let Event::ApprovalRequested { request, .. } = &event {
                let mut asked = asked.lock().unwrap();
                let answer = match asked.is_empty() {
                    true => ApprovalAnswer::Once,
                    false => ApprovalAnswer::Deny { message: None },
                };
                asked.push(request.reason.clone());
                approver.answer(request.id, answer);
            }
        };
        let ctx = context("c1", &emit, RunScope::default());
        let call = shell().call("c1", "echo x >> AGENTS.md && make");
        let admitted = gate.check(&ctx, &(&call).into(), &shell()).await.unwrap();
        std::fs::write(&ours, "ours, edited").unwrap();
        std::fs::write(&yours, "planted").unwrap();
        admitted.settle(&ctx, &call, ToolOutput::ok("ran")).await;
        assert_eq!(std::fs::read_to_string(&ours).unwrap(), "ours, edited");
        assert_eq!(std::fs::read_to_string(&yours).unwrap(), "yours");
        let asked = asked.into_inner().unwrap();
        assert_eq!(asked.len(), 2, "{asked:?}");
        let yours = std::fs::canonicalize(&yours).unwrap();
        assert!(
            asked[1].contains(&yours.display().to_string()),
            "{}",
            asked[1]
        );
    }
}

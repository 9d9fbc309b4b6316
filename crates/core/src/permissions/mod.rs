//! Whether a tool call may run: the policy of config.yaml and the command line
//! (`policy`), the user's "always" answers per project pinned to the tool's schema
//! (`store`), what a shell command is made of (`command`), the call gate (`gate`): the
//! policy, then the gates after it (hooks), then [`Permissions::resolve`], which the runner
//! awaits before every call: it runs, it is refused with a tool error the model
//! reads, or it waits for the user's answer (the chat), announced as
//! [`Event::ApprovalRequested`] and answered through [`Approvals`].

pub(crate) mod command;
mod gate;
pub(crate) mod guard;
pub(crate) mod policy;
pub(crate) mod store;
#[cfg(test)]
mod testing;
mod watch;

use std::path::PathBuf;

use serde_json::Value;

use crate::base::pending::{Pending, next_id};
use crate::protocol::{ApprovalAnswer, ApprovalRequest, Denial, Event, Preview, ToolCall};
use crate::tools::{Effect, PreparedCall, Tool, ToolContext, ToolOutput, ToolSource};
pub use gate::{Admission, CallGate, CallGates, GateFuture};
pub use guard::{Guarded, Watched};
pub use policy::{CallFacts, Policy, Verdict};
pub use store::{Approval, ApprovalStore, schema_hash};
pub use watch::Admitted;

/// Where the chat's answers to approval requests arrive, by request id.
pub type Approvals = Pending<ApprovalAnswer>;

/// The longest command or argument text an approval request shows.
const MAX_SHOWN_CHARS: usize = 8_000;

/// A session's permission gate.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    policy: Policy,
    /// The "always" answers, with the project they are kept for (none: no data folder).
    store: Option<(ApprovalStore, PathBuf)>,
    /// Who answers a call that must ask (none in `-p`: it is refused).
    approver: Option<Approvals>,
    /// The files no call may change unasked, checked around every call that may write.
    guarded: Guarded,
}

impl Permissions {
    /// A gate with `policy`, the approvals of `project` in `store`, and the chat's broker.
    pub fn new(
        policy: Policy,
        store: Option<(ApprovalStore, PathBuf)>,
        approver: Option<Approvals>,
    ) -> Self {
        Self {
            policy,
            store,
            approver,
            guarded: Guarded::default(),
        }
    }

    /// The gate with `guarded` watched around the calls that may write.
    pub fn watching(self, guarded: Guarded) -> Self {
        Self { guarded, ..self }
    }

    /// A gate that lets every call run (tests, and agents built without a session).
    pub fn allow_all() -> Self {
        Self::new(
            Policy::new(Default::default(), Vec::new(), Vec::new(), true),
            None,
            None,
        )
    }

    /// Lets `call` of `tool` run, or says why not as the tool error the model gets: the
    /// policy alone, with no other gate (see [`CallGates::admit`] for the whole chain).
    pub async fn check(
        &self,
        ctx: &ToolContext<'_>,
        call: &PreparedCall,
        tool: &dyn Tool,
    ) -> Result<Admitted<'_>, ToolOutput> {
        let admission = Admission::new(self.verdict(call, tool));
        if let Verdict::Deny { reason } = &admission.verdict {
            return Err(refuse(ctx, call, Denial::Rule, reason, None));
        }
        self.resolve(ctx, call, tool, admission).await
    }

    /// What the policy alone says about `call`.
    pub fn verdict(&self, call: &PreparedCall, tool: &dyn Tool) -> Verdict {
        let subject = call.value().and_then(|arguments| tool.subject(arguments));
        self.policy.decide(&facts(call, tool, subject.as_deref()))
    }

    /// Settles what the gates decided: a call that must still ask waits for the user's
    /// answer (a dropped call withdraws its question); a call that may write is admitted
    /// with the guarded files fingerprinted: hand its output to [`Admitted::settle`].
    pub async fn resolve(
        &self,
        ctx: &ToolContext<'_>,
        call: &PreparedCall,
        tool: &dyn Tool,
        admission: Admission,
    ) -> Result<Admitted<'_>, ToolOutput> {
        let arguments = call.value().unwrap_or(&Value::Null);
        let subject = tool.subject(arguments);
        let facts = facts(call, tool, subject.as_deref());
        let asked = self
            .decide(ctx, call, tool, arguments, &facts, admission)
            .await?;
        // A change the gate itself asked about (the call names an instructions file) was
        // approved; any other is checked once the call is done.
        let instructions_approved = asked && self.policy.names_instructions(&facts);
        Ok(Admitted::new(self, ctx, call, &facts, instructions_approved).await)
    }

    /// Whether `facts`' call runs: `Ok(true)` when the user (or a program on their
    /// behalf) approved it.
    async fn decide(
        &self,
        ctx: &ToolContext<'_>,
        call: &ToolCall,
        tool: &dyn Tool,
        arguments: &Value,
        facts: &CallFacts<'_>,
        admission: Admission,
    ) -> Result<bool, ToolOutput> {
        let server = facts.server;
        let (reason, by_rule) = match (admission.verdict, admission.ask) {
            (Verdict::Deny { reason }, _) => {
                return Err(refuse(ctx, call, Denial::Rule, &reason, None));
            }
            // A gate that asks makes the call ask, with no "always" to offer.
            (_, Some(reason)) => (reason, true),
            (Verdict::Allow, None) => return Ok(false),
            // A program's approval stands for the user's where the policy would ask by
            // default, never where a rule (`permissions.ask`, an instructions file) asks.
            (Verdict::Ask { by_rule: false, .. }, None) if admission.approved_by.is_some() => {
                return Ok(true);
            }
            (Verdict::Ask { reason, by_rule }, None) => (reason, by_rule),
        };
        if !by_rule && self.approved(tool, facts) {
            return Ok(false);
        }
        let Some(approver) = &self.approver else {
            return Err(refuse(ctx, call, Denial::NoApprover, &reason, None));
        };
        let always = (!by_rule).then(|| always_label(facts)).flatten();
        let request = ApprovalRequest {
            id: next_id(),
            tool: crate::base::text::printable(&call.name),
            server: server.map(crate::base::text::printable),
            reason: reason.clone(),
            preview: shown(preview(tool, arguments, facts).await),
            always,
        };
        let waiter = approver.register(request.id);
        (ctx.events)(Event::ApprovalRequested {
            turn: ctx.turn,
            call_id: call.id.clone(),
            request: request.clone(),
        });
        let message = format!(
            "antler needs your approval for `{}`: {reason}",
            request.tool
        );
        let answer = ctx
            .scope
            .waiting(ctx.events, "permission_prompt", &message, waiter.answer())
            .await;
        match answer {
            Some(ApprovalAnswer::Once) => Ok(true),
            // "Always" counts only where it was offered (never for an `ask` rule's call).
            Some(ApprovalAnswer::Always) if request.always.is_some() => {
                self.remember(ctx, tool, facts);
                Ok(true)
            }
            Some(ApprovalAnswer::Always) => Ok(true),
            Some(ApprovalAnswer::Deny { message }) => {
                Err(refuse(ctx, call, Denial::User, &reason, message.as_deref()))
            }
            None => Err(refuse(ctx, call, Denial::User, &reason, None)),
        }
    }

    /// Whether an "always" answer kept for this project covers the call (same tool, same
    /// schema, and for a command the same leading words).
    fn approved(&self, tool: &dyn Tool, facts: &CallFacts<'_>) -> bool {
        let Some((store, project)) = &self.store else {
            return false;
        };
        let approvals = match store.approvals(project) {
            Ok(approvals) => approvals,
            Err(err) => {
                tracing::warn!("approvals are not used: {err}");
                return false;
            }
        };
        let hash = schema_hash(tool.info());
        approvals.iter().any(|a| {
            a.tool == facts.name
                && a.schema == hash
                && match (&a.prefix, facts.effect, facts.subject) {
                    (Some(prefix), Effect::RunsCommands, Some(command)) => {
                        command::starts_with(command, prefix)
                    }
                    (None, effect, _) => effect != Effect::RunsCommands,
                    _ => false,
                }
        })
    }

    /// Keeps an "always" answer; a failure is a notice, the call still runs.
    fn remember(&self, ctx: &ToolContext<'_>, tool: &dyn Tool, facts: &CallFacts<'_>) {
        let Some((store, project)) = &self.store else {
            return;
        };
        let prefix = match facts.effect {
            Effect::RunsCommands => match facts.subject.and_then(command::prefix) {
                Some(prefix) => Some(prefix),
                None => return,
            },
            _ => None,
        };
        let approval = Approval {
            tool: facts.name.to_string(),
            schema: schema_hash(tool.info()),
            prefix,
            approved_at: crate::base::clock::now_unix(),
        };
        if let Err(err) = store.add(project, approval) {
            ctx.scope
                .add_notice(format!("the approval was not kept for next time: {err}"));
        }
    }
}

/// The facts of `call` the policy reads.
fn facts<'a>(call: &'a ToolCall, tool: &'a dyn Tool, subject: Option<&'a str>) -> CallFacts<'a> {
    CallFacts {
        name: &call.name,
        subject,
        effect: tool.effect(),
        server: match &tool.info().source {
            ToolSource::Mcp { server, .. } => Some(server.as_str()),
            _ => None,
        },
    }
}

/// What "allow always" covers, in words; `None` when it cannot be offered (a command that
/// is not simple).
fn always_label(facts: &CallFacts<'_>) -> Option<String> {
    let name = crate::base::text::printable(facts.name);
    match facts.effect {
        Effect::RunsCommands => {
            let prefix = facts.subject.and_then(command::prefix)?;
            Some(format!(
                "`{name}` commands starting `{}` in this project",
                crate::base::text::printable(&prefix.join(" "))
            ))
        }
        _ => Some(format!(
            "every call of `{name}` in this project, until its schema changes"
        )),
    }
}

/// What the call would do: the tool's own preview, the command, or the arguments.
async fn preview(tool: &dyn Tool, arguments: &Value, facts: &CallFacts<'_>) -> Preview {
    if let Some(preview) = tool.preview(arguments).await {
        return preview;
    }
    match (facts.effect, facts.subject) {
        (Effect::RunsCommands, Some(command)) => Preview::Command {
            command: command.to_string(),
        },
        _ => Preview::Arguments {
            text: serde_json::to_string_pretty(arguments).unwrap_or_default(),
        },
    }
}

/// `preview` escaped and bounded for a terminal.
fn shown(preview: Preview) -> Preview {
    let bound = |text: &str| {
        let mut shown: String = text.chars().take(MAX_SHOWN_CHARS).collect();
        if shown.len() < text.len() {
            shown.push_str("\n…");
        }
        crate::base::text::printable_lines(&shown)
    };
    match preview {
        Preview::Command { command } => Preview::Command {
            command: bound(&command),
        },
        Preview::Diff { path, diff } => Preview::Diff {
            path: crate::base::text::printable(&path),
            diff: bound(&diff),
        },
        Preview::Arguments { text } => Preview::Arguments { text: bound(&text) },
    }
}

/// The tool error for a refused call, with its event and notice.
pub fn refuse(
    ctx: &ToolContext<'_>,
    call: &ToolCall,
    cause: Denial,
    reason: &str,
    message: Option<&str>,
) -> ToolOutput {
    let name = crate::base::text::printable(&call.name);
    let (for_model, for_user) = match cause {
        Denial::Rule => (
            format!(
                "Error: `{name}` may not run here ({reason}); the call was not made. Do not \
                 retry it: do without it, or tell the user what you wanted to do."
            ),
            format!("refused `{name}`: {reason}"),
        ),
        Denial::NoApprover => (
            format!(
                "Error: `{name}` needs the user's approval ({reason}), and nobody can \
                 approve calls in this run; the call was not made. Do not retry it: do \
                 without it, or tell the user what you wanted to do."
            ),
            format!(
                "refused `{name}` ({reason}): it needs approval, which a run with -p cannot \
                 ask for; allow it with --allowed-tools {name}, permissions.allow in \
                 config.yaml, or --permission-mode allow-all"
            ),
        ),
        Denial::Hook => (
            format!("Error: a hook refused this call of `{name}`; it was not made. {reason}"),
            format!("a hook refused `{name}`: {reason}"),
        ),
        Denial::User => {
            let said = message
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(|m| format!(" The user says: {m}"))
                .unwrap_or_default();
            (
                format!("Error: the user declined this call of `{name}`; it was not made.{said}"),
                format!("declined `{name}`"),
            )
        }
    };
    (ctx.events)(Event::PermissionDenied {
        turn: ctx.turn,
        call_id: call.id.clone(),
        name: name.clone(),
        cause,
        reason: for_user.clone(),
    });
    ctx.scope.add_notice(for_user);
    ToolOutput::error(for_model)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::testing::{Fake, context};
    use super::*;
    use crate::config::{PermissionsConfig, parse_rule_list};
    use crate::tools::RunScope;

    /// A tool that writes, named as a hostile server might name it.
    fn writer(description: &str) -> Fake {
        Fake::new("write\u{1b}[2J", description, Effect::WritesFiles, "path")
    }

    /// Runs `check`, answering every request with `answer` (`None`: nobody answers, so a
    /// request fails the test); the events seen.
    async fn checked(
        gate: &Permissions,
        tool: &Fake,
        path: &str,
        answer: Option<ApprovalAnswer>,
    ) -> (Result<(), ToolOutput>, Vec<Event>) {
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
        // A request nobody answers would wait for ever: that is a failure here.
        let result = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            gate.check(&ctx, &(&tool.call("c1", path)).into(), tool),
        )
        .await
        .expect("the check waited for an answer that never came")
        .map(drop);
        (result, seen.into_inner().unwrap())
    }

    fn gate(dir: &std::path::Path, ask: &str, approver: bool) -> Permissions {
        let config = PermissionsConfig {
            ask: parse_rule_list(&[ask.to_string()]).unwrap(),
            ..Default::default()
        };
        Permissions::new(
            Policy::new(config, Vec::new(), Vec::new(), false),
            Some((ApprovalStore::in_dir(dir), dir.join("project"))),
            approver.then(Approvals::default),
        )
    }

    #[tokio::test]
    async fn without_an_approver_a_call_that_asks_is_refused_with_an_event() {
        let dir = tempfile::tempdir().unwrap();
        let (result, events) =
            checked(&gate(dir.path(), "none", false), &writer("w"), "a", None).await;
        let refused = result.unwrap_err();
        assert!(refused.is_error && refused.content.contains("needs the user's approval"));
        assert!(!refused.content.contains('\u{1b}'), "{}", refused.content);
        assert!(matches!(
            &events[..],
            [Event::PermissionDenied {
                cause: Denial::NoApprover,
                ..
            }]
        ));
    }

    #[tokio::test]
    async fn always_is_kept_only_where_offered_and_lapses_with_the_schema() {
        let dir = tempfile::tempdir().unwrap();
        let gate = gate(dir.path(), "write*(secret/*)", true);
        let tool = writer("writes");
        // An `ask` rule's call offers no "always"; an answer that says so anyway keeps nothing.
        let (result, events) =
            checked(&gate, &tool, "secret/x", Some(ApprovalAnswer::Always)).await;
        assert!(result.is_ok());
        let Event::ApprovalRequested { request, .. } = &events[0] else {
            panic!("{events:?}");
        };
        assert_eq!(request.always, None);
        assert!(!request.tool.contains('\u{1b}'), "{}", request.tool);
        let (_, events) = checked(
            &gate,
            &tool,
            "notes",
            Some(ApprovalAnswer::Deny { message: None }),
        )
        .await;
        assert!(
            matches!(events[0], Event::ApprovalRequested { .. }),
            "nothing was kept for the tool"
        );
        // Offered and given: kept, for this tool as it is.
        let (result, _) = checked(&gate, &tool, "notes", Some(ApprovalAnswer::Always)).await;
        assert!(result.is_ok());
        let (result, events) = checked(&gate, &tool, "other", None).await;
        assert!(result.is_ok() && events.is_empty(), "{events:?}");
        let (_, events) = checked(
            &gate,
            &tool,
            "secret/y",
            Some(ApprovalAnswer::Deny { message: None }),
        )
        .await;
        assert!(!events.is_empty(), "an ask rule still asks");
        let changed = writer("writes, and mails your keys");
        let (result, events) = checked(
            &gate,
            &changed,
            "other",
            Some(ApprovalAnswer::Deny { message: None }),
        )
        .await;
        assert!(
            result.is_err(),
            "a changed tool asks again (and was denied)"
        );
        assert!(matches!(events[0], Event::ApprovalRequested { .. }));
    }

    #[tokio::test]
    async fn a_denial_tells_the_model_what_the_user_said() {
        let dir = tempfile::tempdir().unwrap();
        let answer = ApprovalAnswer::Deny {
            message: Some(String::from("use the other file")),
        };
        let (result, events) = checked(
            &gate(dir.path(), "none", true),
            &writer("w"),
            "a",
            Some(answer),
        )
        .await;
        let refused = result.unwrap_err();
        assert!(
            refused
                .content
                .contains("The user says: use the other file")
        );
        assert!(events.iter().any(|e| matches!(
            e,
            Event::PermissionDenied {
                cause: Denial::User,
                ..
            }
        )));
    }
}

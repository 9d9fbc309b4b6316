//! What a hook said, read as Claude Code's hooks reference has it: exit 0 goes on (its
//! stdout may be a JSON object with `decision`/`reason`, `continue`/`stopReason`,
//! `systemMessage` and `hookSpecificOutput`; plain stdout is context for the events that
//! take it), exit 2 blocks with stderr as the reason, anything else is an error the user
//! sees while the run goes on.

use serde_json::Value;

use super::exec::{Ending, Finished};
use crate::protocol::HookDecision;

/// The most characters of context one hook may add for the model.
pub(crate) const MAX_CONTEXT_CHARS: usize = 10_000;

/// One hook's answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// What it decided, if anything.
    pub decision: Option<HookDecision>,
    /// Why (for a refusal: what the model reads).
    pub reason: Option<String>,
    /// `continue: false`: the run ends, with this reason.
    pub stop: Option<String>,
    /// Context for the model.
    pub context: Option<String>,
    /// `updatedInput`: the tool call's new arguments.
    pub updated_input: Option<Value>,
    /// `systemMessage`: a line for the user.
    pub message: Option<String>,
    /// What went wrong with the hook (for the user; the run goes on).
    pub error: Option<String>,
    /// Its exit status, when it exited.
    pub exit_code: Option<i32>,
}

/// Reads `finished`; `plain_context`: plain stdout is context (UserPromptSubmit,
/// SessionStart).
pub(crate) fn read(finished: &Finished, plain_context: bool) -> Reply {
    if let Some(reply) = unsuccessful(&finished.ending, finished.stderr.trim()) {
        return reply;
    }
    let mut reply = Reply {
        exit_code: Some(0),
        ..Reply::default()
    };
    let stdout = finished.stdout.trim();
    if stdout.is_empty() {
        return reply;
    }
    if !stdout.starts_with('{') {
        if plain_context {
            reply.context = Some(bounded(stdout));
        }
        return reply;
    }
    if finished.cut {
        reply.error = Some(String::from(
            "printed more than 1 MiB: its JSON was not read",
        ));
        return reply;
    }
    match serde_json::from_str::<Value>(stdout) {
        Ok(json @ Value::Object(_)) => {
            if let Err(problem) = json_reply(&json, &mut reply) {
                reply = malformed(&json, problem);
            }
        }
        Ok(_) | Err(_) => {
            reply.error = Some(String::from(
                "printed text that starts like JSON but is not a JSON object; it was ignored",
            ));
        }
    }
    reply
}

/// The reply of a hook that did not exit 0: exit 2 blocks, with stderr as the reason; any
/// other ending is the hook's own error, which decides nothing. `None` for exit 0.
fn unsuccessful(ending: &Ending, stderr: &str) -> Option<Reply> {
    let mut reply = Reply::default();
    match ending {
        Ending::Exited(0) => return None,
        Ending::Exited(2) => {
            reply.exit_code = Some(2);
            reply.decision = Some(HookDecision::Block);
            reply.reason = Some(if stderr.is_empty() {
                String::from("(the hook gave no reason)")
            } else {
                bounded(stderr)
            });
        }
        Ending::Exited(code) => {
            reply.exit_code = Some(*code);
            reply.error = Some(with_stderr(format!("exited with status {code}"), stderr));
        }
        Ending::Signaled => {
            reply.error = Some(with_stderr(String::from("was killed by a signal"), stderr));
        }
        Ending::TimedOut => {
            reply.error = Some(String::from(
                "ran past its timeout and was ended with its process group",
            ));
        }
        Ending::NotStarted(why) => reply.error = Some(why.clone()),
    }
    Some(reply)
}

/// A malformed reply that still says no is taken as no: a hook meant to refuse never lets
/// a call through by a typo elsewhere in its output.
fn malformed(json: &Value, problem: String) -> Reply {
    let refuses = json.get("decision").and_then(Value::as_str) == Some("block")
        || json
            .pointer("/hookSpecificOutput/permissionDecision")
            .and_then(Value::as_str)
            == Some("deny");
    Reply {
        exit_code: Some(0),
        decision: refuses.then_some(HookDecision::Block),
        reason: refuses.then(|| format!("the hook refused, but {problem}")),
        error: Some(problem),
        ..Reply::default()
    }
}

fn json_reply(json: &Value, reply: &mut Reply) -> Result<(), String> {
    let text = |value: &Value, key: &str| -> Result<Option<String>, String> {
        match value.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(bounded(s))),
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    };
    if json.get("continue") == Some(&Value::Bool(false)) {
        reply.stop =
            Some(text(json, "stopReason")?.unwrap_or_else(|| String::from("a hook ended the run")));
    }
    reply.message = text(json, "systemMessage")?;
    reply.reason = text(json, "reason")?;
    reply.decision = match text(json, "decision")?.as_deref() {
        None => None,
        Some("block") => Some(HookDecision::Block),
        // Claude Code's older words for PreToolUse.
        Some("approve") => Some(HookDecision::Allow),
        Some(other) => {
            return Err(format!(
                "`decision` must be \"block\", not \"{}\"",
                crate::base::text::printable(other)
            ));
        }
    };
    let Some(specific) = json.get("hookSpecificOutput") else {
        return Ok(());
    };
    if !specific.is_object() {
        return Err(String::from("`hookSpecificOutput` must be an object"));
    }
    reply.context = text(specific, "additionalContext")?;
    if let Some(decision) = text(specific, "permissionDecision")? {
        reply.decision = Some(match decision.as_str() {
            "allow" => HookDecision::Allow,
            "deny" => HookDecision::Deny,
            "ask" => HookDecision::Ask,
            other => {
                return Err(format!(
                    "`permissionDecision` must be \"allow\", \"deny\" or \"ask\", not \"{}\"",
                    crate::base::text::printable(other)
                ));
            }
        });
        if let Some(reason) = text(specific, "permissionDecisionReason")? {
            reply.reason = Some(reason);
        }
    }
    match specific.get("updatedInput") {
        None | Some(Value::Null) => {}
        Some(input @ Value::Object(_)) => reply.updated_input = Some(input.clone()),
        Some(_) => return Err(String::from("`updatedInput` must be an object")),
    }
    Ok(())
}

fn with_stderr(what: String, stderr: &str) -> String {
    match stderr.is_empty() {
        true => what,
        false => format!("{what}: {}", bounded(stderr)),
    }
}

/// At most [`MAX_CONTEXT_CHARS`] characters, invisible characters dropped.
fn bounded(text: &str) -> String {
    let text = crate::base::text::without_invisible(text.trim());
    match text.char_indices().nth(MAX_CONTEXT_CHARS) {
        None => text,
        Some((at, _)) => format!("{}\n[cut: the hook printed more]", &text[..at]),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    fn finished(ending: Ending, stdout: &str, stderr: &str) -> Finished {
        Finished {
            ending,
            stdout: stdout.into(),
            stderr: stderr.into(),
            cut: false,
            duration: Duration::ZERO,
        }
    }

    #[test]
    fn exit_two_blocks_with_stderr_and_other_statuses_are_errors() {
        let reply = read(
            &finished(Ending::Exited(2), "ignored", "no push to main\n"),
            false,
        );
        assert_eq!(reply.decision, Some(HookDecision::Block));
        assert_eq!(reply.reason.as_deref(), Some("no push to main"));
        let reply = read(&finished(Ending::Exited(1), "", "boom"), false);
        assert_eq!(
            (reply.decision, reply.error.as_deref()),
            (None, Some("exited with status 1: boom"))
        );
        assert!(
            read(&finished(Ending::TimedOut, "", ""), false)
                .error
                .is_some()
        );
    }

    #[test]
    fn json_output_as_claude_code_writes_it() {
        let out = json!({
            "continue": true,
            "systemMessage": "checked",
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "not on main",
                "updatedInput": {"command": "ls"},
                "additionalContext": "branch: main"
            }
        })
        .to_string();
        let reply = read(&finished(Ending::Exited(0), &out, ""), false);
        assert_eq!(reply.decision, Some(HookDecision::Deny));
        assert_eq!(reply.reason.as_deref(), Some("not on main"));
        assert_eq!(reply.updated_input, Some(json!({"command": "ls"})));
        assert_eq!(reply.context.as_deref(), Some("branch: main"));
        assert_eq!(reply.message.as_deref(), Some("checked"));
        assert_eq!(reply.stop, None);
        let stop = read(
            &finished(
                Ending::Exited(0),
                r#"{"continue":false,"stopReason":"enough"}"#,
                "",
            ),
            false,
        );
        assert_eq!(stop.stop.as_deref(), Some("enough"));
    }

    #[test]
    fn plain_stdout_is_context_only_where_the_event_takes_it_and_bad_json_is_an_error() {
        let plain = finished(Ending::Exited(0), "on branch main\n", "");
        assert_eq!(
            read(&plain, true).context.as_deref(),
            Some("on branch main")
        );
        assert_eq!(read(&plain, false).context, None);
        let broken = read(&finished(Ending::Exited(0), "{not json", ""), true);
        assert!(broken.error.is_some() && broken.context.is_none() && broken.decision.is_none());
        let wrong = read(
            &finished(
                Ending::Exited(0),
                r#"{"hookSpecificOutput":{"permissionDecision":"yes"}}"#,
                "",
            ),
            false,
        );
        assert!(wrong.decision.is_none() && wrong.error.unwrap().contains("permissionDecision"));
        let typo = read(
            &finished(
                Ending::Exited(0),
                r#"{"systemMessage": 1, "hookSpecificOutput":{"permissionDecision":"deny"}}"#,
                "",
            ),
            false,
        );
        assert_eq!(
            typo.decision,
            Some(HookDecision::Block),
            "a malformed no is still no"
        );
    }
}

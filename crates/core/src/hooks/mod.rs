//! Hooks: the user's own programs around every step, in Claude Code's shape, so that
//! existing hook scripts work unchanged. `hooks:` in config.yaml (and, with
//! `hooks.import_claude`, Claude Code's settings files) names commands per event; each
//! gets the event as a JSON object on stdin and answers by its exit status and stdout
//! ([`reply`]). Tool events run on the call gate ([`gate`]); the runner, the subagent
//! tool and the session fire the others.
//!
//! A hook command only ever comes from a configuration file the user wrote or trusted:
//! nothing a tool returns or the model says becomes a hook, and no hook's command is
//! built from an event's data (the data goes on stdin, never into the command line).

pub(crate) mod claude;
mod exec;
pub(crate) mod gate;
pub(crate) mod reply;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::config::{HookGroup, HooksConfig, MatcherItem, matcher_items};
use crate::permissions::command;
use crate::protocol::{Event, HookDecision};
use crate::tools::ToolSource;
pub use reply::Reply;

/// How long a hook may run when its entry gives no timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where hook events go.
pub type HookEvents<'a> = &'a (dyn Fn(Event) + Send + Sync);

/// The moments a hook can run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HookEvent {
    /// A session started or resumed a thread.
    SessionStart,
    /// A session ended.
    SessionEnd,
    /// The user's message is about to go to the model.
    UserPromptSubmit,
    /// A tool call is about to run.
    PreToolUse,
    /// A tool call ran.
    PostToolUse,
    /// The model answered; the run would end.
    Stop,
    /// A subagent answered.
    SubagentStop,
    /// Older messages are about to be summarised.
    PreCompact,
    /// Something waits for the user (an approval, a server's question).
    Notification,
}

impl HookEvent {
    /// Every event, in the order of Claude Code's reference.
    pub const ALL: [Self; 9] = [
        Self::SessionStart,
        Self::SessionEnd,
        Self::UserPromptSubmit,
        Self::PreToolUse,
        Self::PostToolUse,
        Self::Stop,
        Self::SubagentStop,
        Self::PreCompact,
        Self::Notification,
    ];

    /// Its name in configuration and on a hook's stdin.
    pub fn name(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::SessionEnd => "SessionEnd",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::Stop => "Stop",
            Self::SubagentStop => "SubagentStop",
            Self::PreCompact => "PreCompact",
            Self::Notification => "Notification",
        }
    }

    /// The event called `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether a hook's plain stdout is context for the model.
    fn plain_context(self) -> bool {
        matches!(self, Self::UserPromptSubmit | Self::SessionStart)
    }
}

/// What a hook's matcher is compared with.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// Nothing: the event has no matcher (every hook of it runs).
    Any,
    /// A tool call.
    Tool {
        /// The name the model called, which matchers test.
        name: &'a str,
        /// Where it comes from (an `mcp__SERVER__TOOL` matcher names it by its server).
        source: &'a ToolSource,
        /// What a subject pattern is matched against (`bash`'s command).
        subject: Option<&'a str>,
        /// Whether the subject is a shell command (a pattern then matches any part).
        commands: bool,
    },
    /// A word: `startup`/`resume` (SessionStart), `auto`/`manual` (PreCompact), the kind
    /// of notification.
    Word(&'a str),
}

/// One configured hook command.
#[derive(Debug, Clone)]
pub struct Hook {
    /// When it runs.
    pub event: HookEvent,
    /// The matcher as written.
    pub matcher: Option<String>,
    items: Vec<MatcherItem>,
    /// As written; identical commands of one event run once.
    pub command: String,
    /// When it is ended.
    pub timeout: Duration,
    /// The file it was configured in.
    pub origin: PathBuf,
}

impl Hook {
    fn matches(&self, target: &Target<'_>) -> bool {
        if self.items.is_empty() {
            return true;
        }
        match target {
            Target::Any => true,
            Target::Word(word) => self.items.iter().any(|item| match item {
                MatcherItem::Rule(rule) => rule.names_tool(word),
                MatcherItem::Mcp { .. } => false,
            }),
            Target::Tool {
                name,
                source,
                subject,
                commands,
            } => self.items.iter().any(|item| match item {
                // A pattern covers a command if it covers any part of it, as a deny rule
                // does: `git status && git push` is a `git push` for a hook on `git push*`.
                MatcherItem::Rule(rule) => match subject {
                    Some(subject) if *commands && rule.has_subject() => {
                        command::parts(subject)
                            .iter()
                            .any(|part| rule.matches(name, Some(part)))
                            || rule.matches(name, Some(subject))
                    }
                    subject => rule.matches(name, *subject),
                },
                MatcherItem::Mcp { server, tool } => matches!(
                    source,
                    ToolSource::Mcp { server: s, original_name }
                        if server.names_tool(s) && tool.names_tool(original_name)
                ),
            }),
        }
    }
}

/// One hook that ran, and what it said.
#[derive(Debug, Clone)]
pub struct Ran {
    /// As configured: [`Verdict::of`] names the hook by it.
    pub command: String,
    /// Its exit status and output, read as Claude Code reads a hook's.
    pub reply: Reply,
}

/// The hooks of a session.
#[derive(Debug, Clone)]
pub struct Hooks {
    hooks: Vec<Hook>,
    /// The project folder: where hooks run, and their `cwd`.
    cwd: PathBuf,
    /// What the end of a run fires: `Stop`, or `SubagentStop` in a subagent.
    stop_event: HookEvent,
}

impl Default for Hooks {
    fn default() -> Self {
        Self::new(Path::new("."))
    }
}

/// A hook configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct HookConfigError {
    /// The settings file, as the user named it.
    pub file: String,
    /// Where in it.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl Hooks {
    /// No hooks, run in `cwd`.
    pub fn new(cwd: &Path) -> Self {
        Self {
            hooks: Vec::new(),
            cwd: cwd.to_path_buf(),
            stop_event: HookEvent::Stop,
        }
    }

    /// The hooks as a subagent's run fires them: its end is `SubagentStop`, and its task
    /// is no prompt of the user's.
    pub fn for_subagent(&self) -> Self {
        Self {
            hooks: self
                .hooks
                .iter()
                .filter(|h| !matches!(h.event, HookEvent::UserPromptSubmit | HookEvent::Stop))
                .cloned()
                .collect(),
            cwd: self.cwd.clone(),
            stop_event: HookEvent::SubagentStop,
        }
    }

    /// What the end of a run fires.
    pub fn stop_event(&self) -> HookEvent {
        self.stop_event
    }

    /// Adds the hooks of `config`, read from `origin`; `claude`: Claude Code's matchers.
    pub fn add(
        &mut self,
        config: &HooksConfig,
        origin: &Path,
        claude: bool,
    ) -> Result<(), HookConfigError> {
        for (name, groups) in config.events() {
            let Some(event) = HookEvent::parse(name) else {
                continue;
            };
            for (g, group) in groups.iter().enumerate() {
                self.add_group(event, group, origin, claude)
                    .map_err(|(key, message)| HookConfigError {
                        file: origin.display().to_string(),
                        key: format!("hooks.{name}[{g}]{key}"),
                        message,
                    })?;
            }
        }
        Ok(())
    }

    fn add_group(
        &mut self,
        event: HookEvent,
        group: &HookGroup,
        origin: &Path,
        claude: bool,
    ) -> Result<(), (String, String)> {
        let items = matcher_items(group.matcher.as_deref().unwrap_or(""), claude)
            .map_err(|message| (String::from(".matcher"), message))?;
        for (h, hook) in group.hooks.iter().enumerate() {
            if let Some(problem) = hook.problem() {
                return Err((format!(".hooks[{h}]"), problem));
            }
            self.hooks.push(Hook {
                event,
                matcher: group.matcher.clone().filter(|m| !m.trim().is_empty()),
                items: items.clone(),
                command: hook.command.clone(),
                timeout: hook.timeout.map_or(DEFAULT_TIMEOUT, Duration::from_secs),
                origin: origin.to_path_buf(),
            });
        }
        Ok(())
    }

    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Whether a hook is configured for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }

    /// Every hook, in configuration order.
    pub fn all(&self) -> &[Hook] {
        &self.hooks
    }

    /// Runs the hooks of `event` that match `target`, all at once, each with `fields` and
    /// the common fields on its stdin; identical commands run once. Never fails: a hook
    /// that fails says so in its reply.
    pub async fn run(
        &self,
        event: HookEvent,
        target: Target<'_>,
        session_id: &str,
        fields: Map<String, Value>,
        emit: HookEvents<'_>,
    ) -> Vec<Ran> {
        let mut chosen: Vec<&Hook> = Vec::new();
        for hook in self.hooks.iter().filter(|h| h.event == event) {
            if hook.matches(&target) && !chosen.iter().any(|c| c.command == hook.command) {
                chosen.push(hook);
            }
        }
        if chosen.is_empty() {
            return Vec::new();
        }
        let mut input = Map::new();
        input.insert("session_id".into(), Value::String(session_id.to_string()));
        input.insert(
            "cwd".into(),
            Value::String(self.cwd.to_string_lossy().into_owned()),
        );
        input.insert("hook_event_name".into(), Value::String(event.name().into()));
        input.extend(fields);
        let input = Value::Object(input).to_string().into_bytes();
        let project = self.cwd.to_string_lossy().into_owned();
        let env = [
            ("ANTLER_PROJECT_DIR", project.as_str()),
            // Claude Code's scripts find their files through it.
            ("CLAUDE_PROJECT_DIR", project.as_str()),
        ];
        let runs = chosen.into_iter().map(|hook| {
            let (input, env) = (&input, &env);
            async move {
                emit(Event::HookStarted {
                    event: event.name().into(),
                    matcher: hook.matcher.clone(),
                    command: crate::base::text::printable(&hook.command),
                });
                let finished = exec::run(&hook.command, input, &self.cwd, env, hook.timeout).await;
                let reply = reply::read(&finished, event.plain_context());
                emit(Event::HookFinished {
                    event: event.name().into(),
                    matcher: hook.matcher.clone(),
                    command: crate::base::text::printable(&hook.command),
                    exit_code: reply.exit_code,
                    duration_ms: u64::try_from(finished.duration.as_millis()).unwrap_or(u64::MAX),
                    decision: reply.decision,
                    error: reply.error.clone(),
                });
                Ran {
                    command: hook.command.clone(),
                    reply,
                }
            }
        });
        futures::future::join_all(runs).await
    }
}

impl crate::tools::Notify for Hooks {
    fn notify<'a>(
        &'a self,
        kind: &'a str,
        message: &'a str,
        thread_id: &'a str,
        events: crate::tools::EventEmitter<'a>,
    ) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async move {
            let mut fields = Map::new();
            fields.insert("message".into(), Value::String(message.to_string()));
            fields.insert("notification_type".into(), Value::String(kind.to_string()));
            // A notification decides nothing: what the hooks said is in their events.
            self.run(
                HookEvent::Notification,
                Target::Word(kind),
                thread_id,
                fields,
                events,
            )
            .await;
        })
    }
}

/// What the hooks of one event said together.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    /// The first refusal (deny or block), with its reason.
    pub blocked: Option<String>,
    /// A hook wants the user asked, and why.
    pub ask: Option<String>,
    /// A hook allowed it: which.
    pub allowed_by: Option<String>,
    /// A hook's new input for the call (the first one given).
    pub updated_input: Option<Value>,
    /// `continue: false`: the run ends, with this reason.
    pub stop: Option<String>,
    /// Context for the model, in hook order.
    pub context: Vec<String>,
    /// Lines for the user: errors and `systemMessage`s.
    pub notices: Vec<String>,
}

impl Verdict {
    /// Combines the replies of `event`'s hooks: a refusal wins over asking, asking over
    /// allowing.
    pub fn of(event: HookEvent, ran: Vec<Ran>) -> Self {
        let mut verdict = Self::default();
        for Ran { command, reply } in ran {
            let shown = crate::base::text::short_line(&command, 80).0;
            if let Some(error) = &reply.error {
                verdict.notices.push(format!(
                    "the {} hook `{shown}` failed: {error}",
                    event.name()
                ));
            }
            if let Some(message) = &reply.message {
                verdict.notices.push(crate::base::text::printable(message));
            }
            let reason = || {
                reply
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("the hook `{shown}` gave no reason"))
            };
            match reply.decision {
                Some(HookDecision::Deny | HookDecision::Block) => {
                    verdict.blocked.get_or_insert_with(reason);
                }
                Some(HookDecision::Ask) => {
                    verdict.ask.get_or_insert_with(reason);
                }
                Some(HookDecision::Allow) => {
                    verdict.allowed_by.get_or_insert_with(|| shown.clone());
                }
                None => {}
            }
            if let (None, Some(input)) = (&verdict.updated_input, reply.updated_input) {
                verdict.updated_input = Some(input);
            }
            if let (None, Some(stop)) = (&verdict.stop, reply.stop) {
                verdict.stop = Some(stop);
            }
            verdict.context.extend(reply.context);
        }
        verdict
    }

    /// The context as one block for the model, if any.
    pub fn context_block(&self, event: HookEvent) -> Option<String> {
        (!self.context.is_empty()).then(|| {
            format!(
                "<hook-context event=\"{}\">\n{}\n</hook-context>",
                event.name(),
                self.context.join("\n")
            )
        })
    }
}

/// The session's hooks, shared.
pub type SharedHooks = Arc<Hooks>;

#[cfg(test)]
mod tests;

//! `antler -p PROMPT`: one prompt run to completion on a session, for scripts and CI.

use std::io::{IsTerminal, Read};

use tokio_util::sync::CancellationToken;

use super::context::CommandContext;
use super::error::CliError;
use super::{Exit, RunArgs};
use crate::config::parse_rule_list;
use crate::mcp::elicitation::Unattended;
use crate::protocol::{Event, RunStatus};
use crate::session::instructions::PromptOptions;
use crate::session::{PermissionOptions, Session, SessionOptions, StartThread};
use crate::ui::run_output::RunPrinter;

/// Runs the prompt of `args` and returns the exit status.
pub(super) async fn run_prompt(args: &RunArgs, ctx: CommandContext<'_>) -> Exit {
    run(args, ctx)
        .await
        .unwrap_or_else(|err| err.report_as(args.output_format))
}

async fn run(args: &RunArgs, ctx: CommandContext<'_>) -> Result<Exit, CliError> {
    let CommandContext {
        model, cwd, env, ..
    } = ctx;
    let Inputs {
        server_prompt,
        last_message,
        prompt,
    } = Inputs::read(args)?;
    // Ctrl-C is caught from here on, so that MCP servers starting below are always shut
    // down (a Ctrl-C during start-up ends the run as interrupted before its first call).
    let cancel = CancellationToken::new();
    let watcher = tokio::spawn(interrupt_on_ctrl_c(cancel.clone()));
    let options = session_options(args, model)?;
    let setup = ctx.setup()?;
    let (mut session, _) = Session::start(setup, env, cwd, options).await?;
    warn_unavailable_servers(&session).await;
    let printer = RunPrinter::new(
        args.output_format,
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    );
    let prompt = match &server_prompt {
        Some(asked) => match prompt_turn(&session, asked, prompt, &cancel).await {
            Ok(text) => text,
            Err(err) => {
                session.close().await;
                watcher.abort();
                return Err(err);
            }
        },
        None => prompt,
    };
    let emit = |event: Event| printer.event(&event);
    let result = session
        .run_with_skills(prompt, &args.skills, &emit, &cancel)
        .await;
    if let Ok(result) = &result {
        printer.finish(result);
    }
    let written = match (&result, &last_message) {
        (Ok(result), Some(file)) => file.write(result.result.as_bytes()).map_err(|err| {
            CliError::failure(format!(
                "--output-last-message {}: {err}",
                file.path().display()
            ))
        }),
        _ => Ok(()),
    };
    // Everything for stdout is out: its reader is done now, not once the MCP servers have
    // stopped. Errors still reach stderr.
    super::output::close_stdout();
    session.close().await;
    watcher.abort();
    let result = result?;
    written?;
    Ok(match result.status {
        RunStatus::Success => Exit::Success,
        RunStatus::Failed => Exit::Failure,
        RunStatus::Interrupted => Exit::Interrupted,
    })
}

/// What a run reads before anything starts, so that a mistake in them costs nothing.
struct Inputs {
    /// `--mcp-prompt`, whose text becomes the prompt or comes before it.
    server_prompt: Option<ServerPrompt>,
    /// `--output-last-message`, opened now.
    last_message: Option<crate::base::output_file::OutputFile>,
    prompt: String,
}

impl Inputs {
    fn read(args: &RunArgs) -> Result<Self, CliError> {
        if args.resume == Some(None) {
            return Err(CliError::usage(
                "--resume without an id opens a picker in the chat; with a prompt, give the \
                 thread's id (`antler threads list` shows them) or use --continue",
            ));
        }
        let server_prompt = match args.mcp_prompt.as_deref() {
            Some(text) => Some(parse_server_prompt(text, &args.prompt_args)?),
            None => None,
        };
        // Its folder is opened now, before any tool runs: the answer is written into that
        // folder, never through a link planted during the run.
        let last_message = match &args.output_last_message {
            Some(path) => Some(
                crate::base::output_file::OutputFile::at_start(path, 0o666).map_err(|err| {
                    CliError::usage(format!("--output-last-message {}: {err}", path.display()))
                })?,
            ),
            None => None,
        };
        let prompt = match (&server_prompt, args.prompt_text()) {
            (Some(_), None) => String::new(),
            (_, given) => read_prompt(given)?,
        };
        Ok(Self {
            server_prompt,
            last_message,
            prompt,
        })
    }
}

/// A one-shot run goes on without a server that failed to start, but says so.
async fn warn_unavailable_servers(session: &Session) {
    for status in session.mcp().await.statuses().await {
        if let Some(error) = status.error {
            tracing::warn!(
                "MCP server `{}` is unavailable, its tools are missing: {error}",
                status.name
            );
        }
    }
}

/// `--mcp-prompt SERVER:PROMPT` with its `--arg NAME=VALUE`s.
struct ServerPrompt {
    server: String,
    name: String,
    arguments: std::collections::BTreeMap<String, String>,
}

fn parse_server_prompt(text: &str, given: &[String]) -> Result<ServerPrompt, CliError> {
    let Some((server, name)) = text
        .split_once(':')
        .filter(|(s, n)| !s.is_empty() && !n.is_empty())
    else {
        return Err(CliError::usage(format!(
            "--mcp-prompt: expected SERVER:PROMPT, got {:?}",
            crate::base::text::short_line(text, 80).0
        )));
    };
    Ok(ServerPrompt {
        server: server.to_string(),
        name: name.to_string(),
        arguments: prompt_arguments(given)?,
    })
}

/// The `--arg NAME=VALUE`s, each name once.
fn prompt_arguments(
    given: &[String],
) -> Result<std::collections::BTreeMap<String, String>, CliError> {
    let mut arguments = std::collections::BTreeMap::new();
    for arg in given {
        let Some((name, value)) = arg.split_once('=').filter(|(n, _)| !n.trim().is_empty()) else {
            return Err(CliError::usage(format!(
                "--arg: expected NAME=VALUE, got {:?}",
                crate::base::text::short_line(arg, 80).0
            )));
        };
        if arguments
            .insert(name.trim().to_string(), value.to_string())
            .is_some()
        {
            return Err(CliError::usage(format!(
                "--arg: `{}` is given twice",
                crate::base::text::quoted(name.trim())
            )));
        }
    }
    Ok(arguments)
}

/// The message of a `--mcp-prompt` run: the prompt's text, then the -p text if any. A
/// prompt that cannot be had (unknown, missing arguments, a failing server) is a usage
/// error naming what there is.
async fn prompt_turn(
    session: &Session,
    asked: &ServerPrompt,
    extra: String,
    cancel: &CancellationToken,
) -> Result<String, CliError> {
    let mcp = session.mcp().await;
    let text = mcp
        .prompt_message(&asked.server, &asked.name, &asked.arguments, cancel)
        .await
        .map_err(|err| match err {
            crate::mcp::PromptError::Failed(_) => CliError::failure(format!("--mcp-prompt: {err}")),
            other => CliError::usage(format!("--mcp-prompt: {other}")),
        })?;
    let text = session.redact(&text).await;
    Ok(if extra.trim().is_empty() {
        text
    } else {
        format!("{text}\n\n{extra}")
    })
}

/// The session `-p` runs on: no one to answer `ask_clarification`.
fn session_options(args: &RunArgs, model: Option<&str>) -> Result<SessionOptions, CliError> {
    Ok(SessionOptions {
        model: model.map(str::to_string),
        max_turns: args.max_turns,
        thread: start_thread(args),
        replay: args.replay.clone(),
        record: args.record.clone(),
        clarify: false,
        elicitation: match args.elicitation {
            super::ElicitationPolicy::Decline => Unattended::Decline,
            super::ElicitationPolicy::AcceptDefaults => Unattended::AcceptDefaults,
        },
        permissions: permission_options(args)?,
        prompt: prompt_options(args),
    })
}

/// `--system-prompt-file` and `--append-system-prompt`.
pub(super) fn prompt_options(args: &RunArgs) -> PromptOptions {
    PromptOptions {
        system_prompt_file: args.system_prompt_file.clone(),
        append: args.append_system_prompt.clone(),
    }
}

/// `--allowed-tools`, `--disallowed-tools` and `--permission-mode`, checked.
pub(super) fn permission_options(args: &RunArgs) -> Result<PermissionOptions, CliError> {
    let rules = |flag: &str, values: &[String]| {
        parse_rule_list(values).map_err(|err| CliError::usage(format!("--{flag}: {err}")))
    };
    Ok(PermissionOptions {
        allowed: rules("allowed-tools", &args.allowed_tools)?,
        denied: rules("disallowed-tools", &args.disallowed_tools)?,
        allow_all: args.permission_mode == super::PermissionMode::AllowAll,
    })
}

/// The thread `--continue` or `--resume ID` asks for, else a new one (`--resume` without
/// an id is the chat's picker, over a new thread until one is chosen).
pub(super) fn start_thread(args: &RunArgs) -> StartThread {
    match (&args.resume, args.continue_thread) {
        (Some(Some(id)), _) => StartThread::Resume(id.clone()),
        (_, true) => StartThread::Latest,
        _ => StartThread::New,
    }
}

/// The prompt from `-p`, `-p -` (stdin) or piped stdin.
fn read_prompt(arg: Option<&str>) -> Result<String, CliError> {
    let from_stdin = || {
        let text = read_stdin("the prompt")?;
        Ok::<_, CliError>(capped(&text, "the prompt from stdin"))
    };
    let no_prompt = || {
        CliError::usage(
            "no prompt: pass -p PROMPT, -p - to read it from stdin, or pipe it in\n\n\
             Usage: antler [OPTIONS] -p <PROMPT>\n       antler <COMMAND>\n\n\
             For more information, try 'antler --help'.",
        )
    };
    let prompt = match arg {
        Some("-") => from_stdin()?,
        Some(text) if piped_stdin() => with_piped(text, &read_stdin("the piped input")?),
        Some(text) => text.to_string(),
        None if !std::io::stdin().is_terminal() => {
            let text = from_stdin()?;
            if text.is_empty() {
                return Err(no_prompt());
            }
            text
        }
        None => return Err(no_prompt()),
    };
    if prompt.trim().is_empty() {
        return Err(CliError::usage("the prompt is empty"));
    }
    Ok(prompt)
}

/// The most of piped input sent after a prompt, of a prompt read from stdin and of an MCP
/// server's prompt: text that becomes the user's turn whole.
const MAX_PIPED_BYTES: usize = crate::base::text::MAX_TURN_BYTES;

/// Whether stdin is data piped or redirected in (a pipe or a file), not a terminal or
/// `/dev/null`: only then is it read after a `-p` prompt.
fn piped_stdin() -> bool {
    use nix::sys::stat::{SFlag, fstat};
    fstat(std::io::stdin()).is_ok_and(|stat| {
        let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
        kind == SFlag::S_IFIFO || kind == SFlag::S_IFREG
    })
}

/// At most [`MAX_PIPED_BYTES`] (and one more, to tell that there was more) of stdin,
/// invalid UTF-8 replaced: piped input may be anything, of any size. `what` names it in
/// the error.
fn read_stdin(what: &str) -> Result<String, CliError> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_PIPED_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::usage(format!("cannot read {what} from stdin: {e}")))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `text` cut at [`MAX_PIPED_BYTES`] with the cut marked for the model and a notice on
/// stderr naming `what` was cut.
fn capped(text: &str, what: &str) -> String {
    let (text, cut) = crate::base::text::cap_turn(text);
    if cut {
        eprintln!("note: {what} was cut at {} KiB", MAX_PIPED_BYTES / 1024);
    }
    text
}

/// The prompt, then the piped input as context (`git diff | antler -p "review this"`),
/// fenced and cut at [`MAX_PIPED_BYTES`]. Nothing piped is the prompt alone.
fn with_piped(prompt: &str, piped: &str) -> String {
    if piped.trim().is_empty() {
        return prompt.to_string();
    }
    let text = capped(piped, "the piped input");
    let text = text.trim_end();
    let fence = crate::base::text::fence_for(text);
    format!("{prompt}\n\n[piped input]\n{fence}\n{text}\n{fence}")
}

/// The first Ctrl-C (or SIGTERM, SIGHUP) cancels the run, which then saves and exits 130;
/// a second Ctrl-C exits at once.
async fn interrupt_on_ctrl_c(cancel: CancellationToken) {
    // SIGTERM and SIGHUP (a closed terminal, `kill`, `timeout`) end the run the same way.
    let stop = async {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(mut term), Ok(mut hup)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = hup.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    };
    tokio::select! {
        result = tokio::signal::ctrl_c() => {
            if result.is_err() {
                return;
            }
        }
        () = stop => {}
    }
    cancel.cancel();
    if tokio::signal::ctrl_c().await.is_ok() {
        eprintln!("antler: interrupted twice; exiting without waiting");
        // No destructor runs on this exit: stop MCP servers and shell commands first.
        crate::base::process::kill_all_groups();
        std::process::exit(130);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn piped_input_follows_the_prompt_fenced_and_capped() {
        assert_eq!(with_piped("review", "  \n"), "review");
        assert_eq!(
            with_piped("review this", "diff --git a b\n+x\n"),
            "review this\n\n[piped input]\n```\ndiff --git a b\n+x\n```"
        );
        let big = "é".repeat(MAX_PIPED_BYTES);
        let sent = with_piped("p", &big);
        assert!(
            sent.contains("[cut at 524288 bytes]"),
            "{}",
            &sent[sent.len() - 80..]
        );
    }
}

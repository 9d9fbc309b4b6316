//! Before any thread starts: which project files may be used (asking in the chat), and the
//! project's `.env`, which may be loaded only now (it changes the environment) and only
//! when trusted.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;

use super::error::CliError;
use super::{Cli, Exit, Invocation};
use crate::config::load_dotenv;
use crate::trust::summary::describe;
use crate::trust::{
    OnUntrusted, ProjectFile, ProjectFileKind, ProjectTrust, TrustStore, UntrustedError,
    project_files,
};

/// What start-up decided, for the run.
#[derive(Debug)]
pub struct Startup {
    /// Which project files may be used.
    pub trust: Arc<ProjectTrust>,
    /// Things to tell the user once logging is set up.
    pub notices: Vec<String>,
}

/// Decides project trust for `cli` and loads a trusted `.env`. Must run before any thread
/// exists. `Err` is the exit status of a run that must not go on (the reason is printed).
pub fn prepare(cli: &Cli) -> Result<Startup, Exit> {
    let format = cli.error_format();
    let cwd = std::env::current_dir().map_err(|err| {
        CliError::usage(format!("cannot read the working directory: {err}")).report_as(format)
    })?;
    let env = |name: &str| std::env::var(name).ok();
    let invocation = cli.invocation();
    let on_untrusted = match invocation {
        Invocation::Chat | Invocation::Prompt | Invocation::Inspect => OnUntrusted::Refuse,
        Invocation::Doctor | Invocation::Threads | Invocation::Trust | Invocation::Edit => {
            OnUntrusted::Skip
        }
    };
    let store = crate::config::dirs::data_dir(&env).map(|dir| TrustStore::in_dir(&dir));
    let mut trust = ProjectTrust::new(store, on_untrusted);
    let mut notices = tighten_own_folders(&env);
    if matches!(invocation, Invocation::Trust | Invocation::Edit) {
        return Ok(Startup {
            trust: Arc::new(trust),
            notices,
        });
    }
    // `doctor` and `threads` go on without files they cannot read (doctor reports the
    // error in its own checks); the others stop here.
    let files = match project_files(&cli.config_paths(), &cwd, &env) {
        Ok(files) => files,
        Err(_) if on_untrusted == OnUntrusted::Skip => Vec::new(),
        Err(err) => return Err(CliError::usage(err.to_string()).report_as(format)),
    };
    let untrusted: Vec<&ProjectFile> = files
        .iter()
        .filter(|f| !trust.state(f).is_trusted())
        .collect();
    if !untrusted.is_empty() {
        if cli.trust_project {
            for file in &untrusted {
                trust.approve(file);
            }
        } else {
            match invocation {
                Invocation::Chat => match ask(&untrusted, &trust, &cwd) {
                    Answer::Yes => {
                        for file in &untrusted {
                            remember(&mut trust, file, &mut notices);
                        }
                    }
                    Answer::No => trust.set_on_untrusted(OnUntrusted::Skip),
                    Answer::Quit => return Err(Exit::Success),
                },
                Invocation::Prompt | Invocation::Inspect => {
                    refuse_untrusted(&untrusted, &trust, &mut notices)
                        .map_err(|message| CliError::usage(message).report_as(format))?;
                }
                Invocation::Doctor | Invocation::Threads | Invocation::Trust | Invocation::Edit => {
                }
            }
        }
    }
    if let Some(dotenv) = files.iter().find(|f| f.kind == ProjectFileKind::DotEnv) {
        load_if_trusted(dotenv, &trust, &mut notices)
            .map_err(|err| CliError::usage(err.to_string()).report_as(format))?;
    }
    Ok(Startup {
        trust: Arc::new(trust),
        notices,
    })
}

/// Without a person to ask (`-p`, the inspect commands): an untrusted project skill is
/// left out with a notice (it only adds instructions, and the run can do without them);
/// any other untrusted file stops the run, with what it would do (the error's text).
fn refuse_untrusted(
    untrusted: &[&ProjectFile],
    trust: &ProjectTrust,
    notices: &mut Vec<String>,
) -> Result<(), String> {
    let (skills, refused): (Vec<&ProjectFile>, Vec<&ProjectFile>) = untrusted
        .iter()
        .partition(|f| f.kind == ProjectFileKind::Skill);
    for skill in skills {
        notices.push(format!(
            "the project skill {} is not used: antler has not been told to trust it ({}); \
             `antler trust` shows it and trusts it",
            skill.path.display(),
            trust.state(skill).describe()
        ));
    }
    if refused.is_empty() {
        return Ok(());
    }
    let message: Vec<String> = refused
        .iter()
        .map(|file| {
            let mut text = refusal(file, trust).to_string();
            for line in describe(file) {
                text.push_str(&format!("\n  {line}"));
            }
            text
        })
        .collect();
    Err(message.join("\nerror: "))
}

/// Loads the project's `.env` if it is trusted; else a notice says why it is not.
fn load_if_trusted(
    dotenv: &ProjectFile,
    trust: &ProjectTrust,
    notices: &mut Vec<String>,
) -> Result<(), crate::config::ConfigError> {
    if trust.state(dotenv).is_trusted() {
        return load_dotenv(&dotenv.path, &dotenv.content);
    }
    notices.push(format!(
        "{} is not loaded: antler has not been told to trust it ({}); `antler trust` shows \
         it and trusts it",
        dotenv.path.display(),
        trust.state(dotenv).describe()
    ));
    Ok(())
}

fn refusal(file: &ProjectFile, trust: &ProjectTrust) -> UntrustedError {
    UntrustedError {
        file: file.path.clone(),
        kind: file.kind,
        state: trust.state(file).describe(),
    }
}

/// Stores trust in `file`'s content; if it cannot be stored, it holds for this run.
fn remember(trust: &mut ProjectTrust, file: &ProjectFile, notices: &mut Vec<String>) {
    trust.approve(file);
    match trust.store() {
        Some(store) => {
            if let Err(err) = store.trust(&file.key, &file.sha256) {
                notices.push(format!("trust is kept for this run only: {err}"));
            }
        }
        None => notices.push(String::from(
            "trust is kept for this run only: there is no data folder (HOME is not set)",
        )),
    }
}

/// The chat's answer to the trust question.
enum Answer {
    Yes,
    No,
    Quit,
}

/// Asks on the terminal, before the chat takes the screen, showing what the files would
/// run. Anything but yes or quit means no: the chat starts without them.
fn ask(untrusted: &[&ProjectFile], trust: &ProjectTrust, cwd: &Path) -> Answer {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "antler: {} has project files that antler has not been told to trust:\n",
        cwd.display()
    );
    for file in untrusted {
        let _ = writeln!(
            err,
            "  {} ({}; it {}):",
            file.path.display(),
            trust.state(file).describe(),
            file.kind.power()
        );
        for line in describe(file) {
            let _ = writeln!(err, "      {line}");
        }
    }
    let _ = write!(
        err,
        "\nTrust them? [y] yes, remember this content  [n] no, start without them  [q] quit: "
    );
    let _ = err.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return Answer::No;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Yes,
        "q" | "quit" => Answer::Quit,
        _ => Answer::No,
    }
}

/// Makes antler's data and log folders owner-only where an earlier version left them as the
/// umask made them (0755, with `threads.db` 0644: every conversation readable by every
/// local user), saying so; once tightened they stay so, and nothing is said again.
fn tighten_own_folders(env: crate::config::EnvLookup<'_>) -> Vec<String> {
    let folders = [
        crate::config::dirs::data_dir(env),
        crate::config::dirs::state_dir(env),
    ];
    folders
        .into_iter()
        .flatten()
        .filter_map(|dir| match crate::base::private_file::tighten_dir(&dir) {
            Ok(Some(mode)) => Some(format!(
                "{} was readable by other users (mode {mode:04o}); it holds your \
                 conversations and is now private to you (0700, its files 0600)",
                dir.display()
            )),
            Ok(None) => None,
            Err(err) => Some(format!(
                "{} is readable by other users and could not be made private: {err}",
                dir.display()
            )),
        })
        .collect()
}

//! `antler mcp add` and `antler mcp remove`: edit the user's extensions file (or the one
//! `--extensions` / `$ANTLER_EXTENSIONS_CONFIG` names), keeping the rest of it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::context::CommandContext;
use super::error::CliError;
use super::{Exit, McpAddArgs, McpRemoveArgs, RemoteTransport};
use crate::config::{
    ConfigPaths, EnvLookup, add_server, extensions_candidates, remove_server, user_extensions,
};

/// Adds (or with `--force` replaces) the server.
pub(super) fn add(args: &McpAddArgs, ctx: CommandContext<'_>) -> Exit {
    let CommandContext {
        paths, cwd, env, ..
    } = ctx;
    let run = || -> Result<(), CliError> {
        let file = target(paths, cwd, env)?;
        let entry = entry(args)?;
        let _locked = locked(&file)?;
        let text = read(&file)?;
        let new = add_server(text.as_deref(), &file, &args.name, entry, args.force, env)
            .map_err(|e| CliError::usage(e.to_string()))?;
        write(&file, &new)?;
        println!(
            "{} MCP server `{}` in {}",
            if text.is_some() { "Saved" } else { "Created" },
            args.name,
            file.display()
        );
        shadowed(&file, paths, cwd, env);
        Ok(())
    };
    run().map_or_else(CliError::report, |()| Exit::Success)
}

/// Removes the server under the file's lock; an unknown name changes nothing.
pub(super) fn remove(args: &McpRemoveArgs, ctx: CommandContext<'_>) -> Exit {
    let CommandContext {
        paths, cwd, env, ..
    } = ctx;
    let run = || -> Result<(), CliError> {
        let file = target(paths, cwd, env)?;
        let _locked = locked(&file)?;
        let text = read(&file)?;
        let new = remove_server(text.as_deref(), &file, &args.name)
            .map_err(|e| CliError::usage(e.to_string()))?;
        write(&file, &new)?;
        println!(
            "Removed MCP server `{}` from {}",
            crate::base::text::quoted(&args.name),
            file.display()
        );
        Ok(())
    };
    run().map_or_else(CliError::report, |()| Exit::Success)
}

/// The file to edit: the one named by `--extensions` or `$ANTLER_EXTENSIONS_CONFIG` (it may
/// not exist yet), else the user's own.
fn target(paths: &ConfigPaths, cwd: &Path, env: EnvLookup<'_>) -> Result<PathBuf, CliError> {
    let named = paths.extensions.clone().or_else(|| {
        env("ANTLER_EXTENSIONS_CONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    match named {
        Some(path) => Ok(cwd.join(path)),
        None => user_extensions(env).ok_or_else(|| {
            CliError::usage(
                "neither XDG_CONFIG_HOME nor HOME is set: name the file with --extensions",
            )
        }),
    }
}

/// The server's entry from the flags.
fn entry(args: &McpAddArgs) -> Result<Value, CliError> {
    let pairs = |flag: &str, values: &[String]| -> Result<BTreeMap<String, String>, CliError> {
        values
            .iter()
            .map(|v| match v.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
                _ => Err(CliError::usage(format!(
                    "--{flag} {}: expected NAME=VALUE",
                    crate::base::text::quoted(v)
                ))),
            })
            .collect()
    };
    let mut entry = match (&args.url, args.command.split_first()) {
        (Some(url), _) => {
            let kind = match args.transport {
                RemoteTransport::Http => "http",
                RemoteTransport::Sse => "sse",
            };
            let mut entry = json!({"type": kind, "url": url});
            let headers = pairs("header", &args.headers)?;
            if !headers.is_empty() {
                entry["headers"] = json!(headers);
            }
            entry
        }
        (None, Some((command, rest))) => json!({"command": command, "args": rest}),
        (None, None) => {
            return Err(CliError::usage(
                "give the command after `--` (antler mcp add NAME -- COMMAND ARGS...) or --url URL",
            ));
        }
    };
    let env = pairs("env", &args.env)?;
    if !env.is_empty() {
        entry["env"] = json!(env);
    }
    if let Some(description) = &args.description {
        entry["description"] = json!(description);
    }
    Ok(entry)
}

/// Holds the file's lock while it is read and written (two `mcp add` at once lose nothing).
fn locked(file: &Path) -> Result<nix::fcntl::Flock<std::fs::File>, CliError> {
    crate::base::private_file::lock(file)
        .map_err(|e| CliError::failure(format!("{}: cannot lock it: {e}", file.display())))
}

fn read(file: &Path) -> Result<Option<String>, CliError> {
    match crate::base::bounded_read::read_to_string(
        file,
        crate::base::bounded_read::CONFIG_BYTES,
        "a config file",
    ) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(CliError::failure(format!("{}: {e}", file.display()))),
    }
}

/// Writes `text` in place of `file`, or of the file it links to (a dotfiles link stays a
/// link).
fn write(file: &Path, text: &str) -> Result<(), CliError> {
    let link = std::fs::symlink_metadata(file).is_ok_and(|m| m.file_type().is_symlink());
    let real = match std::fs::canonicalize(file) {
        Ok(real) => real,
        Err(_) if link => {
            return Err(CliError::failure(format!(
                "{} is a link to a file that does not exist; it was not changed",
                file.display()
            )));
        }
        Err(_) => file.to_path_buf(),
    };
    crate::base::private_file::write_atomically(&real, text.as_bytes())
        .map_err(|e| CliError::failure(format!("{}: {e}", file.display())))
}

/// Says so when, in this directory, another file is used instead of the one edited.
fn shadowed(file: &Path, paths: &ConfigPaths, cwd: &Path, env: EnvLookup<'_>) {
    if let Ok(found) = extensions_candidates(paths.extensions.as_deref(), cwd, env)
        && let Some(first) = found.first()
        && first.path != file
    {
        eprintln!(
            "note: in {}, antler uses {} instead (a project file comes first)",
            cwd.display(),
            first.path.display()
        );
    }
}

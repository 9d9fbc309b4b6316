//! `antler trust`: shows this directory's project files, what they would run and their
//! text, then records trust in that exact content (`--list` and `--revoke` manage it).

use std::io::{BufRead, IsTerminal, Write};

use super::context::CommandContext;
use super::error::CliError;
use super::{Exit, TrustArgs};
use crate::trust::summary::{describe, printable};
use crate::trust::{ProjectFile, ProjectFileKind, ProjectTrust, TrustStore, project_files};

/// Runs `antler trust`.
pub(super) fn run(args: &TrustArgs, ctx: CommandContext<'_>) -> Exit {
    let CommandContext {
        paths,
        cwd,
        env,
        trust,
        ..
    } = ctx;
    let Some(store) = trust.store() else {
        return CliError::usage(
            "there is no data folder to keep trust in (set HOME or ANTLER_DATA_DIR)",
        )
        .report();
    };
    if args.list {
        return list(store);
    }
    let files = match project_files(paths, cwd, env) {
        Ok(files) => files,
        Err(err) => return CliError::usage(err.to_string()).report(),
    };
    if files.is_empty() {
        println!(
            "{} has no project files (config.yaml, extensions_config.json, mcp_config.json, \
             .env): nothing to trust",
            cwd.display()
        );
        return Exit::Success;
    }
    if args.revoke {
        return revoke(store, &files);
    }
    let mut out = std::io::stdout().lock();
    for file in &files {
        let _ = show(&mut out, file, trust);
    }
    let untrusted: Vec<&ProjectFile> = files
        .iter()
        .filter(|f| !trust.state(f).is_trusted())
        .collect();
    if untrusted.is_empty() {
        let _ = writeln!(out, "All of them are trusted as they are.");
        return Exit::Success;
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return CliError::usage("not trusted; run `antler trust --yes` to trust this content")
                .report();
        }
        let _ = write!(
            out,
            "Trust the content shown of {} file(s)? [y/N] ",
            untrusted.len()
        );
        let _ = out.flush();
        let mut answer = String::new();
        let yes = std::io::stdin().lock().read_line(&mut answer).is_ok()
            && matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes");
        if !yes {
            let _ = writeln!(out, "Nothing trusted.");
            return Exit::Success;
        }
    }
    for file in untrusted {
        if let Err(err) = store.trust(&file.key, &file.sha256) {
            return CliError::failure(err.to_string()).report();
        }
        let _ = writeln!(out, "Trusted {}.", file.path.display());
    }
    Exit::Success
}

/// One file: where, its state, what it would do and its text (a `.env` by names only).
fn show(out: &mut impl Write, file: &ProjectFile, trust: &ProjectTrust) -> std::io::Result<()> {
    writeln!(
        out,
        "{} — {}; it {}",
        file.path.display(),
        trust.state(file).describe(),
        file.kind.power()
    )?;
    for line in describe(file) {
        writeln!(out, "  {line}")?;
    }
    if file.kind != ProjectFileKind::DotEnv {
        writeln!(out)?;
        for (i, line) in file.text().lines().enumerate() {
            writeln!(out, "  {:>4} │ {}", i + 1, printable(line))?;
        }
    }
    writeln!(out)
}

fn list(store: &TrustStore) -> Exit {
    match store.list() {
        Ok(files) if files.is_empty() => {
            println!("No file is trusted ({}).", store.path().display());
            Exit::Success
        }
        Ok(files) => {
            for (path, entry) in files {
                // A skill is trusted by its folder.
                let now = if path.is_dir() {
                    crate::skills::project_skill(&path).ok().map(|s| s.sha256)
                } else {
                    ProjectFile::read(ProjectFileKind::AppConfig, &path)
                        .ok()
                        .map(|f| f.sha256)
                };
                let now = match now {
                    Some(sha) if sha == entry.sha256 => "unchanged",
                    Some(_) => "changed since (not trusted)",
                    None => "missing",
                };
                println!(
                    "{}  trusted {}  {now}",
                    path.display(),
                    crate::base::clock::utc_date(entry.trusted_at)
                );
            }
            Exit::Success
        }
        Err(err) => CliError::failure(err.to_string()).report(),
    }
}

fn revoke(store: &TrustStore, files: &[ProjectFile]) -> Exit {
    for file in files {
        match store.revoke(&file.key) {
            Ok(true) => println!("No longer trusted: {}", file.path.display()),
            Ok(false) => println!("Was not trusted: {}", file.path.display()),
            Err(err) => return CliError::failure(err.to_string()).report(),
        }
    }
    Exit::Success
}

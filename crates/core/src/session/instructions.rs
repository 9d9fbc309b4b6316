//! What the system prompt says besides antler's own instructions: `instructions:` from
//! config.yaml, the user's `~/.config/antler/AGENTS.md`, the project's `AGENTS.md` (or
//! `CLAUDE.md` where a folder has no AGENTS.md) from the repository root down to the
//! workspace root, and `--append-system-prompt`; `--system-prompt-file` replaces antler's
//! own. Read once per session, so a thread's system prompt stays byte-identical from call
//! to call; each file is bounded and its path is named in the prompt.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::agent::prompt::PromptParts;

/// The most of one instructions file that is read.
const MAX_FILE_BYTES: usize = 32 * 1024;
/// The most instructions text in all.
const MAX_TOTAL_BYTES: usize = 64 * 1024;
/// The most of `--system-prompt-file` that is read.
const MAX_BASE_BYTES: u64 = 1 << 20;
/// The file names looked for in each folder, the first found wins.
const NAMES: &[&str] = crate::config::INSTRUCTION_FILES;

/// What the session adds to the system prompt, from the command line and config.yaml.
#[derive(Debug, Clone, Default)]
pub struct PromptOptions {
    /// `--system-prompt-file`: replaces antler's own instructions.
    pub system_prompt_file: Option<PathBuf>,
    /// `--append-system-prompt`.
    pub append: Option<String>,
}

/// Why the instructions cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("--system-prompt-file {path}: {message}")]
pub struct InstructionsError {
    path: String,
    message: String,
}

/// The prompt's parts, and the instruction files they came from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Instructions {
    /// For the system prompt.
    pub parts: PromptParts,
    /// The files read, in the order they appear.
    pub files: Vec<PathBuf>,
}

impl Instructions {
    /// Reads everything `options`, `configured` (config.yaml's `instructions:`), the user's
    /// config folder and the project around `workspace` give.
    pub(crate) fn load(
        options: &PromptOptions,
        configured: Option<&str>,
        config_dir: Option<&Path>,
        workspace: &Path,
    ) -> Result<Self, InstructionsError> {
        let base = match &options.system_prompt_file {
            None => None,
            Some(path) => Some(read_base(path)?),
        };
        let mut files = Vec::new();
        if let Some(dir) = config_dir {
            files.extend(first_in(dir, None).map(|path| (path, None)));
        }
        files.extend(project_files(workspace));
        let mut sections: Vec<String> = Vec::new();
        if let Some(text) = configured.map(str::trim).filter(|t| !t.is_empty()) {
            sections.push(format!("## Instructions from config.yaml\n\n{text}"));
        }
        let mut budget = MAX_TOTAL_BYTES;
        let mut read = Vec::new();
        for (path, within) in files {
            let Some(text) = read_bounded(&path, within.as_deref(), MAX_FILE_BYTES.min(budget))
            else {
                continue;
            };
            budget = budget.saturating_sub(text.len());
            sections.push(format!(
                "## Instructions from {}\n\n{}",
                path.display(),
                text.trim()
            ));
            read.push(path);
            if budget == 0 {
                break;
            }
        }
        if let Some(text) = options
            .append
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            sections.push(text.to_string());
        }
        Ok(Self {
            parts: PromptParts {
                base,
                instructions: sections.join("\n\n"),
            },
            files: read,
        })
    }
}

/// `--system-prompt-file`: a text file the user named.
fn read_base(path: &Path) -> Result<String, InstructionsError> {
    let error = |message: String| InstructionsError {
        path: path.display().to_string(),
        message,
    };
    let text =
        crate::base::bounded_read::read_to_string(path, MAX_BASE_BYTES, "a system prompt file")
            .map_err(|e| error(e.to_string()))?;
    if text.trim().is_empty() {
        return Err(error(String::from("the file is empty")));
    }
    Ok(text.trim_end().to_string())
}

/// AGENTS.md, else CLAUDE.md, in `dir`: a regular file, or a link to another instructions
/// file inside `within` (`CLAUDE.md -> AGENTS.md` is common; a link to `.env` or a key
/// would send that file to the model). The path returned is the one found (the link);
/// [`read_bounded`] checks again what it opened.
fn first_in(dir: &Path, within: Option<&Path>) -> Option<PathBuf> {
    NAMES.iter().map(|name| dir.join(name)).find_map(|path| {
        let target = std::fs::canonicalize(&path).ok()?;
        let named = target
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| NAMES.iter().any(|f| f.eq_ignore_ascii_case(n)));
        let inside = within.is_none_or(|root| target.starts_with(root));
        (named && inside && target.is_file()).then_some(path)
    })
}

/// The project's files, outermost first (see [`crate::config::project_folders`]).
fn project_files(workspace: &Path) -> Vec<(PathBuf, Option<PathBuf>)> {
    let folders = crate::config::project_folders(workspace);
    let Some(root) = folders
        .first()
        .and_then(|dir| std::fs::canonicalize(dir).ok())
    else {
        return Vec::new();
    };
    folders
        .iter()
        .filter_map(|dir| first_in(dir, Some(&root)))
        .map(|path| (path, Some(root.clone())))
        .collect()
}

/// Every path an instructions file of a session could be at, found or not (a new one
/// would instruct the next session): each name in the user's config folder and in every
/// project folder.
pub(crate) fn candidate_paths(config_dir: Option<&Path>, workspace: &Path) -> Vec<PathBuf> {
    config_dir
        .into_iter()
        .chain(crate::config::project_folders(workspace))
        .flat_map(|dir| NAMES.iter().map(move |name| dir.join(name)))
        .collect()
}

/// Up to `max` bytes of `path` as text, cut at a character boundary, without invisible
/// characters (a reviewer of the file cannot see them; the model can); `None` when it
/// cannot be read or holds nothing.
fn read_bounded(path: &Path, within: Option<&Path>, max: usize) -> Option<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut bytes = Vec::new();
    // Non-blocking, and checked on the handle: a file swapped for a pipe or a device
    // after it was found is not read.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .inspect_err(|e| tracing::warn!("{} is not used: {e}", path.display()))
        .ok()?;
    if !file.metadata().is_ok_and(|m| m.is_file()) || !opened_allowed(&file, within) {
        tracing::warn!(
            "{} is not used: it is not an instructions file of the project",
            path.display()
        );
        return None;
    }
    file.take(max as u64 + 1).read_to_end(&mut bytes).ok()?;
    let cut = bytes.len() > max;
    bytes.truncate(max);
    let text = String::from_utf8_lossy(&bytes);
    let mut text = crate::base::text::without_invisible(&text);
    if cut {
        text.push_str("\n\n[… the rest of this file is not included: it is too long]");
        tracing::warn!(
            "{} is longer than antler reads; only its first {max} bytes are used",
            path.display()
        );
    }
    (!text.trim().is_empty()).then_some(text)
}

/// Whether the file opened is an instructions file inside `within` (checked on the handle,
/// so a link swapped after it was found is caught).
fn opened_allowed(file: &std::fs::File, within: Option<&Path>) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) else {
        // Without /proc the check made when the file was found stands.
        return true;
    };
    let named = real
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| NAMES.iter().any(|f| f.eq_ignore_ascii_case(n)));
    named && within.is_none_or(|root| real.starts_with(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(workspace: &Path, config_dir: Option<&Path>, options: &PromptOptions) -> Instructions {
        Instructions::load(
            options,
            Some("Prefer small commits."),
            config_dir,
            workspace,
        )
        .unwrap()
    }

    #[test]
    fn files_from_the_repository_root_down_and_the_users_own_first() {
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("repo");
        let work = repo.join("crates/app");
        let user = root.path().join("config");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&user).unwrap();
        std::fs::write(root.path().join("AGENTS.md"), "outside the repository").unwrap();
        std::fs::write(repo.join("AGENTS.md"), "repo rules").unwrap();
        std::fs::write(repo.join("CLAUDE.md"), "not read: AGENTS.md is there").unwrap();
        std::fs::write(repo.join("crates/CLAUDE.md"), "crates rules").unwrap();
        std::fs::write(work.join("AGENTS.md"), "app rules").unwrap();
        std::fs::write(user.join("AGENTS.md"), "my rules").unwrap();
        let options = PromptOptions {
            append: Some(String::from("Answer in French.")),
            ..Default::default()
        };
        let got = load(&work, Some(&user), &options);
        assert_eq!(
            got.files,
            [
                user.join("AGENTS.md"),
                repo.join("AGENTS.md"),
                repo.join("crates/CLAUDE.md"),
                work.join("AGENTS.md")
            ]
        );
        let text = &got.parts.instructions;
        let order: Vec<usize> = [
            "Prefer small commits.",
            "my rules",
            "repo rules",
            "crates rules",
            "app rules",
            "Answer in French.",
        ]
        .iter()
        .map(|t| {
            text.find(t)
                .unwrap_or_else(|| panic!("{t} missing: {text}"))
        })
        .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert!(!text.contains("outside the repository") && !text.contains("not read"));
        assert!(text.contains(&format!(
            "## Instructions from {}",
            repo.join("AGENTS.md").display()
        )));
        assert_eq!(got.parts.base, None);
    }

    #[test]
    fn outside_a_repository_only_the_workspace_counts_and_files_are_bounded_and_cleaned() {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("w");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(root.path().join("AGENTS.md"), "parent").unwrap();
        let hidden = "visible\u{e0041}\u{e0042}\u{202e}text";
        let long = format!("{hidden}\n{}", "x".repeat(MAX_FILE_BYTES * 2));
        std::fs::write(work.join("AGENTS.md"), long).unwrap();
        let got = load(&work, None, &PromptOptions::default());
        assert_eq!(got.files, [work.join("AGENTS.md")]);
        let text = &got.parts.instructions;
        assert!(
            text.contains("visibletext"),
            "invisible characters are dropped"
        );
        assert!(text.contains("is not included: it is too long"));
        assert!(text.len() < MAX_FILE_BYTES + 1000, "{}", text.len());
        assert!(!text.contains("parent"));
    }

    #[test]
    fn a_link_counts_only_to_another_instructions_file_inside_the_project() {
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("w");
        std::fs::create_dir_all(work.join("docs")).unwrap();
        std::fs::write(root.path().join("secret"), "KEY=1").unwrap();
        std::fs::write(work.join(".env"), "TOKEN=2").unwrap();
        std::os::unix::fs::symlink(root.path().join("secret"), work.join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(".env", work.join("CLAUDE.md")).unwrap();
        let got = load(&work, None, &PromptOptions::default());
        assert!(got.files.is_empty(), "{:?}", got.files);
        let text = &got.parts.instructions;
        assert!(
            !text.contains("KEY=1") && !text.contains("TOKEN=2"),
            "{text}"
        );
        std::fs::remove_file(work.join("AGENTS.md")).unwrap();
        std::fs::remove_file(work.join("CLAUDE.md")).unwrap();
        std::fs::write(work.join("docs/AGENTS.md"), "linked rules").unwrap();
        std::os::unix::fs::symlink("docs/AGENTS.md", work.join("CLAUDE.md")).unwrap();
        let got = load(&work, None, &PromptOptions::default());
        assert_eq!(got.files, [work.join("CLAUDE.md")]);
        assert!(got.parts.instructions.contains("linked rules"));
    }

    #[test]
    fn what_was_opened_is_checked_on_the_handle() {
        let root = tempfile::tempdir().unwrap();
        let inside = root.path().join("AGENTS.md");
        let other = root.path().join("notes.txt");
        std::fs::write(&inside, "x").unwrap();
        std::fs::write(&other, "x").unwrap();
        let real_root = root.path().canonicalize().unwrap();
        let open = |p: &Path| std::fs::File::open(p).unwrap();
        assert!(opened_allowed(&open(&inside), Some(&real_root)));
        assert!(!opened_allowed(&open(&other), Some(&real_root)));
        assert!(!opened_allowed(&open(&inside), Some(Path::new("/nowhere"))));
    }

    #[test]
    fn a_system_prompt_file_replaces_the_base_and_must_be_readable() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("prompt.md");
        std::fs::write(&file, "You are a reviewer.\n").unwrap();
        let options = PromptOptions {
            system_prompt_file: Some(file),
            ..Default::default()
        };
        let got = load(root.path(), None, &options);
        assert_eq!(got.parts.base.as_deref(), Some("You are a reviewer."));
        let missing = PromptOptions {
            system_prompt_file: Some(root.path().join("nope.md")),
            ..Default::default()
        };
        let err = Instructions::load(&missing, None, None, root.path()).unwrap_err();
        assert!(err.to_string().contains("--system-prompt-file"), "{err}");
    }
}

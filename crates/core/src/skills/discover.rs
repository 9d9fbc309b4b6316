//! Finding the skills: the folders to look in, each skill folder in them, its frontmatter.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::folder::{self, Entry};
use super::frontmatter::{self, Frontmatter, MAX_FILE_BYTES};
use super::{AllowedTools, Skill, SkillError, SkillProblem, SkillSet, SkillSource, SkillState};

/// The folders that hold skill folders.
#[derive(Debug, Clone, Default)]
pub struct SkillRoots {
    /// The project's `.agents/skills` and `.claude/skills`, the workspace's first.
    pub project: Vec<PathBuf>,
    /// The user's own (`$XDG_CONFIG_HOME/antler/skills`).
    pub user: Option<PathBuf>,
    /// `skills.paths`, in order.
    pub paths: Vec<PathBuf>,
}

/// Whether a project skill's folder, with its SKILL.md's content and the folder's hash, is
/// trusted: `Err` says why not.
pub type TrustCheck<'a> = &'a dyn Fn(&ProjectSkill) -> Result<(), String>;

/// The project's skill folders that exist: `.agents/skills` then `.claude/skills` in each
/// folder from the workspace up to the repository root (the workspace's win).
pub fn project_roots(workspace: &Path) -> Vec<PathBuf> {
    crate::config::project_folders(workspace)
        .into_iter()
        .rev()
        .flat_map(|dir| [dir.join(".agents/skills"), dir.join(".claude/skills")])
        .filter(|dir| dir.is_dir())
        .collect()
}

/// A project skill read whole: what trust is given to.
#[derive(Debug, Clone)]
pub struct ProjectSkill {
    /// As found, not canonical: its folder, made absolute, is the trust store's key.
    pub skill_md: PathBuf,
    /// Its folder, canonical.
    pub dir: PathBuf,
    /// Read once with the hash, so what is trusted is what is parsed.
    pub content: Vec<u8>,
    /// The hash of the folder's files.
    pub sha256: String,
    /// Every file of the folder, sorted: what `sha256` covers.
    pub entries: Vec<Entry>,
}

/// The skill folders of the project's `root`, each read whole (SKILL.md and the hash of
/// every file), for trust; `Err` for a folder that cannot be a skill.
pub fn project_skill(dir: &Path) -> Result<ProjectSkill, SkillError> {
    let skill_md = dir.join("SKILL.md");
    let error = |problem| SkillError {
        skill_file: skill_md.clone(),
        problem,
    };
    let real = checked_dir(dir, None).map_err(error)?;
    let entries = folder::entries(&real).map_err(error)?;
    // The SKILL.md parsed is the one hashed, read once.
    let (sha256, content) = folder::hash(&real, &entries).map_err(error)?;
    Ok(ProjectSkill {
        skill_md: skill_md.clone(),
        dir: real,
        content,
        sha256,
        entries,
    })
}

/// The most entries of one skills folder looked at (a folder of thousands is not a set of
/// skills anyone chose).
const MAX_SKILLS_PER_FOLDER: usize = 500;

/// The skill folders in `root`: sub-folders holding a SKILL.md, by name.
pub fn skill_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .take(MAX_SKILLS_PER_FOLDER)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .filter(|p| std::fs::symlink_metadata(p.join("SKILL.md")).is_ok())
        .collect();
    dirs.sort();
    dirs
}

/// The canonical folder `dir`, whose SKILL.md must be a regular file inside it.
fn checked_dir(dir: &Path, real_parent: Option<&Path>) -> Result<PathBuf, SkillProblem> {
    let unreadable = |e: std::io::Error| {
        SkillProblem::in_file(dir.to_path_buf(), format!("cannot be read: {e}"))
    };
    // A folder that is no link, in a root already resolved, needs no resolving (each
    // resolution costs a system call per path component).
    let is_link = |path: &Path| std::fs::symlink_metadata(path).map(|m| m.file_type().is_symlink());
    let real = match (real_parent, dir.file_name()) {
        (Some(parent), Some(name)) if !is_link(dir).map_err(unreadable)? => parent.join(name),
        _ => std::fs::canonicalize(dir).map_err(unreadable)?,
    };
    let skill_md = dir.join("SKILL.md");
    let target = match is_link(&skill_md) {
        Ok(false) => real.join("SKILL.md"),
        _ => std::fs::canonicalize(&skill_md).map_err(|_| {
            SkillProblem::at(None, None, String::from("is a link that leads nowhere"))
        })?,
    };
    if target.parent() != Some(real.as_path()) {
        return Err(SkillProblem::at(
            None,
            None,
            String::from("is a link that leads out of the skill's folder"),
        ));
    }
    let meta = std::fs::metadata(&target)
        .map_err(|e| SkillProblem::at(None, None, format!("cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(SkillProblem::at(
            None,
            None,
            String::from("is not a regular file"),
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(SkillProblem::at(
            None,
            None,
            format!(
                "holds {} bytes; a SKILL.md may hold at most {} KiB, so it is not read",
                meta.len(),
                MAX_FILE_BYTES >> 10
            ),
        ));
    }
    Ok(real)
}

/// Every skill of `roots`, in precedence order. `disabled` says where a name is turned
/// off; `trust` judges project skills.
pub fn discover(
    roots: &SkillRoots,
    disabled: &dyn Fn(&str) -> Option<String>,
    trust: TrustCheck<'_>,
) -> SkillSet {
    let mut found = Found::default();
    let sources = roots
        .project
        .iter()
        .map(|r| (SkillSource::Project, r))
        .chain(roots.user.iter().map(|r| (SkillSource::User, r)))
        .chain(roots.paths.iter().map(|r| (SkillSource::Path, r)));
    for (source, root) in sources {
        let Ok(real_root) = std::fs::canonicalize(root) else {
            continue;
        };
        for dir in skill_dirs(root) {
            found.one(source, &real_root, &dir, disabled, trust);
        }
    }
    SkillSet::new(found.skills, found.errors, found.bytes_read)
}

#[derive(Default)]
struct Found {
    skills: Vec<Skill>,
    errors: Vec<SkillError>,
    bytes_read: u64,
    seen: BTreeSet<PathBuf>,
}

impl Found {
    fn one(
        &mut self,
        source: SkillSource,
        real_root: &Path,
        dir: &Path,
        disabled: &dyn Fn(&str) -> Option<String>,
        trust: TrustCheck<'_>,
    ) {
        let skill_md = dir.join("SKILL.md");
        match self.read(source, real_root, dir, disabled, trust) {
            Ok(Some(skill)) => self.skills.push(skill),
            Ok(None) => {}
            Err(problem) => {
                let error = SkillError {
                    skill_file: skill_md,
                    problem,
                };
                tracing::warn!("{error}");
                self.errors.push(error);
            }
        }
    }

    fn read(
        &mut self,
        source: SkillSource,
        real_root: &Path,
        dir: &Path,
        disabled: &dyn Fn(&str) -> Option<String>,
        trust: TrustCheck<'_>,
    ) -> Result<Option<Skill>, SkillProblem> {
        let real = checked_dir(dir, Some(real_root))?;
        // The same folder through two roots (`.claude/skills -> ../.agents/skills`).
        if self.seen.contains(&real) {
            return Ok(None);
        }
        if source == SkillSource::Project && !real.starts_with(real_root) {
            return Err(SkillProblem::in_file(
                dir.to_path_buf(),
                String::from("is a link that leads out of the project's skills folder"),
            ));
        }
        // Seen once checked: a project link to the user's folder that fails here does not
        // hide the user's own skill.
        self.seen.insert(real.clone());
        let folder_name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| {
                SkillProblem::in_file(
                    dir.to_path_buf(),
                    String::from("has a name that is not UTF-8"),
                )
            })?
            .to_string();
        let (front, sha256, state) = if source == SkillSource::Project {
            self.read_project(dir, &folder_name, trust)?
        } else {
            folder::check_links(&real)?;
            let front = self.read_user(dir, &folder_name)?;
            (front, None, SkillState::Usable)
        };
        let allowed_tools = front
            .allowed_tools
            .as_deref()
            .map(AllowedTools::parse)
            .transpose()
            .map_err(|why| SkillProblem::at(None, Some("allowed-tools"), why))?;
        let state = match disabled(&front.name) {
            Some(by) if state == SkillState::Usable => SkillState::Disabled { by },
            _ => state,
        };
        Ok(Some(Skill {
            name: front.name,
            description: front.description,
            source,
            file: dir.join("SKILL.md"),
            dir: real,
            license: front.license,
            compatibility: front.compatibility,
            allowed_tools,
            metadata: front.metadata,
            extra: front.extra,
            body_offset: front.body_offset,
            sha256,
            state,
        }))
    }

    /// A project skill is read whole, since trust is given to the hash of all its files;
    /// untrusted, it is listed as such and cannot be loaded.
    fn read_project(
        &mut self,
        dir: &Path,
        folder_name: &str,
        trust: TrustCheck<'_>,
    ) -> Result<(Frontmatter, Option<String>, SkillState), SkillProblem> {
        let whole = project_skill(dir).map_err(|e| e.problem)?;
        let front = frontmatter::read(&mut whole.content.as_slice(), folder_name)?;
        self.bytes_read += whole.content.len() as u64;
        let state = match trust(&whole) {
            Ok(()) => SkillState::Usable,
            Err(reason) => SkillState::Untrusted { reason },
        };
        Ok((front, Some(whole.sha256), state))
    }

    /// The user's skills and those of `skills.paths` need no trust: only their frontmatter
    /// is read.
    fn read_user(&mut self, dir: &Path, folder_name: &str) -> Result<Frontmatter, SkillProblem> {
        let mut file =
            crate::base::bounded_read::open_regular(&dir.join("SKILL.md")).map_err(|e| {
                SkillProblem::at(
                    None,
                    None,
                    format!("cannot be read: {}", std::io::Error::from(e)),
                )
            })?;
        let front = frontmatter::read(&mut file, folder_name)?;
        self.bytes_read += front.bytes_read;
        Ok(front)
    }
}

#[cfg(test)]
mod tests;

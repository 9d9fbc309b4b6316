//! Skills: the user's and the project's own procedures, in the open Agent Skills format (a
//! folder with a `SKILL.md`: YAML frontmatter, then Markdown instructions, and optional
//! `scripts/`, `references/`, `assets/`). Deferral applied to instructions: only the
//! frontmatter is read at start and only names and descriptions reach the prompt; a body
//! is read when the skill is loaded, its files when the body points at them.
//!
//! Found in the project (`.agents/skills`, `.claude/skills` from the repository root down
//! to the workspace), the user's config folder (`skills/`) and `skills.paths`, in that
//! order of precedence. A project skill is a project file: it is used only once trusted,
//! by the hash of its whole folder.

pub(crate) mod allowed;
pub mod discover;
pub(crate) mod folder;
mod frontmatter;
pub mod listing;
pub(crate) mod load;
pub(crate) mod name;
mod search_tool;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

pub use allowed::AllowedTools;
pub use discover::{SkillRoots, TrustCheck, discover, project_roots, project_skill};
pub use frontmatter::MAX_FILE_BYTES;

use crate::tools::{ToolInfo, ToolSource};
use antler_search::SearchIndex;

/// Where a skill was found, in order of precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkillSource {
    /// `.agents/skills` or `.claude/skills` in the project.
    Project,
    /// The user's `$XDG_CONFIG_HOME/antler/skills`.
    User,
    /// A folder of `skills.paths` in config.yaml.
    Path,
}

impl SkillSource {
    /// The source as a word.
    pub fn label(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::User => "user",
            Self::Path => "path",
        }
    }
}

/// What is wrong with a skill, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillProblem {
    /// The file, when it is not the SKILL.md (a link, a folder).
    pub file: Option<PathBuf>,
    /// The line of the SKILL.md, from 1.
    pub line: Option<usize>,
    /// The frontmatter field.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl SkillProblem {
    fn at(line: Option<usize>, field: Option<&str>, message: String) -> Self {
        Self {
            file: None,
            line,
            field: field.map(str::to_string),
            message,
        }
    }

    fn in_file(file: PathBuf, message: String) -> Self {
        Self {
            file: Some(file),
            line: None,
            field: None,
            message,
        }
    }
}

/// A skill that is skipped, and why (as config errors say it: file, line, field).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {what}{message}; the skill is skipped", place = self.place(), what = self.problem.field.as_ref().map_or(String::new(), |f| format!("{f}: ")), message = self.problem.message)]
pub struct SkillError {
    /// Named in the message unless the problem names another file.
    pub skill_file: PathBuf,
    /// What is wrong.
    pub problem: SkillProblem,
}

impl SkillError {
    fn place(&self) -> String {
        let file = self.problem.file.as_ref().unwrap_or(&self.skill_file);
        match self.problem.line {
            Some(line) => format!("{}:{line}", file.display()),
            None => file.display().to_string(),
        }
    }
}

/// Whether a skill found may be used, and if not why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillState {
    /// Listed, found by `tool_search`, loadable.
    Usable,
    /// Turned off (`skills.disabled`, or `enabled: false` in extensions_config.json).
    Disabled {
        /// What turned it off: `skills.disabled` in config.yaml, or an extensions file's
        /// `enabled: false`.
        by: String,
    },
    /// A project skill not trusted (in this content).
    Untrusted {
        /// Its trust state in words.
        reason: String,
    },
    /// Another skill of the same name comes first.
    Shadowed {
        /// The SKILL.md that wins.
        by: PathBuf,
    },
}

/// One skill found.
#[derive(Debug, Clone)]
pub struct Skill {
    /// Its name (its folder's).
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// Where it was found.
    pub source: SkillSource,
    /// Its folder, canonical.
    pub dir: PathBuf,
    /// Its SKILL.md, as found.
    pub file: PathBuf,
    /// The frontmatter's `license`, shown by `skills show`.
    pub license: Option<String>,
    /// The frontmatter's `compatibility`: what the skill needs of its host.
    pub compatibility: Option<String>,
    /// `allowed-tools`, parsed.
    pub allowed_tools: Option<AllowedTools>,
    /// The frontmatter's `metadata`, kept as written.
    pub metadata: BTreeMap<String, Value>,
    /// Frontmatter keys the format does not define.
    pub extra: BTreeMap<String, Value>,
    /// Where its body starts in the SKILL.md.
    pub body_offset: u64,
    /// For a project skill, the hash of its folder as trusted.
    pub sha256: Option<String>,
    /// Whether it may be used.
    pub state: SkillState,
}

impl Skill {
    /// Whether it is listed, found and loadable.
    pub fn usable(&self) -> bool {
        self.state == SkillState::Usable
    }

    /// Why it is not used, in words; `None` when it is.
    pub fn reason(&self) -> Option<String> {
        match &self.state {
            SkillState::Usable => None,
            SkillState::Disabled { by } => Some(format!("turned off by {by}")),
            SkillState::Untrusted { reason } => Some(format!(
                "a project skill {reason}; `antler trust` shows and trusts it"
            )),
            SkillState::Shadowed { by } => Some(format!("shadowed by {}", by.display())),
        }
    }

    /// The skill as a front-end offers it.
    pub fn info(&self) -> crate::protocol::SkillInfo {
        let reason = self.reason();
        crate::protocol::SkillInfo {
            name: self.name.clone(),
            description: listing::clean_line(&self.description),
            source: self.source.label().to_string(),
            usable: reason.is_none(),
            reason: reason.unwrap_or_default(),
        }
    }
}

/// Every skill of a session, found once at start.
#[derive(Default)]
pub struct SkillSet {
    /// Every skill found, in order of precedence (project, user, paths; by name within a
    /// folder), usable or not.
    pub skills: Vec<Skill>,
    /// The skills skipped, and why.
    pub errors: Vec<SkillError>,
    /// Bytes read from SKILL.md files at discovery (frontmatter only).
    pub bytes_read: u64,
    /// Usable skills by name.
    by_name: BTreeMap<String, usize>,
    /// Built by the first search.
    index: OnceLock<(SearchIndex, Vec<usize>)>,
}

impl SkillSet {
    /// The set of `skills` (in precedence order) and the `errors` met.
    pub fn new(mut skills: Vec<Skill>, errors: Vec<SkillError>, bytes_read: u64) -> Self {
        let mut by_name = BTreeMap::new();
        let mut winners: BTreeMap<String, PathBuf> = BTreeMap::new();
        for (i, skill) in skills.iter_mut().enumerate() {
            if !skill.usable() {
                continue;
            }
            if let Some(first) = winners.get(&skill.name) {
                skill.state = SkillState::Shadowed { by: first.clone() };
                continue;
            }
            winners.insert(skill.name.clone(), skill.file.clone());
            by_name.insert(skill.name.clone(), i);
        }
        Self {
            skills,
            errors,
            bytes_read,
            by_name,
            index: OnceLock::new(),
        }
    }

    /// The usable skills, in precedence order.
    pub fn usable(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| s.usable())
    }

    /// Whether any skill may be used.
    pub fn any_usable(&self) -> bool {
        !self.by_name.is_empty()
    }

    /// The usable skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.by_name.get(name).map(|&i| &self.skills[i])
    }

    /// The usable skills whose names or descriptions match `query` best, best first
    /// (ranked with the tools' search index).
    pub fn search(&self, query: &str, limit: usize) -> Vec<&Skill> {
        let (index, positions) = self.index.get_or_init(|| {
            let positions: Vec<usize> = self.by_name.values().copied().collect();
            let infos: Vec<ToolInfo> = positions
                .iter()
                .map(|&i| search_info(&self.skills[i]))
                .collect();
            (SearchIndex::new(&infos), positions)
        });
        index
            .search(query, limit, &|_| true)
            .into_iter()
            .map(|hit| &self.skills[positions[hit.index]])
            .collect()
    }

    /// The folders of the usable skills (the sandbox lets its tools read them; the file
    /// tools only once a thread loaded the skill).
    pub fn folders(&self) -> Vec<PathBuf> {
        self.usable().map(|s| s.dir.clone()).collect()
    }
}

impl std::fmt::Debug for SkillSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillSet")
            .field("skills", &self.skills.len())
            .field("errors", &self.errors.len())
            .finish_non_exhaustive()
    }
}

/// A skill as the search index sees it: a tool-like entry with its name and description.
fn search_info(skill: &Skill) -> ToolInfo {
    ToolInfo {
        name: skill.name.clone(),
        description: skill.description.clone(),
        parameters: serde_json::json!({"type": "object"}),
        source: ToolSource::BuiltIn,
        metadata: serde_json::Map::new(),
        parallel: true,
    }
}

/// The session's skills, shared.
pub type Skills = Arc<SkillSet>;

/// Offers `skills` in `setup`: `load_skill` bound, `tool_search` finding them too, and the
/// `<available-skills>` section within `budget` tokens. Nothing without a usable skill.
pub fn bind(
    setup: &mut crate::deferred::DeferredSetup,
    skills: &Skills,
    reads: &crate::tools::sandbox::SkillReads,
    budget: usize,
) {
    if !skills.any_usable() {
        return;
    }
    let usable: Vec<&Skill> = skills.usable().collect();
    let search = setup
        .bound
        .iter()
        .find(|t| t.info().name == crate::protocol::SEARCH_TOOL)
        .cloned();
    let section = listing::listing(&usable, budget, search.is_some()).text;
    let search = search.map(|inner| {
        Arc::new(search_tool::SkillSearch::new(
            inner,
            skills.clone(),
            setup.catalog.clone(),
            reads.clone(),
        )) as Arc<dyn crate::tools::Tool>
    });
    let load = load::LoadSkill::new(skills.clone(), setup.catalog.clone(), reads.clone());
    setup.add_skills(Arc::new(load), search, section);
}

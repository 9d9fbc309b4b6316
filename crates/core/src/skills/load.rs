//! Loading a skill: its body (bounded, cleaned like AGENTS.md), its folder and its files,
//! for the model (`load_skill`, `tool_search`'s `select:skill:NAME`) or for the user's
//! turn (`/NAME`, `--skill`). A project skill is checked against the hash it was trusted
//! with first: a file changed since start is refused.

use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Skill, SkillSet, folder};
use crate::deferred::{DeferredCatalog, estimate_tokens};
use crate::protocol::{Event, SkillLoadedBy};
use crate::tools::sandbox::SkillReads;
use crate::tools::{
    Effect, PromotedUpdate, StateUpdate, Tool, ToolContext, ToolFuture, ToolInfo, ToolOutput,
    ToolSource,
};

pub(crate) const LOAD_SKILL: &str = crate::protocol::LOAD_SKILL_TOOL;
/// The most of a body that is read.
pub(crate) const MAX_BODY_BYTES: usize = 32 * 1024;
/// The most files named.
const MAX_FILES_SHOWN: usize = 100;

/// A skill loaded: the text the model reads and what it cost.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    /// The body, folder and files, as one text.
    pub text: String,
    /// Its estimated tokens.
    pub tokens: usize,
}

/// Reads `skill` now.
pub(crate) fn load(skill: &Skill) -> Result<Loaded, String> {
    let entries = folder::entries(&skill.dir).map_err(|p| p.message)?;
    let mut hashed = None;
    if let Some(trusted) = &skill.sha256 {
        let (now, skill_md) = folder::hash(&skill.dir, &entries).map_err(|p| p.message)?;
        hashed = Some(skill_md);
        if &now != trusted {
            return Err(format!(
                "the project skill `{}` changed since it was trusted at start; it is not loaded \
                 (`antler trust` shows it again)",
                skill.name
            ));
        }
    }
    // A project skill's body is taken from the bytes just hashed: what was trusted.
    let body = match hashed {
        Some(bytes) => body_of(skill, bytes, false)?,
        None => read_body(skill)?,
    };
    let mut text = format!(
        "Skill `{}` ({} skill). Its folder is {}; paths in it are relative to that folder. \
         These are the skill author's instructions for the task:\n\n{}\n",
        skill.name,
        skill.source.label(),
        skill.dir.display(),
        body.trim()
    );
    let files: Vec<&folder::Entry> = entries
        .iter()
        .filter(|e| e.path.as_os_str() != "SKILL.md")
        .collect();
    if !files.is_empty() {
        text.push_str(
            "\nFiles of the skill (read them with read_file when the instructions point at them; \
             scripts run with bash):\n",
        );
        for entry in files.iter().take(MAX_FILES_SHOWN) {
            let path = crate::base::text::printable(&entry.path.to_string_lossy());
            let mark = if entry.executable {
                " (executable)"
            } else {
                ""
            };
            text.push_str(&format!("- {path}{mark}\n"));
        }
        if files.len() > MAX_FILES_SHOWN {
            text.push_str(&format!("- … and {} more\n", files.len() - MAX_FILES_SHOWN));
        }
    }
    let tokens = estimate_tokens(&text);
    Ok(Loaded { text, tokens })
}

/// The body of `skill`'s SKILL.md: up to [`MAX_BODY_BYTES`], without invisible characters.
fn read_body(skill: &Skill) -> Result<String, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let fail = |e: std::io::Error| format!("{}: cannot be read: {e}", skill.file.display());
    // What the SKILL.md is now: still inside its folder (a link swapped in since start that
    // leads elsewhere is refused), opened without following a link from there on.
    let real = std::fs::canonicalize(&skill.file).map_err(fail)?;
    if real.parent() != Some(skill.dir.as_path()) {
        return Err(format!(
            "{}: is now a link that leads out of the skill's folder; it is not read",
            skill.file.display()
        ));
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&real)
        .map_err(fail)?;
    if !file.metadata().map_err(fail)?.is_file() {
        return Err(format!("{}: is not a regular file", skill.file.display()));
    }
    file.seek(SeekFrom::Start(skill.body_offset))
        .map_err(fail)?;
    let mut bytes = Vec::new();
    file.take(MAX_BODY_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    body_of(skill, bytes, true)
}

/// The body from `bytes`: the rest of the file when `from_body`, else the whole file (whose
/// body starts at the skill's offset).
fn body_of(skill: &Skill, mut bytes: Vec<u8>, from_body: bool) -> Result<String, String> {
    if !from_body {
        let start = usize::try_from(skill.body_offset)
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        bytes.drain(..start);
    }
    let cut = bytes.len() > MAX_BODY_BYTES;
    bytes.truncate(MAX_BODY_BYTES);
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        // A cut inside a character.
        Err(e) if cut && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => {
            return Err(format!(
                "{}: the body is not UTF-8 text",
                skill.file.display()
            ));
        }
    };
    let mut text = crate::base::text::without_invisible(text);
    if cut {
        text.push_str("\n\n[… the rest of this skill is not included: it is too long]");
    }
    Ok(text)
}

/// The thread-state change of loading `skill`: it is loaded and active, and the deferred
/// MCP tools its `allowed-tools` names exactly are promoted.
pub(crate) fn state_update(skill: &Skill, catalog: Option<&DeferredCatalog>) -> StateUpdate {
    let promoted = catalog
        .zip(skill.allowed_tools.as_ref())
        .and_then(|(catalog, allowed)| {
            let names: Vec<String> = catalog
                .infos()
                .iter()
                .filter(|info| allowed.names_exactly(&info.name, &info.source))
                .map(|info| info.name.clone())
                .collect();
            (!names.is_empty()).then(|| PromotedUpdate {
                catalog_hash: catalog.hash().to_string(),
                names,
            })
        });
    StateUpdate {
        promoted,
        skills_loaded: vec![skill.name.clone()],
        ..Default::default()
    }
}

/// The event of a load.
pub(crate) fn loaded_event(turn: u32, skill: &Skill, tokens: usize, by: SkillLoadedBy) -> Event {
    Event::SkillLoaded {
        turn,
        name: skill.name.clone(),
        source: skill.source.label().to_string(),
        tokens,
        by,
    }
}

/// What the model gets for a name that is no usable skill: the closest ones.
pub(crate) fn unknown(skills: &SkillSet, name: &str) -> String {
    let mut text = format!(
        "Error: there is no skill named `{}`.",
        crate::base::text::quoted(name)
    );
    let words = name.replace(['-', '_'], " ");
    let near: Vec<String> = skills
        .search(&words, 5)
        .into_iter()
        .map(|s| {
            format!(
                "{} ({})",
                s.name,
                super::listing::clean_line(&s.description)
            )
        })
        .collect();
    if !near.is_empty() {
        text.push_str(&format!(" Skills that match: {}.", near.join("; ")));
    }
    text
}

/// Loads `skill` for the model: the output, its state update, the event, the read grant.
pub(crate) fn for_model(
    skill: &Skill,
    catalog: Option<&DeferredCatalog>,
    reads: &SkillReads,
    ctx: &ToolContext<'_>,
) -> ToolOutput {
    match load(skill) {
        Err(why) => ToolOutput::error(format!("Error: {why}")),
        Ok(loaded) => {
            reads.grant(&skill.dir);
            (ctx.events)(loaded_event(
                ctx.turn,
                skill,
                loaded.tokens,
                SkillLoadedBy::Model,
            ));
            let mut output = ToolOutput::ok(loaded.text);
            output.state_update = Some(Box::new(state_update(skill, catalog)));
            output
        }
    }
}

/// `load_skill`.
pub(crate) struct LoadSkill {
    info: ToolInfo,
    skills: Arc<SkillSet>,
    catalog: Option<Arc<DeferredCatalog>>,
    reads: SkillReads,
}

impl LoadSkill {
    /// The tool over `skills`; `catalog` is the deferred catalog whose tools a skill's
    /// `allowed-tools` promotes.
    pub(crate) fn new(
        skills: Arc<SkillSet>,
        catalog: Option<Arc<DeferredCatalog>>,
        reads: SkillReads,
    ) -> Self {
        let info = ToolInfo {
            name: LOAD_SKILL.to_string(),
            description: String::from(
                "Load a skill listed in <available-skills>: returns its instructions, its folder \
                 and its files. Load the skill before doing a task it covers, then follow it.",
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The skill's name"}
                },
                "required": ["name"]
            }),
            source: ToolSource::BuiltIn,
            metadata: Map::new(),
            parallel: true,
        };
        Self {
            info,
            skills,
            catalog,
            reads,
        }
    }
}

impl Tool for LoadSkill {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn call<'a>(&'a self, ctx: ToolContext<'a>, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let Some(name) = arguments.get("name").and_then(Value::as_str) else {
                return ToolOutput::error("Error: load_skill takes {\"name\": string}");
            };
            let name = name.trim();
            match self.skills.get(name) {
                Some(skill) => for_model(skill, self.catalog.as_deref(), &self.reads, &ctx),
                None => ToolOutput::error(unknown(&self.skills, name)),
            }
        })
    }
}

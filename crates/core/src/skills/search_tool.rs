//! `tool_search` that finds skills too: a ranked query also matches the skills' names and
//! descriptions (with the tools' index type, over the skills), and `select:skill:NAME`
//! loads one. It wraps the deferred setup's own `tool_search`, which answers for tools.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{SkillSet, listing::clean_line, load};
use crate::deferred::DeferredCatalog;
use crate::tools::sandbox::SkillReads;
use crate::tools::{Effect, StateUpdate, Tool, ToolContext, ToolFuture, ToolInfo, ToolOutput};

/// How many skills a ranked search names.
const SKILL_HITS: usize = 3;
/// The prefix of a skill in a `select:` list.
const SKILL_PREFIX: &str = "skill:";

/// `tool_search` over the skills too, wrapping the deferred setup's own.
pub(super) struct SkillSearch {
    inner: Arc<dyn Tool>,
    info: ToolInfo,
    skills: Arc<SkillSet>,
    catalog: Option<Arc<DeferredCatalog>>,
    reads: SkillReads,
}

impl SkillSearch {
    /// `inner` (the deferred setup's `tool_search`), finding `skills` too.
    pub(super) fn new(
        inner: Arc<dyn Tool>,
        skills: Arc<SkillSet>,
        catalog: Option<Arc<DeferredCatalog>>,
        reads: SkillReads,
    ) -> Self {
        let mut info = inner.info().clone();
        info.description.push_str(
            " Searches also name matching skills (<available-skills>); \
             \"select:skill:NAME\" loads a skill.",
        );
        Self {
            inner,
            info,
            skills,
            catalog,
            reads,
        }
    }

    /// The skills a `select:` list names, loaded, and the tool names left.
    fn select_skills(&self, list: &str, ctx: &ToolContext<'_>) -> (Vec<ToolOutput>, Vec<String>) {
        let mut loaded = Vec::new();
        let mut tools = Vec::new();
        for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item.strip_prefix(SKILL_PREFIX) {
                Some(name) => loaded.push(match self.skills.get(name.trim()) {
                    Some(skill) => {
                        load::for_model(skill, self.catalog.as_deref(), &self.reads, ctx)
                    }
                    None => ToolOutput::error(load::unknown(&self.skills, name.trim())),
                }),
                None => tools.push(item.to_string()),
            }
        }
        (loaded, tools)
    }

    /// The skills a ranked query matches, as lines to append.
    fn matching(&self, query: &str) -> String {
        let hits = self.skills.search(query, SKILL_HITS);
        if hits.is_empty() {
            return String::new();
        }
        let mut text = String::from(
            "\n\nSkills that match (instructions for the task, not tools; load one with \
             load_skill or select:skill:NAME):",
        );
        for skill in hits {
            text.push_str(&format!(
                "\n- {}: {}",
                skill.name,
                clean_line(&skill.description)
            ));
        }
        text
    }
}

/// The outputs as one: texts joined, an error only if all failed, state updates merged.
fn merge(outputs: Vec<ToolOutput>) -> ToolOutput {
    let is_error = outputs.iter().all(|o| o.is_error);
    let mut update = StateUpdate::default();
    let mut texts = Vec::new();
    for output in outputs {
        texts.push(output.content);
        let Some(part) = output.state_update else {
            continue;
        };
        update.skills_loaded.extend(part.skills_loaded);
        match (&mut update.promoted, part.promoted) {
            (Some(have), Some(more)) if have.catalog_hash == more.catalog_hash => {
                for name in more.names {
                    if !have.names.contains(&name) {
                        have.names.push(name);
                    }
                }
            }
            (slot @ None, more) => *slot = more,
            _ => {}
        }
    }
    ToolOutput {
        content: texts.join("\n\n"),
        is_error,
        state_update: (update.promoted.is_some() || !update.skills_loaded.is_empty())
            .then(|| Box::new(update)),
    }
}

impl Tool for SkillSearch {
    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn role(&self) -> crate::protocol::ToolRole {
        crate::protocol::ToolRole::Search
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn call<'a>(&'a self, ctx: ToolContext<'a>, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let Some(query) = arguments.get("query").and_then(Value::as_str) else {
                return self.inner.call(ctx, arguments).await;
            };
            let query = query.trim().to_string();
            if let Some(list) = query.strip_prefix("select:") {
                let (mut outputs, tools) = self.select_skills(list, &ctx);
                if outputs.is_empty() {
                    return self.inner.call(ctx, arguments).await;
                }
                if !tools.is_empty() {
                    let rest = json!({"query": format!("select:{}", tools.join(","))});
                    outputs.push(self.inner.call(ctx, rest).await);
                }
                return merge(outputs);
            }
            let mut output = self.inner.call(ctx, arguments).await;
            if !output.is_error && !query.starts_with('+') {
                output.content.push_str(&self.matching(&query));
            }
            output
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deferred::ToolSearch;
    use crate::deferred::testing::sample_catalog;
    use crate::skills::discover::{SkillRoots, discover};

    fn search_over(dir: &std::path::Path) -> SkillSearch {
        let skill_dir = dir.join("release-notes");
        std::fs::create_dir_all(&skill_dir).unwrap();
        std::fs::write(
            skill_dir.join("SKILL.md"),
            "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\nBODY STEPS\n",
        )
        .unwrap();
        let roots = SkillRoots {
            user: Some(dir.to_path_buf()),
            ..Default::default()
        };
        let skills = Arc::new(discover(&roots, &|_| None, &|_| Ok(())));
        let catalog = sample_catalog();
        let inner = Arc::new(ToolSearch::new(catalog.clone(), 5));
        SkillSearch::new(inner, skills, Some(catalog), SkillReads::default())
    }

    #[tokio::test]
    async fn select_loads_a_skill_and_a_ranked_search_names_matching_ones() {
        let dir = tempfile::tempdir().unwrap();
        let search = search_over(dir.path());
        let ctx = ToolContext::standalone("c");
        let out = search
            .call(ctx.clone(), json!({"query": "select:skill:release-notes"}))
            .await;
        assert!(
            !out.is_error && out.content.contains("BODY STEPS"),
            "{out:?}"
        );
        let update = out.state_update.unwrap();
        assert_eq!(update.skills_loaded, ["release-notes"]);
        let out = search
            .call(ctx.clone(), json!({"query": "select:skill:../../etc"}))
            .await;
        assert!(out.is_error && out.content.contains("no skill named"));
        let out = search
            .call(ctx.clone(), json!({"query": "write release notes git log"}))
            .await;
        assert!(out.content.contains("Skills that match"), "{}", out.content);
        assert!(out.content.contains("- release-notes: Write release notes"));
        assert!(
            !out.content.contains("BODY STEPS"),
            "a search names, never loads"
        );
    }
}

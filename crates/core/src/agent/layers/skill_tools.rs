//! A skill's `allowed-tools` while it is active in a run: a call of a tool none of the
//! active skills' lists names is answered with an error that names the skills. It only
//! narrows: a call it lets through still meets the permission policy.

use std::sync::Arc;

use serde_json::Value;

use crate::agent::middleware::Layer;
use crate::agent::state::ThreadState;
use crate::deferred::DeferredCatalog;
use crate::skills::Skills;
use crate::tools::{PreparedCall, Tool, ToolOutput};

/// The layer that answers calls the active skills' `allowed-tools` leave out.
pub(crate) struct SkillTools {
    skills: Skills,
    bound: Vec<Arc<dyn Tool>>,
    catalog: Option<Arc<DeferredCatalog>>,
}

impl SkillTools {
    /// Over `skills`, looking tools up among `bound` and in `catalog`.
    pub(crate) fn new(
        skills: Skills,
        bound: Vec<Arc<dyn Tool>>,
        catalog: Option<Arc<DeferredCatalog>>,
    ) -> Self {
        Self {
            skills,
            bound,
            catalog,
        }
    }

    /// The skills a call loads: `load_skill`'s, or `tool_search`'s `select:skill:NAME`s.
    fn loads(&self, tool: &str, arguments: &Value) -> Vec<String> {
        match tool {
            crate::protocol::LOAD_SKILL_TOOL => arguments
                .get("name")
                .and_then(Value::as_str)
                .map(|n| vec![n.trim().to_string()])
                .unwrap_or_default(),
            crate::protocol::SEARCH_TOOL => arguments
                .get("query")
                .and_then(Value::as_str)
                .and_then(|q| q.trim().strip_prefix("select:"))
                .map(|list| {
                    list.split(',')
                        .filter_map(|i| i.trim().strip_prefix("skill:"))
                        .map(|n| n.trim().to_string())
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.bound
            .iter()
            .find(|t| t.info().name == name)
            .or_else(|| self.catalog.as_ref().and_then(|c| c.tool(name)))
    }
}

impl Layer for SkillTools {
    fn name(&self) -> &'static str {
        "skill_tools"
    }

    fn before_tool(&self, state: &mut ThreadState, call: &PreparedCall) -> Option<ToolOutput> {
        let arguments = call.value().unwrap_or(&Value::Null);
        // A skill that restricts is active from its load on, also for the calls made in the
        // same reply as the load (their `before_tool` runs before the load's result is in).
        for name in self.loads(&call.name, arguments) {
            if self
                .skills
                .get(&name)
                .is_some_and(|s| s.allowed_tools.is_some())
            {
                state.skill_loaded(&name);
            }
        }
        let restricting: Vec<_> = state
            .active_skills
            .iter()
            .filter_map(|name| self.skills.get(name))
            .filter_map(|skill| skill.allowed_tools.as_ref().map(|a| (skill, a)))
            .collect();
        if restricting.is_empty() {
            return None;
        }
        let tool = self.tool(&call.name);
        let source = tool.map(|t| &t.info().source);
        let subject = tool.and_then(|t| t.subject(arguments));
        let commands = tool.is_some_and(|t| t.effect() == crate::tools::Effect::RunsCommands);
        // Every active skill's list must allow it: loading a broader one lifts nothing.
        let refusing: Vec<_> = restricting
            .iter()
            .filter(|(_, allowed)| {
                !allowed.allows(&call.name, source, subject.as_deref(), commands)
            })
            .collect();
        if refusing.is_empty() {
            return None;
        }
        let names: Vec<String> = refusing
            .iter()
            .map(|(skill, allowed)| format!("`{}` (allowed-tools: {})", skill.name, allowed.text()))
            .collect();
        Some(ToolOutput::error(format!(
            "Error: `{}` may not run while the skill {} is active in this run. Use the tools \
             it allows, or answer without this call.",
            crate::base::text::quoted(&call.name),
            names.join(" and the skill ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolCall;
    use crate::skills::listing::tests::skill;
    use crate::skills::{AllowedTools, SkillSet};

    #[test]
    fn only_the_active_skills_tools_run() {
        let mut restricted = skill("review", "reviews");
        restricted.allowed_tools = Some(AllowedTools::parse(&["Read Grep".into()]).unwrap());
        let free = skill("notes", "no list");
        let skills = Arc::new(SkillSet::new(vec![restricted, free], Vec::new(), 0));
        let layer = SkillTools::new(skills, Vec::new(), None);
        let call = |name: &str| ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: "{}".into(),
        };
        let mut state = ThreadState::default();
        assert!(
            layer
                .before_tool(&mut state, &call("bash").into())
                .is_none(),
            "no skill active"
        );
        state.skill_loaded("notes");
        assert!(
            layer
                .before_tool(&mut state, &call("bash").into())
                .is_none(),
            "no list, no limit"
        );
        state.skill_loaded("review");
        let refused = layer.before_tool(&mut state, &call("bash").into()).unwrap();
        assert!(
            refused.is_error
                && refused
                    .content
                    .contains("`review` (allowed-tools: Read Grep)")
        );
        assert!(
            layer
                .before_tool(&mut state, &call("read_file").into())
                .is_none()
        );
        assert!(
            layer
                .before_tool(&mut state, &call("load_skill").into())
                .is_none()
        );
        state.active_skills.clear();
        assert!(
            layer
                .before_tool(&mut state, &call("bash").into())
                .is_none(),
            "a new run"
        );
    }
}

//! The static registry of configured-tool implementations. Rust has no reflection, so the
//! `use` identifiers of `config.yaml` map to factories listed here.

use std::path::Path;
use std::sync::Arc;

use super::sandbox::{self, Protected, SharedSandbox};
use super::tool::{Tool, ToolSource};
use crate::config::{AppConfig, ToolConfig};

/// What a factory gets to build one configured tool.
pub struct ToolBuildContext<'a> {
    /// The tool's entry in `config.yaml`.
    pub entry: &'a ToolConfig,
    /// The whole configuration (sandbox settings, ...).
    pub app: &'a AppConfig,
    /// The working directory antler runs in.
    pub cwd: &'a Path,
    /// The source to tag the tool with.
    pub source: ToolSource,
    /// The sandbox runtime that every sandbox tool of this build shares.
    pub sandbox: &'a SharedSandbox<'a>,
}

/// One implementation that `use:` can name.
pub struct ToolFactory {
    /// The identifier written in `use:`, e.g. `antler.sandbox:ls`.
    pub id: &'static str,
    /// The tool's own name.
    pub tool_name: &'static str,
    /// The keys of its config entry it reads besides `name`, `group` and `use`; any other
    /// key is reported as ignored.
    pub settings: &'static [&'static str],
    /// Builds the tool; the error says which setting is wrong.
    pub build: fn(&ToolBuildContext<'_>) -> Result<Arc<dyn Tool>, String>,
}

/// Every implementation a configured tool can `use`.
static FACTORIES: &[ToolFactory] = &[
    sandbox::LS,
    sandbox::READ_FILE,
    sandbox::WRITE_FILE,
    sandbox::STR_REPLACE,
    sandbox::GLOB,
    sandbox::GREP,
    sandbox::BASH,
    sandbox::WEB_FETCH,
];

/// The identifiers `use:` accepts, for error messages and `--help`.
pub fn known_tool_ids() -> Vec<&'static str> {
    FACTORIES.iter().map(|f| f.id).collect()
}

/// A key of a configured tool's entry that its implementation does not read (a typo such
/// as `max_reslts`): reported, then ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownSetting {
    /// Position in `tools:`.
    pub index: usize,
    /// As written in the tool's entry.
    pub key: String,
    /// The implementation (`use:`).
    pub use_id: &'static str,
    /// The settings it does read.
    pub settings: &'static [&'static str],
}

/// The unknown settings of every configured tool whose `use:` is known (an unknown `use:`
/// is an error of its own when the tools are built).
pub fn unknown_tool_settings(app: &AppConfig) -> Vec<UnknownSetting> {
    let mut found = Vec::new();
    for (index, entry) in app.tools.iter().enumerate() {
        let Some(factory) = FACTORIES.iter().find(|f| f.id == entry.use_) else {
            continue;
        };
        for key in entry.extra.keys() {
            if !factory.settings.contains(&key.as_str()) {
                found.push(UnknownSetting {
                    index,
                    key: key.clone(),
                    use_id: factory.id,
                    settings: factory.settings,
                });
            }
        }
    }
    found
}

/// A configured tool that cannot be built: a configuration error.
#[derive(Debug, thiserror::Error)]
pub enum ConfiguredToolError {
    /// `use:` names no known implementation.
    #[error("tools[{index}] `{name}`: unknown `use: {use_id}` (known: {known})")]
    UnknownUse {
        /// Position in `tools:`.
        index: usize,
        /// Its `name`: what the model would have called it.
        name: String,
        /// The unknown identifier.
        use_id: String,
        /// The known identifiers, comma-separated.
        known: String,
    },
    /// The implementation rejected its settings.
    #[error("tools[{index}] `{name}`: {message}")]
    Build {
        /// Position in `tools:`.
        index: usize,
        /// Its `name`: what the model would have called it.
        name: String,
        /// What is wrong.
        message: String,
    },
}

/// The configured tier, built.
#[derive(Debug)]
pub struct ConfiguredTools {
    /// The tools, in `config.yaml` order.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Non-fatal problems: name mismatches, undeclared groups.
    pub warnings: Vec<String>,
}

/// Builds the configured tools in `config.yaml` order, keeping only those in `groups` when
/// it is given. The sandbox tools keep out of `protected`.
pub fn build_configured_tools(
    app: &AppConfig,
    cwd: &Path,
    protected: &Protected,
    groups: Option<&[String]>,
) -> Result<ConfiguredTools, ConfiguredToolError> {
    let mut tools = Vec::new();
    let mut warnings = Vec::new();
    let shared_sandbox = SharedSandbox::new(&app.sandbox, cwd, protected);
    // Every entry is validated, also those the group filter leaves out: a broken entry
    // must not hide behind a filter.
    for (index, entry) in app.tools.iter().enumerate() {
        let factory = FACTORIES
            .iter()
            .find(|f| f.id == entry.use_)
            .ok_or_else(|| ConfiguredToolError::UnknownUse {
                index,
                name: entry.name.clone(),
                use_id: entry.use_.clone(),
                known: known_tool_ids().join(", "),
            })?;
        if entry.name != factory.tool_name {
            warnings.push(format!(
                "tools[{index}]: the name `{}` differs from the tool's own name `{}`; \
                 the model sees `{}`",
                entry.name, factory.tool_name, factory.tool_name
            ));
        }
        if let Some(group) = &entry.group
            && !app.tool_groups.iter().any(|g| &g.name == group)
        {
            warnings.push(format!(
                "tools[{index}] `{}`: the group `{group}` is not declared in tool_groups",
                entry.name
            ));
        }
        let ctx = ToolBuildContext {
            entry,
            app,
            cwd,
            source: ToolSource::Configured {
                use_id: entry.use_.clone(),
                group: entry.group.clone(),
            },
            sandbox: &shared_sandbox,
        };
        let tool = (factory.build)(&ctx).map_err(|message| ConfiguredToolError::Build {
            index,
            name: entry.name.clone(),
            message,
        })?;
        let selected =
            groups.is_none_or(|groups| entry.group.as_ref().is_some_and(|g| groups.contains(g)));
        if selected {
            tools.push(tool);
        }
    }
    for group in groups.unwrap_or_default() {
        if !app.tools.iter().any(|t| t.group.as_ref() == Some(group)) {
            warnings.push(format!("no configured tool is in the group `{group}`"));
        }
    }
    Ok(ConfiguredTools { tools, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ToolGroupConfig, parse_app_config};

    fn app(yaml: &str) -> AppConfig {
        parse_app_config(yaml, Path::new("config.yaml"), &|_| None)
            .unwrap()
            .value
    }

    #[test]
    fn settings_an_implementation_does_not_read_are_found() {
        let cfg = app(
            "tools:\n  - {name: grep, use: antler.sandbox:grep, max_reslts: 3, max_results: 4}\n  - {name: x, use: nope:x, y: 1}\n",
        );
        let found = unknown_tool_settings(&cfg);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].index, found[0].key.as_str()), (0, "max_reslts"));
        assert_eq!(found[0].settings, ["max_results"]);
    }

    #[test]
    fn builds_known_tools_with_their_source() {
        let cfg = app(
            "tool_groups: [{name: files}]\ntools:\n  - {name: ls, group: files, use: antler.sandbox:ls}\n",
        );
        let ConfiguredTools { tools, warnings } =
            build_configured_tools(&cfg, Path::new("."), &Default::default(), None).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(tools.len(), 1);
        let info = tools[0].info();
        assert_eq!(info.name, "ls");
        assert_eq!(
            info.source,
            ToolSource::Configured {
                use_id: "antler.sandbox:ls".into(),
                group: Some("files".into())
            }
        );
    }

    #[test]
    fn unknown_use_lists_the_known_ids() {
        let cfg = app("tools:\n  - {name: web, use: deerflow.community.tavily:web_search}\n");
        let err =
            build_configured_tools(&cfg, Path::new("."), &Default::default(), None).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("tools[0] `web`: unknown `use: deerflow.community.tavily:web_search`")
        );
        assert!(
            text.contains("known: antler.sandbox:ls, antler.sandbox:read_file"),
            "{text}"
        );
    }

    #[test]
    fn name_mismatch_and_undeclared_group_warn() {
        let cfg = app("tools:\n  - {name: list_dir, group: misc, use: antler.sandbox:ls}\n");
        let ConfiguredTools { tools, warnings } =
            build_configured_tools(&cfg, Path::new("."), &Default::default(), None).unwrap();
        assert_eq!(tools[0].info().name, "ls");
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("`list_dir` differs from the tool's own name `ls`"));
        assert!(warnings[1].contains("group `misc` is not declared"));
    }

    #[test]
    fn group_filter_keeps_only_listed_groups() {
        let mut cfg = app(
            "tools:\n  - {name: ls, group: a, use: antler.sandbox:ls}\n  - {name: ls, group: b, use: antler.sandbox:ls, max_results: 3}\n  - {name: ls, use: antler.sandbox:ls}\n",
        );
        cfg.tool_groups = vec![
            ToolGroupConfig {
                name: "a".into(),
                extra: Default::default(),
            },
            ToolGroupConfig {
                name: "b".into(),
                extra: Default::default(),
            },
        ];
        let only_b = [String::from("b")];
        let ConfiguredTools { tools, .. } =
            build_configured_tools(&cfg, Path::new("."), &Default::default(), Some(&only_b))
                .unwrap();
        assert_eq!(tools.len(), 1);
        assert!(
            matches!(&tools[0].info().source, ToolSource::Configured { group: Some(g), .. } if g == "b")
        );
        let ConfiguredTools { tools: all, .. } =
            build_configured_tools(&cfg, Path::new("."), &Default::default(), None).unwrap();
        assert_eq!(all.len(), 3);
        let nothing = [String::from("nothing")];
        let built =
            build_configured_tools(&cfg, Path::new("."), &Default::default(), Some(&nothing))
                .unwrap();
        assert!(built.tools.is_empty());
        assert_eq!(
            built.warnings,
            ["no configured tool is in the group `nothing`"]
        );
    }

    #[test]
    fn bad_settings_are_build_errors() {
        let cfg = app("tools:\n  - {name: ls, use: antler.sandbox:ls, max_results: many}\n");
        let err =
            build_configured_tools(&cfg, Path::new("."), &Default::default(), None).unwrap_err();
        assert!(err.to_string().contains("max_results"), "{err}");
        let only_a = [String::from("a")];
        let cfg = app("tools:\n  - {name: x, group: b, use: no.such:tool}\n");
        let err = build_configured_tools(&cfg, Path::new("."), &Default::default(), Some(&only_a))
            .unwrap_err();
        assert!(
            err.to_string().contains("unknown `use: no.such:tool`"),
            "filtered entries are checked too"
        );
    }
}

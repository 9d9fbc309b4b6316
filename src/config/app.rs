//! `config.yaml`: its typed shape (following DeerFlow's config.yaml) and its loading.
//!
//! Loading runs in three steps so that every error can be precise: the raw text is parsed
//! once for syntax (line and column), once into the typed shape for wrong types (line,
//! column, key path, expected type) while unknown keys are collected as warnings, and then
//! `$NAME` values are expanded on the parsed tree (errors name the variable and key path).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use yaml_serde::Value as Yaml;

use super::{ConfigError, EnvLookup, expand_string};

/// Top-level keys of `config.yaml`; any other key is reported as a warning.
const KNOWN_TOP_LEVEL: &[&str] = &[
    "models",
    "tools",
    "tool_groups",
    "tool_search",
    "sandbox",
    "subagents",
    "summarization",
];

/// Everything `config.yaml` configures. A missing file means `AppConfig::default()`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct AppConfig {
    /// Chat models the agent can use; the first is the default.
    pub models: Vec<ModelConfig>,
    /// Configured tools, selected by their `use` identifier.
    pub tools: Vec<ToolConfig>,
    /// Named groups that configured tools can belong to.
    pub tool_groups: Vec<ToolGroupConfig>,
    /// Deferred tool loading.
    pub tool_search: ToolSearchConfig,
    /// Where and how file and shell tools run.
    pub sandbox: SandboxConfig,
    /// Limits for delegated subagents.
    pub subagents: SubagentsConfig,
    /// History summarisation.
    pub summarization: SummarizationConfig,
}

/// One chat model on an OpenAI-compatible endpoint.
#[derive(Clone, Deserialize, Serialize)]
pub struct ModelConfig {
    /// The name used to pick this model (`--model NAME`).
    pub name: String,
    /// A friendlier name for display.
    #[serde(default)]
    pub display_name: Option<String>,
    /// The endpoint, e.g. `https://api.openai.com/v1`; the provider default when absent.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The model identifier sent to the endpoint.
    pub model: String,
    /// The API key, usually `$OPENAI_API_KEY`. Never printed (see the `Debug` impl).
    #[serde(default)]
    pub api_key: Option<String>,
    /// Whether the model accepts images.
    #[serde(default)]
    pub supports_vision: bool,
    /// The context window in tokens.
    #[serde(default)]
    pub context_window: Option<u32>,
    /// The most tokens one answer may take.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Any other key (DeerFlow's `use`, `supports_thinking`, ...), kept for later use.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelConfig")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("supports_vision", &self.supports_vision)
            .field("context_window", &self.context_window)
            .finish_non_exhaustive()
    }
}

/// A configured tool: which implementation (`use`), under which name and group, plus free
/// tool-specific keys such as `max_results`.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ToolConfig {
    /// The tool's name as the model sees it.
    pub name: String,
    /// The tool group it belongs to, for group filtering.
    #[serde(default)]
    pub group: Option<String>,
    /// The implementation, e.g. `antler.sandbox:ls`.
    #[serde(rename = "use")]
    pub use_: String,
    /// Tool-specific settings.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A named tool group.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ToolGroupConfig {
    /// The group's name, referenced by `tools[].group`.
    pub name: String,
    /// Any other key.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Whether MCP tools are deferred behind `tool_search`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSearchMode {
    /// Bind every tool (the default, as in DeerFlow).
    #[default]
    Off,
    /// Defer every MCP tool.
    On,
    /// Defer only when the MCP schemas would take a large share of the context window.
    Auto,
}

impl<'de> Deserialize<'de> for ToolSearchMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ModeVisitor;
        impl serde::de::Visitor<'_> for ModeVisitor {
            type Value = ToolSearchMode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true, false or \"auto\"")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(if v {
                    ToolSearchMode::On
                } else {
                    ToolSearchMode::Off
                })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                match v {
                    "auto" => Ok(ToolSearchMode::Auto),
                    "true" => Ok(ToolSearchMode::On),
                    "false" => Ok(ToolSearchMode::Off),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        deserializer.deserialize_any(ModeVisitor)
    }
}

/// Deferred tool loading settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct ToolSearchConfig {
    /// `false` (default), `true` or `auto`.
    pub enabled: ToolSearchMode,
    /// How many tools a ranked search returns (1 to 10, default 5).
    pub max_results: usize,
}

impl Default for ToolSearchConfig {
    fn default() -> Self {
        Self {
            enabled: ToolSearchMode::Off,
            max_results: 5,
        }
    }
}

/// Sandbox settings for the file and shell tools.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct SandboxConfig {
    /// The workspace root; the working directory when absent.
    pub workspace: Option<PathBuf>,
    /// Extra places the file tools may read.
    pub read_only_paths: Vec<PathBuf>,
    /// Whether `bash` may run on the host (off by default: a host shell is not isolated).
    pub allow_host_bash: bool,
    /// The confinement mode, e.g. `landlock`.
    pub mode: Option<String>,
    /// Any other key (DeerFlow's `use`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Limits for the `task` tool's subagents.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct SubagentsConfig {
    /// Subagents running at once.
    pub max_concurrent: usize,
    /// Subagents started in one run.
    pub max_total_per_run: usize,
    /// The time one subagent may take.
    pub timeout_seconds: u64,
    /// Any other key.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for SubagentsConfig {
    fn default() -> Self {
        Self {
            max_concurrent: 3,
            max_total_per_run: 6,
            timeout_seconds: 1800,
            extra: Map::new(),
        }
    }
}

/// When and how the history is summarised.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct SummarizationConfig {
    /// Whether summarisation runs at all.
    pub enabled: Option<bool>,
    /// History size in tokens that triggers it; 75% of the context window when absent.
    pub trigger_tokens: Option<u64>,
    /// Any other key (DeerFlow's `trigger`, `keep`, `model_name`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A loaded configuration together with the non-fatal problems found while loading it.
#[derive(Debug, Clone, Default)]
pub struct Loaded<T> {
    /// The configuration.
    pub value: T,
    /// The file it came from, if any.
    pub path: Option<PathBuf>,
    /// Warnings to show the user (unknown keys, skipped entries, ...).
    pub warnings: Vec<String>,
}

/// Reads and parses `config.yaml` at `path`.
pub fn load_app_config(path: &Path, env: EnvLookup<'_>) -> Result<Loaded<AppConfig>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_app_config(&text, path, env)
}

/// Parses the text of `config.yaml`; `path` is only used in messages.
pub fn parse_app_config(
    text: &str,
    path: &Path,
    env: EnvLookup<'_>,
) -> Result<Loaded<AppConfig>, ConfigError> {
    let syntax_error = |err: yaml_serde::Error| yaml_error(path, err);
    let tree: Yaml = yaml_serde::from_str(text).map_err(syntax_error)?;
    let mut warnings = Vec::new();
    let tree = match tree {
        Yaml::Null => {
            return Ok(Loaded {
                value: AppConfig::default(),
                path: Some(path.to_path_buf()),
                warnings,
            });
        }
        Yaml::Mapping(map) => map,
        _ => {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: String::from("(top level)"),
                message: String::from("expected a mapping of keys such as `models` and `tools`"),
            });
        }
    };

    // Typed pass over the source text: wrong types get their line and column here.
    let deserializer = yaml_serde::Deserializer::from_str(text);
    let mut unknown = Vec::new();
    serde_ignored::deserialize::<_, _, AppConfig>(deserializer, |key| {
        unknown.push(key.to_string())
    })
    .map_err(syntax_error)?;
    for key in unknown {
        let top = key.split(['.', '[']).next().unwrap_or_default();
        if KNOWN_TOP_LEVEL.contains(&top) {
            warnings.push(format!(
                "{}: unknown key `{key}` is ignored",
                path.display()
            ));
        } else {
            warnings.push(format!(
                "{}: unknown top-level key `{key}` is ignored (known: {})",
                path.display(),
                KNOWN_TOP_LEVEL.join(", ")
            ));
        }
    }

    let mut tree = Yaml::Mapping(tree);
    expand_yaml(&mut tree, &mut String::new(), path, env)?;
    let config: AppConfig = yaml_serde::from_value(tree).map_err(|err| ConfigError::Invalid {
        path: path.to_path_buf(),
        key: String::from("(after $VAR expansion)"),
        message: err.to_string(),
    })?;
    validate(&config, path)?;
    Ok(Loaded {
        value: config,
        path: Some(path.to_path_buf()),
        warnings,
    })
}

/// Converts a YAML error into one that names the file, line and column.
fn yaml_error(path: &Path, err: yaml_serde::Error) -> ConfigError {
    let message = err.to_string();
    match err.location() {
        Some(loc) => {
            let suffix = format!(" at line {} column {}", loc.line(), loc.column());
            ConfigError::Syntax {
                path: path.to_path_buf(),
                line: loc.line(),
                column: loc.column(),
                message: message.replace(&suffix, ""),
            }
        }
        None => ConfigError::Invalid {
            path: path.to_path_buf(),
            key: String::from("(file)"),
            message,
        },
    }
}

/// Expands `$NAME` and `${NAME}` references in every string; an unset variable is an error
/// naming the variable and the key path.
fn expand_yaml(
    node: &mut Yaml,
    key_path: &mut String,
    path: &Path,
    env: EnvLookup<'_>,
) -> Result<(), ConfigError> {
    match node {
        Yaml::String(s) => {
            let mut missing = Vec::new();
            if let Some(value) = expand_string(s, env, &mut missing) {
                if let Some(var) = missing.into_iter().next() {
                    return Err(ConfigError::MissingEnv {
                        path: path.to_path_buf(),
                        key: key_path.clone(),
                        var,
                    });
                }
                *s = value;
            }
        }
        Yaml::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = key_path.len();
                key_path.push_str(&format!("[{i}]"));
                expand_yaml(item, key_path, path, env)?;
                key_path.truncate(len);
            }
        }
        Yaml::Mapping(map) => {
            for (key, value) in map.iter_mut() {
                let len = key_path.len();
                let name = match key {
                    Yaml::String(s) => s.clone(),
                    other => yaml_serde::to_string(other)
                        .map(|s| s.trim().to_string())
                        .unwrap_or_default(),
                };
                if !key_path.is_empty() {
                    key_path.push('.');
                }
                key_path.push_str(&name);
                expand_yaml(value, key_path, path, env)?;
                key_path.truncate(len);
            }
        }
        Yaml::Tagged(tagged) => expand_yaml(&mut tagged.value, key_path, path, env)?,
        Yaml::Null | Yaml::Bool(_) | Yaml::Number(_) => {}
    }
    Ok(())
}

/// Checks values that are well-typed but still unusable.
fn validate(config: &AppConfig, path: &Path) -> Result<(), ConfigError> {
    let invalid = |key: String, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        key,
        message,
    };
    for (i, model) in config.models.iter().enumerate() {
        if model.name.trim().is_empty() {
            return Err(invalid(
                format!("models[{i}].name"),
                "expected a non-empty name".into(),
            ));
        }
        if config.models[..i].iter().any(|m| m.name == model.name) {
            return Err(invalid(
                format!("models[{i}].name"),
                format!(
                    "the model name `{}` is used twice; names must be unique",
                    model.name
                ),
            ));
        }
    }
    if !(1..=10).contains(&config.tool_search.max_results) {
        return Err(invalid(
            "tool_search.max_results".into(),
            format!("expected 1 to 10, got {}", config.tool_search.max_results),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::fixed_env as env_of;

    fn parse(text: &str, vars: &[(&str, &str)]) -> Result<Loaded<AppConfig>, ConfigError> {
        parse_app_config(text, Path::new("config.yaml"), &env_of(vars))
    }

    #[test]
    fn empty_file_gives_defaults() {
        let loaded = parse("# nothing here\n", &[]).unwrap();
        assert!(loaded.value.models.is_empty());
        assert_eq!(loaded.value.tool_search.enabled, ToolSearchMode::Off);
        assert_eq!(loaded.value.tool_search.max_results, 5);
        assert_eq!(loaded.value.subagents.max_concurrent, 3);
        assert!(loaded.warnings.is_empty());
    }

    #[test]
    fn full_shape_parses_with_free_tool_keys() {
        let text = r#"
models:
  - name: gpt
    display_name: GPT
    base_url: http://127.0.0.1:1/v1
    model: gpt-4o-mini
    api_key: $KEY
    supports_vision: true
    context_window: 128000
    temperature: 0.2
    supports_thinking: false
tool_groups:
  - name: file:read
tools:
  - name: ls
    group: file:read
    use: antler.sandbox:ls
    max_results: 50
tool_search:
  enabled: auto
  max_results: 7
"#;
        let loaded = parse(text, &[("KEY", "sk-secret")]).unwrap();
        let cfg = loaded.value;
        assert_eq!(cfg.models[0].api_key.as_deref(), Some("sk-secret"));
        assert_eq!(cfg.models[0].context_window, Some(128_000));
        assert_eq!(cfg.models[0].extra["supports_thinking"], Value::Bool(false));
        assert_eq!(cfg.tools[0].use_, "antler.sandbox:ls");
        assert_eq!(cfg.tools[0].extra["max_results"], Value::from(50));
        assert_eq!(cfg.tool_search.enabled, ToolSearchMode::Auto);
        assert_eq!(cfg.tool_search.max_results, 7);
        assert!(!format!("{:?}", cfg.models[0]).contains("sk-secret"));
    }

    #[test]
    fn unknown_keys_warn_but_load() {
        let loaded = parse("colour: blue\ntool_search:\n  enbled: true\n", &[]).unwrap();
        assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
        assert!(loaded.warnings[0].contains("unknown top-level key `colour`"));
        assert!(loaded.warnings[1].contains("tool_search.enbled"));
    }

    #[test]
    fn wrong_type_names_line_column_key_and_expected_type() {
        let text = "models:\n  - name: a\n    model: m\n    context_window: lots\n";
        let err = parse(text, &[]).unwrap_err();
        let ConfigError::Syntax {
            line,
            column,
            message,
            ..
        } = &err
        else {
            panic!("expected a syntax error, got {err:?}");
        };
        assert_eq!((*line, *column), (4, 21));
        assert!(message.contains("models[0].context_window"), "{message}");
        assert!(message.contains("expected u32"), "{message}");
        assert!(err.to_string().starts_with("config.yaml:4:21: "), "{err}");
    }

    #[test]
    fn malformed_yaml_names_line_and_column() {
        let err = parse("models:\n  - name: [unclosed\n", &[]).unwrap_err();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{err:?}");
        assert!(err.to_string().starts_with("config.yaml:"), "{err}");
    }

    #[test]
    fn missing_env_names_variable_and_key_path() {
        let text = "models:\n  - name: a\n    model: m\n    api_key: $NOPE_KEY\n";
        let err = parse(text, &[]).unwrap_err().to_string();
        assert_eq!(
            err,
            "config.yaml: models[0].api_key: environment variable $NOPE_KEY is not set"
        );
    }

    #[test]
    fn bad_values_are_rejected() {
        let err = parse("tool_search:\n  enabled: maybe\n", &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("true, false or \"auto\""), "{err}");
        let err = parse("tool_search:\n  max_results: 11\n", &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("expected 1 to 10"), "{err}");
        let text = "models:\n  - {name: a, model: m}\n  - {name: a, model: n}\n";
        let err = parse(text, &[]).unwrap_err().to_string();
        assert!(err.contains("models[1].name"), "{err}");
        let err = parse("- a\n- b\n", &[]).unwrap_err().to_string();
        assert!(err.contains("expected a mapping"), "{err}");
    }
}

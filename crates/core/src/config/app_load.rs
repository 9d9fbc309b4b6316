//! Loading `config.yaml` so that every error is precise.
//!
//! The text is parsed once for syntax (line and column), then into the typed shape for
//! wrong types (line, column, key path, expected type) while unknown keys are collected as
//! warnings and removed, then `$NAME` values are expanded on the tree (an unset variable is
//! an error naming it and the key path; in a model's settings, that model's error, given
//! when it is chosen) and the typed shape is read from the result.

use std::path::{Path, PathBuf};

use yaml_serde::Value as Yaml;

use super::app::{AppConfig, KNOWN_TOP_LEVEL, ModelConfig, ToolGroupConfig};
use super::locate::{Segment, display_path, locate};
use super::overrides::Override;
use super::{ConfigError, EnvLookup, expand_env_reference, recording_secrets};

/// A loaded configuration together with the non-fatal problems found while loading it.
#[derive(Debug, Clone, Default)]
pub struct Loaded<T> {
    /// The configuration.
    pub value: T,
    /// The file it came from, if any.
    pub path: Option<PathBuf>,
    /// Warnings to show the user (unknown keys, skipped entries, ...).
    pub warnings: Vec<String>,
    /// Values it holds that must never reach the model: API keys, and what secret-named
    /// variables (`*KEY*`, `*TOKEN*`, ...) expanded to.
    pub secrets: Vec<String>,
}

/// The typed pass over the source text, where wrong types get their line and column; the
/// unknown keys it finds are removed from the tree, each with a warning.
fn without_unknown_keys(
    text: &str,
    path: &Path,
    tree: yaml_serde::Mapping,
) -> Result<(Yaml, Vec<String>), ConfigError> {
    let deserializer = yaml_serde::Deserializer::from_str(text);
    let mut unknown: Vec<Vec<Segment>> = Vec::new();
    serde_ignored::deserialize::<_, _, AppConfig>(deserializer, |key| unknown.push(segments(&key)))
        .map_err(|err| yaml_error(path, err))?;
    // A misspelt hook event would quietly never run (a policy hook that never blocks):
    // under `hooks:` an unknown key is an error.
    if let Some(key) = unknown
        .iter()
        .find(|key| matches!(key.first(), Some(Segment::Key(k)) if k == "hooks"))
    {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            key: display_path(key),
            message: unknown_key_warning(path, text, key),
        });
    }
    let mut tree = Yaml::Mapping(tree);
    let mut warnings = Vec::new();
    for key in &unknown {
        warnings.push(unknown_key_warning(path, text, key));
        // Ignored keys are never expanded: an unset `$NAME` there must not fail the load.
        remove_path(&mut tree, key);
    }
    Ok((tree, warnings))
}

/// `$NAME` values expanded and the typed shape read from the result, with the secrets the
/// expansion recorded. A model whose own settings name an unset variable keeps the error,
/// given when that model is chosen.
fn expanded(
    mut tree: Yaml,
    path: &Path,
    env: EnvLookup<'_>,
) -> Result<(AppConfig, Vec<String>), ConfigError> {
    let mut unresolved = Vec::new();
    let (expanded, secrets) = recording_secrets(env, |env| {
        let mut expansion = Expansion {
            path,
            env,
            unresolved: &mut unresolved,
        };
        expansion.expand(&mut tree, &mut String::new())
    });
    expanded?;
    let mut config: AppConfig =
        yaml_serde::from_value(tree).map_err(|err| ConfigError::Invalid {
            path: path.to_path_buf(),
            key: String::from("(after $VAR expansion)"),
            message: err.to_string(),
        })?;
    for (index, error) in unresolved {
        if let Some(model) = config.models.get_mut(index) {
            model.unresolved.push(error.to_string());
        }
    }
    Ok((config, secrets))
}

/// Parses the text of `config.yaml`; `path` is only used in messages.
pub fn parse_app_config(
    text: &str,
    path: &Path,
    env: EnvLookup<'_>,
) -> Result<Loaded<AppConfig>, ConfigError> {
    parse_app_config_with(text, path, env, &[])
}

/// [`parse_app_config`] with `--set` overrides applied (before `$NAME` expansion).
pub fn parse_app_config_with(
    text: &str,
    path: &Path,
    env: EnvLookup<'_>,
    overrides: &[Override],
) -> Result<Loaded<AppConfig>, ConfigError> {
    let tree: Yaml = yaml_serde::from_str(text).map_err(|err| yaml_error(path, err))?;
    let tree = match tree {
        Yaml::Null if !overrides.is_empty() => Default::default(),
        Yaml::Null => {
            return Ok(Loaded {
                value: AppConfig::default(),
                path: Some(path.to_path_buf()),
                warnings: Vec::new(),
                secrets: Vec::new(),
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
    let (mut tree, mut warnings) = without_unknown_keys(text, path, tree)?;
    super::overrides::apply(&mut tree, overrides)?;
    let (config, mut secrets) = expanded(tree, path, env)?;
    validate(&config, path)?;
    warnings.extend(
        config
            .extra_keys()
            .iter()
            .map(|key| unknown_key_warning(path, text, key)),
    );
    secrets.extend(
        config
            .models
            .iter()
            .filter(|m| m.unresolved.is_empty())
            .filter_map(|m| m.api_key.clone())
            .filter(|key| !key.is_empty()),
    );
    Ok(Loaded {
        value: config,
        path: Some(path.to_path_buf()),
        warnings,
        secrets,
    })
}

fn segments(path: &serde_ignored::Path<'_>) -> Vec<Segment> {
    use serde_ignored::Path as P;
    match path {
        P::Root => Vec::new(),
        P::Seq { parent, index } => {
            let mut v = segments(parent);
            v.push(Segment::Index(*index));
            v
        }
        P::Map { parent, key } => {
            let mut v = segments(parent);
            v.push(Segment::Key(key.clone()));
            v
        }
        P::Some { parent } | P::NewtypeStruct { parent } | P::NewtypeVariant { parent } => {
            segments(parent)
        }
    }
}

/// The warning for an unknown key: file, line and column when the text has them, the key
/// path, and the closest known key when one is close.
fn unknown_key_warning(path: &Path, text: &str, key: &[Segment]) -> String {
    let at = locate(text, key).map_or_else(String::new, |p| format!(":{}:{}", p.line, p.column));
    let shown = display_path(key);
    let file = path.display();
    let (parent, name) = match key.split_last() {
        Some((Segment::Key(name), parent)) => (parent, name.as_str()),
        _ => (key, ""),
    };
    let known = known_keys(parent);
    let hint = known
        .iter()
        .map(|k| (strsim::jaro_winkler(name, k), k))
        .filter(|(score, _)| *score > 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or_else(String::new, |(_, k)| format!("; did you mean `{k}`?"));
    if parent.is_empty() {
        format!(
            "{file}{at}: unknown top-level key `{shown}` is ignored{hint} (known: {})",
            KNOWN_TOP_LEVEL.join(", ")
        )
    } else {
        format!("{file}{at}: unknown key `{shown}` is ignored{hint}")
    }
}

/// The keys antler knows under `parent` (indices stand for any item), read off the
/// serialised shape of a sample configuration so that the list never drifts from the types.
fn known_keys(parent: &[Segment]) -> Vec<String> {
    let sample = AppConfig {
        models: vec![ModelConfig {
            name: String::new(),
            display_name: None,
            base_url: None,
            model: String::new(),
            api_key: None,
            supports_vision: false,
            context_window: None,
            max_tokens: None,
            temperature: None,
            request_timeout_seconds: None,
            stream_idle_timeout_seconds: None,
            first_chunk_timeout_seconds: None,
            call_timeout_seconds: None,
            max_retries: None,
            retry_base_delay_ms: None,
            tool_call_format: Some(Default::default()),
            extra: serde_json::Map::new(),
            unresolved: Vec::new(),
        }],
        tool_groups: vec![ToolGroupConfig {
            name: String::new(),
            extra: serde_json::Map::new(),
        }],
        ..AppConfig::default()
    };
    let Ok(mut node) = serde_json::to_value(&sample) else {
        return Vec::new();
    };
    for segment in parent {
        node = match (segment, node) {
            (Segment::Key(k), serde_json::Value::Object(mut map)) => {
                map.remove(k).unwrap_or_default()
            }
            (Segment::Index(_), serde_json::Value::Array(mut items)) if !items.is_empty() => {
                items.swap_remove(0)
            }
            _ => return Vec::new(),
        };
    }
    match node {
        serde_json::Value::Object(map) => map.into_iter().map(|(k, _)| k).collect(),
        _ => Vec::new(),
    }
}

fn remove_path(node: &mut Yaml, path: &[Segment]) {
    match (node, path) {
        (Yaml::Mapping(map), [Segment::Key(key)]) => {
            map.remove(key.as_str());
        }
        (Yaml::Mapping(map), [Segment::Key(key), rest @ ..]) => {
            if let Some(child) = map.get_mut(key.as_str()) {
                remove_path(child, rest);
            }
        }
        (Yaml::Sequence(items), [Segment::Index(i), rest @ ..]) if !rest.is_empty() => {
            if let Some(child) = items.get_mut(*i) {
                remove_path(child, rest);
            }
        }
        (Yaml::Tagged(tagged), _) => remove_path(&mut tagged.value, path),
        _ => {}
    }
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

/// Expanding `$NAME` values on the tree. A missing variable is an error, except in a
/// model's settings (its name aside): there it is kept as the model's `unresolved` error,
/// reported only if that model is used, so a copied example config with several models
/// works with the variables of the one in use.
struct Expansion<'a, 'e> {
    path: &'a Path,
    env: EnvLookup<'e>,
    /// Per model index, the error its missing variable would be.
    unresolved: &'a mut Vec<(usize, ConfigError)>,
}

impl Expansion<'_, '_> {
    fn expand(&mut self, node: &mut Yaml, key_path: &mut String) -> Result<(), ConfigError> {
        match node {
            Yaml::String(s) => {
                if let Some(var) = expand_env_reference(s) {
                    match (self.env)(var) {
                        Some(value) => *s = value,
                        None => {
                            let error = ConfigError::MissingEnv {
                                path: self.path.to_path_buf(),
                                key: key_path.clone(),
                                var: var.to_string(),
                            };
                            // The `$NAME` stays: a number or boolean reads it as its
                            // default, and the model is refused before any is used.
                            match model_setting(key_path) {
                                Some(index) => self.unresolved.push((index, error)),
                                None => return Err(error),
                            }
                        }
                    }
                }
            }
            Yaml::Sequence(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    let len = key_path.len();
                    key_path.push_str(&format!("[{i}]"));
                    self.expand(item, key_path)?;
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
                    self.expand(value, key_path)?;
                    key_path.truncate(len);
                }
            }
            Yaml::Tagged(tagged) => self.expand(&mut tagged.value, key_path)?,
            Yaml::Null | Yaml::Bool(_) | Yaml::Number(_) => {}
        }
        Ok(())
    }
}

/// The model index of a key path inside a model's settings (`models[2].api_key`), except
/// its `name`, which picks the model and so must be known.
fn model_setting(key_path: &str) -> Option<usize> {
    let rest = key_path.strip_prefix("models[")?;
    let (index, setting) = rest.split_once("].")?;
    (setting != "name").then(|| index.parse().ok()).flatten()
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
    let search = &config.tool_search;
    if !(0.0..=100.0).contains(&search.auto_threshold_percent) {
        return Err(invalid(
            "tool_search.auto_threshold_percent".into(),
            format!(
                "expected a percentage from 0 to 100, got {}",
                search.auto_threshold_percent
            ),
        ));
    }
    if search.max_promoted == 0 {
        return Err(invalid(
            "tool_search.max_promoted".into(),
            "expected at least 1".into(),
        ));
    }
    if search.max_promoted < search.max_results {
        return Err(invalid(
            "tool_search.max_promoted".into(),
            format!(
                "expected at least tool_search.max_results ({}), got {}: a search's results \
                 must fit in the working set",
                search.max_results, search.max_promoted
            ),
        ));
    }
    for (i, pattern) in config.sandbox.deny_read.iter().flatten().enumerate() {
        let glob = pattern.trim().trim_start_matches('/').trim_end_matches('/');
        if glob.is_empty() {
            return Err(invalid(
                format!("sandbox.deny_read[{i}]"),
                "expected a glob such as `*.pem`, got an empty pattern".into(),
            ));
        }
        if let Err(e) = globset::Glob::new(glob) {
            return Err(invalid(
                format!("sandbox.deny_read[{i}]"),
                format!("invalid glob `{pattern}`: {}", e.kind()),
            ));
        }
    }
    if let Some((key, message)) = config.hooks.problem() {
        return Err(invalid(key, message));
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

    /// Every key path antler knows, from the sample shape of [`known_keys`].
    fn every_key(parent: &mut Vec<Segment>, out: &mut Vec<String>) {
        for key in known_keys(parent) {
            parent.push(Segment::Key(key.clone()));
            out.push(key);
            every_key(parent, out);
            parent.push(Segment::Index(0));
            every_key(parent, out);
            parent.pop();
            parent.pop();
        }
    }

    #[test]
    fn the_example_config_has_every_key() {
        let example = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../config.example.yaml"
        ))
        .unwrap();
        let mut keys = Vec::new();
        every_key(&mut Vec::new(), &mut keys);
        assert!(keys.len() > 30, "{keys:?}");
        let missing: Vec<&String> = keys
            .iter()
            .filter(|k| !example.contains(&format!("{k}:")))
            .collect();
        assert!(
            missing.is_empty(),
            "not in config.example.yaml: {missing:?}"
        );
    }
    use serde_json::Value;

    use super::*;
    use crate::config::ToolSearchMode;
    use crate::config::env::fixed_env as env_of;

    fn parse(text: &str, vars: &[(&str, &str)]) -> Result<Loaded<AppConfig>, ConfigError> {
        parse_app_config(text, Path::new("config.yaml"), &env_of(vars))
    }

    #[test]
    fn empty_file_gives_defaults() {
        let loaded = parse("# nothing here\n", &[]).unwrap();
        assert!(loaded.value.models.is_empty());
        assert_eq!(loaded.value.tool_search.enabled, None);
        assert_eq!(loaded.value.tool_search.mode(), ToolSearchMode::Auto);
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
        assert_eq!(cfg.tool_search.enabled, Some(ToolSearchMode::Auto));
        assert_eq!(cfg.tool_search.max_results, 7);
        assert!(!format!("{:?}", cfg.models[0]).contains("sk-secret"));
    }

    #[test]
    fn unknown_keys_warn_but_load_even_with_unset_variables() {
        let text = "colour: $UNSET_COLOUR\ntool_search:\n  enbled: $UNSET\n";
        let loaded = parse(text, &[]).unwrap();
        assert_eq!(loaded.warnings.len(), 2, "{:?}", loaded.warnings);
        assert!(loaded.warnings[0].contains("unknown top-level key `colour`"));
        assert!(loaded.warnings[1].contains("unknown key `tool_search.enbled`"));
    }

    #[test]
    fn unknown_nested_keys_warn_with_line_and_a_suggestion() {
        let text = "models:\n  - name: a\n    model: m\n    temprature: 0.2\n    supports_thinking: true\n  - {name: b, model: m, max_retires: 3}\nsandbox:\n  use: deerflow.sandbox:X\n  alow_host_bash: true\ntool_search:\n  max_resuts: 3\n";
        let warnings = parse(text, &[]).unwrap().warnings;
        assert_eq!(
            warnings,
            [
                "config.yaml:11:3: unknown key `tool_search.max_resuts` is ignored; did you \
                 mean `max_results`?",
                "config.yaml:4:5: unknown key `models[0].temprature` is ignored; did you mean \
                 `temperature`?",
                "config.yaml:6:25: unknown key `models[1].max_retires` is ignored; did you mean \
                 `max_retries`?",
                "config.yaml:9:3: unknown key `sandbox.alow_host_bash` is ignored; did you mean \
                 `allow_host_bash`?",
            ]
        );
    }

    #[test]
    fn keys_and_secret_variables_are_collected_for_redaction() {
        let text = "models:\n  - {name: a, model: m, api_key: $OPENAI_API_KEY}\n  - {name: b, model: m, api_key: sk-literal-2}\nsandbox:\n  workspace: $WORK_DIR\n";
        let loaded = parse(text, &[("OPENAI_API_KEY", "sk-env-1"), ("WORK_DIR", ".")]).unwrap();
        assert_eq!(loaded.secrets, ["sk-env-1", "sk-env-1", "sk-literal-2"]);
    }

    #[test]
    fn numbers_and_booleans_can_come_from_the_environment() {
        let text = "models:\n  - name: a\n    model: m\n    context_window: $CTX\n    supports_vision: $VIS\ntool_search:\n  enabled: $TS\n  max_results: \"7\"\n";
        let cfg = parse(text, &[("CTX", "1000"), ("VIS", "true"), ("TS", "auto")])
            .unwrap()
            .value;
        assert_eq!(cfg.models[0].context_window, Some(1000));
        assert!(cfg.models[0].supports_vision);
        assert_eq!(cfg.tool_search.enabled, Some(ToolSearchMode::Auto));
        assert_eq!(cfg.tool_search.max_results, 7);
        let err = parse(text, &[("CTX", "lots"), ("VIS", "true"), ("TS", "auto")]).unwrap_err();
        let err = err.to_string();
        assert!(err.contains("lots") && err.contains("u32"), "{err}");
    }

    #[test]
    fn only_whole_values_are_references() {
        let text =
            "models:\n  - name: a\n    model: m\n    display_name: Costs ${PRICE} or $PRICE\n";
        let cfg = parse(text, &[]).unwrap().value;
        assert_eq!(
            cfg.models[0].display_name.as_deref(),
            Some("Costs ${PRICE} or $PRICE")
        );
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
    fn the_deferral_and_model_modes_take_names_or_variables() {
        use crate::config::{Binding, ListingMode, ToolCallFormat};
        let text = "tool_search:\n  listing: $L\n  binding: $B\nmodels:\n  - name: m\n    model: x\n    tool_call_format: $F\n";
        let cfg = parse(text, &[("L", "servers"), ("B", "stable"), ("F", "text")])
            .unwrap()
            .value;
        assert_eq!(cfg.tool_search.listing, ListingMode::Servers);
        assert_eq!(cfg.tool_search.binding, Binding::Stable);
        assert_eq!(cfg.models[0].tool_call_format, Some(ToolCallFormat::Text));
        let cfg = parse("tool_search:\n  binding: native\n", &[])
            .unwrap()
            .value;
        assert_eq!(cfg.tool_search.binding, Binding::Native);
        let err = parse("tool_search:\n  binding: stabel\n", &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tool_search.binding") && err.contains("`native` or `stable`"),
            "{err}"
        );
    }

    #[test]
    fn sandbox_mode_is_checked() {
        use crate::config::SandboxMode;
        let cfg = parse("sandbox:\n  mode: landlock\n", &[]).unwrap().value;
        assert_eq!(cfg.sandbox.mode, SandboxMode::Landlock);
        let cfg = parse("sandbox:\n  mode: $MODE\n", &[("MODE", "none")])
            .unwrap()
            .value;
        assert_eq!(cfg.sandbox.mode, SandboxMode::Unconfined);
        let err = parse("sandbox:\n  mode: landlok\n", &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sandbox.mode") && err.contains("\"none\" or \"landlock\""),
            "{err}"
        );
    }

    #[test]
    fn malformed_yaml_names_line_and_column() {
        let err = parse("models:\n  - name: [unclosed\n", &[]).unwrap_err();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{err:?}");
        assert!(err.to_string().starts_with("config.yaml:"), "{err}");
    }

    #[test]
    fn a_models_missing_variable_waits_until_the_model_is_used() {
        let text = "models:\n  - name: a\n    model: m\n    api_key: $NOPE_KEY\n    max_tokens: $NOPE_MAX\n    supports_vision: $NOPE_VISION\n  - name: b\n    model: n\n";
        let loaded = parse(text, &[]).unwrap();
        assert_eq!(
            loaded.value.models[0].unresolved,
            [
                "config.yaml: models[0].api_key: environment variable $NOPE_KEY is not set",
                "config.yaml: models[0].max_tokens: environment variable $NOPE_MAX is not set",
                "config.yaml: models[0].supports_vision: environment variable $NOPE_VISION is not set",
            ]
        );
        assert!(loaded.value.models[1].unresolved.is_empty());
        assert!(
            loaded.secrets.iter().all(|s| !s.is_empty()),
            "no empty secret"
        );
        // A model's name picks it, and any other setting is needed at once.
        for (text, key) in [
            ("models:\n  - name: $NOPE\n    model: m\n", "models[0].name"),
            (
                "tool_output:\n  max_chars: $NOPE\n",
                "tool_output.max_chars",
            ),
        ] {
            let err = parse(text, &[]).unwrap_err().to_string();
            assert_eq!(
                err,
                format!("config.yaml: {key}: environment variable $NOPE is not set")
            );
        }
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

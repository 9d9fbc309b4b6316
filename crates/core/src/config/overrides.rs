//! `--set key.path=value`: one-off changes to config.yaml for one run, applied to the parsed
//! tree before `$NAME` expansion. The value is YAML (`true`, `3`, `[a, b]`, text); a key
//! config.yaml does not have, or a value of the wrong type, is an error naming the flag.

use yaml_serde::Value as Yaml;

use super::locate::{Segment, key_path};
use super::{AppConfig, ConfigError};

/// One `--set`.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// As typed, for messages.
    text: String,
    key: Vec<Segment>,
    value: Yaml,
}

impl Override {
    /// Parses `key.path=value` (`models[0].temperature=0.2`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let shown = crate::base::text::quoted(text);
        let Some((key, value)) = text.split_once('=') else {
            return Err(format!(
                "--set {shown}: expected KEY=VALUE, such as tool_output.max_chars=40000"
            ));
        };
        let key = parse_key(key.trim()).map_err(|why| format!("--set {shown}: {why}"))?;
        let value: Yaml = if value.trim().is_empty() {
            Yaml::String(String::new())
        } else {
            yaml_serde::from_str(value)
                .map_err(|e| format!("--set {shown}: the value is not YAML: {e}"))?
        };
        Ok(Self {
            text: shown,
            key,
            value,
        })
    }
}

/// `a.b[2].c` as segments.
fn parse_key(key: &str) -> Result<Vec<Segment>, String> {
    if key.is_empty() {
        return Err(String::from("the key is empty"));
    }
    let mut segments = Vec::new();
    for part in key.split('.') {
        let (name, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            let part = crate::base::text::quoted(part);
            return Err(format!("`{part}` is not a key (letters, digits, `_`, `-`)"));
        }
        segments.push(Segment::Key(name.to_string()));
        while !rest.is_empty() {
            let Some(close) = rest.find(']') else {
                return Err(format!(
                    "`{}`: `[` without `]`",
                    crate::base::text::quoted(part)
                ));
            };
            let index: usize = rest[1..close].parse().map_err(|_| {
                format!(
                    "`{}`: an index is a number, as in models[0]",
                    crate::base::text::quoted(part)
                )
            })?;
            segments.push(Segment::Index(index));
            rest = &rest[close + 1..];
            if !rest.is_empty() && !rest.starts_with('[') {
                let (part, rest) = (
                    crate::base::text::quoted(part),
                    crate::base::text::quoted(rest),
                );
                return Err(format!("`{part}`: unexpected `{rest}`"));
            }
        }
    }
    Ok(segments)
}

/// Applies `overrides` to `tree` in order; each must name a key config.yaml knows and keep
/// the whole valid.
pub(super) fn apply(tree: &mut Yaml, overrides: &[Override]) -> Result<(), ConfigError> {
    for o in overrides {
        let invalid = |message: String| ConfigError::Invalid {
            path: std::path::PathBuf::from("--set"),
            key: o.text.clone(),
            message,
        };
        set(tree, &o.key, o.value.clone()).map_err(invalid)?;
        let mut unknown = Vec::new();
        let checked: AppConfig =
            serde_ignored::deserialize(tree.clone(), |path| unknown.push(path.to_string()))
                .map_err(|err| invalid(err.to_string()))?;
        // Keys a section keeps for other programs (DeerFlow's) are not ours to set either.
        let extra = checked.extra_keys();
        let named = |key: &str| key_path(&o.key).starts_with(key);
        if let Some(key) = unknown
            .iter()
            .find(|k| named(k))
            .cloned()
            .or_else(|| extra.iter().map(|k| key_path(k)).find(|k| named(k)))
        {
            let key = crate::base::text::quoted(&key);
            return Err(invalid(format!("config.yaml has no key `{key}`")));
        }
    }
    Ok(())
}

/// Sets `key` in `tree`, creating mappings on the way; an index must exist.
fn set(tree: &mut Yaml, key: &[Segment], value: Yaml) -> Result<(), String> {
    let Some((first, rest)) = key.split_first() else {
        *tree = value;
        return Ok(());
    };
    match first {
        Segment::Key(name) => {
            if tree.is_null() {
                *tree = Yaml::Mapping(Default::default());
            }
            let Yaml::Mapping(map) = tree else {
                return Err(format!(
                    "`{name}` is set inside a value that is not a mapping"
                ));
            };
            let slot = map.entry(Yaml::String(name.clone())).or_insert(Yaml::Null);
            set(slot, rest, value)
        }
        Segment::Index(index) => {
            let Yaml::Sequence(list) = tree else {
                return Err(format!(
                    "[{index}] is set inside a value that is not a list"
                ));
            };
            let len = list.len();
            let Some(slot) = list.get_mut(*index) else {
                return Err(format!("[{index}] is past the end of a list of {len}"));
            };
            set(slot, rest, value)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(yaml: &str, sets: &[&str]) -> Result<Yaml, String> {
        let mut tree: Yaml = yaml_serde::from_str(yaml).unwrap();
        let overrides: Vec<Override> = sets
            .iter()
            .map(|s| Override::parse(s))
            .collect::<Result<_, _>>()?;
        apply(&mut tree, &overrides).map_err(|e| e.to_string())?;
        Ok(tree)
    }

    #[test]
    fn values_are_yaml_and_keys_are_created_or_replaced() {
        let tree = applied(
            "models:\n  - {name: a, model: m}\n",
            &[
                "tool_output.max_chars=40000",
                "models[0].temperature=0.2",
                "permissions.allow=[read_file, 'bash(ls*)']",
                "sandbox.allow_host_bash=true",
            ],
        )
        .unwrap();
        let config: AppConfig = yaml_serde::from_value(tree).unwrap();
        assert_eq!(config.tool_output.max_chars, 40_000);
        assert_eq!(config.models[0].temperature, Some(0.2));
        assert_eq!(config.permissions.allow.len(), 2);
        assert!(config.sandbox.allow_host_bash);
        let empty = applied("", &["mcp.manifest_max_age_secs=5"]).unwrap();
        let config: AppConfig = yaml_serde::from_value(empty).unwrap();
        assert_eq!(config.mcp.manifest_max_age_secs, 5);
    }

    #[test]
    fn mistakes_name_the_flag_and_what_is_wrong() {
        for (set, says) in [
            ("tool_output.max_chars", "expected KEY=VALUE"),
            ("tool_output.max_charz=1", "no key `tool_output.max_charz`"),
            (
                "sandbox.allow_host_bsh=true",
                "no key `sandbox.allow_host_bsh`",
            ),
            ("tool_output.max_chars=lots", "invalid type"),
            ("models[3].model=x", "past the end"),
            ("models[x]=1", "an index is a number"),
            ("a..b=1", "is not a key"),
            ("permissions.allow=['x(']", "not a permission rule"),
        ] {
            let err = applied("models: []\n", &[set]).unwrap_err();
            assert!(err.contains(says), "{set}: {err}");
            assert!(err.contains("--set"), "{set}: {err}");
        }
    }
}

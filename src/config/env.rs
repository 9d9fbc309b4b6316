//! `$NAME` references in configuration values, and the `.env` file.

use std::path::Path;

/// Reads one environment variable. A trait object so that tests can expand values against a
/// fixed map instead of mutating the process environment.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// If `value` is exactly `$NAME` (a letter or `_`, then letters, digits or `_`), returns
/// `NAME`. Anything else — `$`, `$1`, `a$B`, `$A B` — is a literal string, not a reference.
pub fn expand_env_reference(value: &str) -> Option<&str> {
    let name = value.strip_prefix('$')?;
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid = (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(name)
}

/// Loads `.env` from `dir` into the process environment without overriding variables that
/// are already set. Must run before any thread is started (it mutates the environment).
/// Returns the file's path when one was loaded.
pub fn load_dotenv(dir: &Path) -> Result<Option<std::path::PathBuf>, super::ConfigError> {
    let path = dir.join(".env");
    if !path.is_file() {
        return Ok(None);
    }
    match dotenvy::from_path(&path) {
        Ok(()) => Ok(Some(path)),
        Err(dotenvy::Error::LineParse(line, index)) => Err(super::ConfigError::Invalid {
            path,
            key: format!("character {}", index + 1),
            message: format!("cannot parse the line {line:?} (expected NAME=value)"),
        }),
        Err(dotenvy::Error::Io(source)) => Err(super::ConfigError::Read { path, source }),
        Err(other) => Err(super::ConfigError::Invalid {
            path,
            key: String::from("(file)"),
            message: other.to_string(),
        }),
    }
}

/// Test helper: an [`EnvLookup`] over a fixed list of variables.
#[cfg(test)]
pub(crate) fn fixed_env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: std::collections::HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_value_references_are_expanded() {
        assert_eq!(
            expand_env_reference("$OPENAI_API_KEY"),
            Some("OPENAI_API_KEY")
        );
        assert_eq!(expand_env_reference("$_x1"), Some("_x1"));
        assert_eq!(expand_env_reference("$"), None);
        assert_eq!(expand_env_reference("$1A"), None);
        assert_eq!(expand_env_reference("Bearer $TOKEN"), None);
        assert_eq!(expand_env_reference("$A B"), None);
        assert_eq!(expand_env_reference("plain"), None);
    }

    #[test]
    fn dotenv_does_not_override_and_reports_bad_lines() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load_dotenv(dir.path()).unwrap(), None);
        std::fs::write(dir.path().join(".env"), "this is not an assignment\n").unwrap();
        let err = load_dotenv(dir.path()).unwrap_err().to_string();
        assert!(err.contains(".env"), "{err}");
        assert!(err.contains("expected NAME=value"), "{err}");
    }
}

//! `$NAME` references in configuration values, and the `.env` file.

use std::path::Path;

/// Reads one environment variable. A trait object so that tests can expand values against a
/// fixed map instead of mutating the process environment.
pub type EnvLookup<'a> = &'a (dyn Fn(&str) -> Option<String> + Sync);

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

/// Expands the environment references in one configuration string: a value that is
/// exactly `$NAME` becomes the variable's value (DeerFlow's rule), and `${NAME}` anywhere in
/// a string is interpolated (so `"Bearer ${GITHUB_TOKEN}"` works). Returns `None` when the
/// string has no reference. Unset variables expand to "" and are pushed to `missing`; the
/// caller decides whether that is an error.
pub fn expand_string(value: &str, env: EnvLookup<'_>, missing: &mut Vec<String>) -> Option<String> {
    let mut lookup = |name: &str| {
        env(name).unwrap_or_else(|| {
            missing.push(name.to_string());
            String::new()
        })
    };
    if let Some(name) = expand_env_reference(value) {
        return Some(lookup(name));
    }
    if !value.contains("${") {
        return None;
    }
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    let mut changed = false;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let name = after.find('}').map(|end| &after[..end]);
        match name.filter(|n| expand_env_reference(&format!("${n}")).is_some()) {
            Some(name) => {
                out.push_str(&lookup(name));
                rest = &after[name.len() + 1..];
                changed = true;
            }
            None => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// Whether a variable's name says it holds a secret (`*KEY*`, `*TOKEN*`, `*SECRET*`,
/// `*PASSWORD*`, `*CREDENTIAL*`, any case): its value never reaches the model.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"]
        .iter()
        .any(|word| upper.contains(word))
}

/// Runs `f` with `env`, returning also the values of every secret-named variable `f`
/// looked up (see [`is_secret_name`]): what a config expanded that must be redacted.
pub(crate) fn recording_secrets<T>(
    env: EnvLookup<'_>,
    f: impl FnOnce(EnvLookup<'_>) -> T,
) -> (T, Vec<String>) {
    let found = std::sync::Mutex::new(Vec::new());
    let recording = |name: &str| {
        let value = env(name);
        if let Some(value) = &value
            && is_secret_name(name)
        {
            found
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(value.clone());
        }
        value
    };
    let out = f(&recording);
    let found = found
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    (out, found)
}

/// Variables a project `.env` may not set: they choose antler's other files and folders
/// (its configs, the trust store, the log, the models it runs and writes), which must come
/// from the user, not the project.
const NOT_FROM_DOTENV: &[&str] = &[
    "ANTLER_CONFIG",
    "ANTLER_EXTENSIONS_CONFIG",
    "ANTLER_DATA_DIR",
    "ANTLER_LOG_FILE",
    "ANTLER_MODELS_DIR",
    "ANTLER_SEMANTIC_MODEL",
    "HOME",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
];

/// Loads the `.env` text `content` (read from `path`) into the process environment without
/// overriding variables that are already set. Must run before any thread is started (it
/// mutates the environment). A file that sets one of antler's own location variables is
/// refused whole.
pub fn load_dotenv(path: &Path, content: &[u8]) -> Result<(), super::ConfigError> {
    for item in dotenvy::from_read_iter(content) {
        if let Ok((name, _)) = item
            && NOT_FROM_DOTENV.contains(&name.as_str())
        {
            return Err(super::ConfigError::Invalid {
                path: path.to_path_buf(),
                key: name,
                message: String::from(
                    "a project .env may not choose antler's own files and folders; set it in \
                     the environment antler is started in instead",
                ),
            });
        }
    }
    match dotenvy::from_read(content) {
        Ok(()) => Ok(()),
        Err(dotenvy::Error::LineParse(line, index)) => Err(super::ConfigError::Invalid {
            path: path.to_path_buf(),
            key: format!("character {}", index + 1),
            message: format!("cannot parse the line {line:?} (expected NAME=value)"),
        }),
        Err(dotenvy::Error::Io(source)) => Err(super::ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
        Err(other) => Err(super::ConfigError::Invalid {
            path: path.to_path_buf(),
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
    fn braced_references_interpolate_and_report_missing() {
        let env = fixed_env(&[("TOKEN", "t0k"), ("A", "1")]);
        let mut missing = Vec::new();
        assert_eq!(
            expand_string("Bearer ${TOKEN}", &env, &mut missing).as_deref(),
            Some("Bearer t0k")
        );
        assert_eq!(
            expand_string("$A", &env, &mut missing).as_deref(),
            Some("1")
        );
        assert_eq!(
            expand_string("${A}-${A}", &env, &mut missing).as_deref(),
            Some("1-1")
        );
        assert_eq!(expand_string("plain $A text", &env, &mut missing), None);
        assert_eq!(expand_string("${unclosed", &env, &mut missing), None);
        assert_eq!(expand_string("${1bad} ${}", &env, &mut missing), None);
        assert!(missing.is_empty());
        assert_eq!(
            expand_string("x${NOPE}y", &env, &mut missing).as_deref(),
            Some("xy")
        );
        assert_eq!(missing, ["NOPE"]);
    }

    #[test]
    fn secret_names_and_what_was_expanded_from_them() {
        assert!(is_secret_name("OPENAI_API_KEY") && is_secret_name("gh_token"));
        assert!(is_secret_name("DB_PASSWORD") && is_secret_name("CLIENT_SECRET"));
        assert!(!is_secret_name("HOME") && !is_secret_name("TZ"));
        let env = fixed_env(&[("API_KEY", "sk-1"), ("TZ", "UTC")]);
        let (value, secrets) =
            recording_secrets(&env, |env| (env("API_KEY"), env("TZ"), env("UNSET_TOKEN")));
        assert_eq!(value.1.as_deref(), Some("UTC"));
        assert_eq!(secrets, ["sk-1"]);
    }

    #[test]
    fn dotenv_may_not_move_antlers_own_files() {
        let err = load_dotenv(Path::new(".env"), b"OK=1\nANTLER_DATA_DIR=/tmp/x\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(".env: ANTLER_DATA_DIR: a project .env may not"),
            "{err}"
        );
    }

    #[test]
    fn dotenv_reports_bad_lines() {
        let path = Path::new("proj/.env");
        let err = load_dotenv(path, b"this is not an assignment\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains(".env"), "{err}");
        assert!(err.contains("expected NAME=value"), "{err}");
    }
}

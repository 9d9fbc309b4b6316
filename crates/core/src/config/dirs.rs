//! antler's own folders, from the environment (the XDG base directories).

use std::path::{Path, PathBuf};

use crate::config::EnvLookup;

fn var(env: EnvLookup<'_>, name: &str) -> Option<String> {
    env(name).filter(|value| !value.is_empty())
}

/// Threads, saved tool outputs and the trust store: `$ANTLER_DATA_DIR`, else
/// `$XDG_DATA_HOME/antler` (when absolute), else `~/.local/share/antler`.
pub fn data_dir(env: EnvLookup<'_>) -> Option<PathBuf> {
    if let Some(dir) = var(env, "ANTLER_DATA_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = var(env, "XDG_DATA_HOME").filter(|dir| Path::new(dir).is_absolute()) {
        return Some(PathBuf::from(dir).join("antler"));
    }
    var(env, "HOME").map(|home| PathBuf::from(home).join(".local/share/antler"))
}

/// The user's own configuration: `$XDG_CONFIG_HOME/antler`, else `~/.config/antler`.
pub fn config_dir(env: EnvLookup<'_>) -> Option<PathBuf> {
    var(env, "XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| var(env, "HOME").map(|home| PathBuf::from(home).join(".config")))
        .map(|dir| dir.join("antler"))
}

/// Downloaded models: `$XDG_CACHE_HOME/antler` (when absolute), else `~/.cache/antler`.
pub fn cache_dir(env: EnvLookup<'_>) -> Option<PathBuf> {
    var(env, "XDG_CACHE_HOME")
        .filter(|dir| Path::new(dir).is_absolute())
        .map(PathBuf::from)
        .or_else(|| var(env, "HOME").map(|home| PathBuf::from(home).join(".cache")))
        .map(|dir| dir.join("antler"))
}

/// Names the folder that holds one folder per installed model, by name: the chat models and
/// the sentence encoder, installed without `antler models fetch` (the tests' and CI's).
pub const MODELS_DIR_ENV: &str = "ANTLER_MODELS_DIR";

/// The folder of models, one folder each: `$ANTLER_MODELS_DIR` (when absolute: a relative
/// one would name a folder of whatever project antler runs in), else `<cache folder>/models`.
pub fn models_dir(env: EnvLookup<'_>) -> Option<PathBuf> {
    var(env, MODELS_DIR_ENV)
        .filter(|dir| Path::new(dir).is_absolute())
        .map(PathBuf::from)
        .or_else(|| cache_dir(env).map(|dir| dir.join("models")))
}

/// The log: `$XDG_STATE_HOME/antler`, else `~/.local/state/antler`.
pub fn state_dir(env: EnvLookup<'_>) -> Option<PathBuf> {
    var(env, "XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| var(env, "HOME").map(|home| PathBuf::from(home).join(".local/state")))
        .map(|dir| dir.join("antler"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::fixed_env;

    #[test]
    fn folders_follow_the_environment() {
        let env = fixed_env(&[("HOME", "/h")]);
        assert_eq!(
            data_dir(&env),
            Some(PathBuf::from("/h/.local/share/antler"))
        );
        assert_eq!(config_dir(&env), Some(PathBuf::from("/h/.config/antler")));
        assert_eq!(
            state_dir(&env),
            Some(PathBuf::from("/h/.local/state/antler"))
        );
        let env = fixed_env(&[
            ("HOME", "/h"),
            ("XDG_DATA_HOME", "relative"),
            ("XDG_CONFIG_HOME", "/c"),
            ("XDG_STATE_HOME", "/s"),
        ]);
        assert_eq!(
            data_dir(&env),
            Some(PathBuf::from("/h/.local/share/antler"))
        );
        assert_eq!(config_dir(&env), Some(PathBuf::from("/c/antler")));
        assert_eq!(state_dir(&env), Some(PathBuf::from("/s/antler")));
        let env = fixed_env(&[("ANTLER_DATA_DIR", "/d"), ("XDG_DATA_HOME", "/x")]);
        assert_eq!(data_dir(&env), Some(PathBuf::from("/d")));
        assert_eq!(data_dir(&fixed_env(&[])), None);
    }

    #[test]
    fn the_environment_names_the_models_folder() {
        let env = fixed_env(&[(MODELS_DIR_ENV, "/m"), ("HOME", "/h")]);
        assert_eq!(models_dir(&env), Some(PathBuf::from("/m")));
        let home = fixed_env(&[("HOME", "/h"), (MODELS_DIR_ENV, "target/models")]);
        assert_eq!(
            models_dir(&home),
            Some(PathBuf::from("/h/.cache/antler/models"))
        );
    }
}

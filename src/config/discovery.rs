//! Where the two configuration files are looked for, in the documented order.

use std::path::{Path, PathBuf};

use super::{ConfigError, EnvLookup};

/// Paths given on the command line; `None` means "search".
#[derive(Debug, Clone, Default)]
pub struct ConfigPaths {
    /// `--config PATH`.
    pub config: Option<PathBuf>,
    /// `--extensions PATH`.
    pub extensions: Option<PathBuf>,
}

/// Finds `config.yaml`: `--config`, then `ANTLER_CONFIG`, then `./config.yaml`, then
/// `$XDG_CONFIG_HOME/antler/config.yaml` (default `~/.config`). `Ok(None)` means no file
/// anywhere, which is fine: defaults apply. A path the user named explicitly must exist.
pub fn find_app_config(
    flag: Option<&Path>,
    cwd: &Path,
    env: EnvLookup<'_>,
) -> Result<Option<PathBuf>, ConfigError> {
    if let Some(found) = explicit(flag, "--config", "ANTLER_CONFIG", cwd, env)? {
        return Ok(Some(found));
    }
    let local = cwd.join("config.yaml");
    if local.is_file() {
        return Ok(Some(local));
    }
    let config_home = env("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|home| Path::new(&home).join(".config")));
    Ok(config_home
        .map(|dir| dir.join("antler").join("config.yaml"))
        .filter(|p| p.is_file()))
}

/// Finds the MCP servers file: `--extensions`, then `ANTLER_EXTENSIONS_CONFIG`, then
/// `./extensions_config.json`, then `./mcp_config.json`. `Ok(None)` means no MCP servers.
pub fn find_extensions_config(
    flag: Option<&Path>,
    cwd: &Path,
    env: EnvLookup<'_>,
) -> Result<Option<PathBuf>, ConfigError> {
    if let Some(found) = explicit(flag, "--extensions", "ANTLER_EXTENSIONS_CONFIG", cwd, env)? {
        return Ok(Some(found));
    }
    Ok(["extensions_config.json", "mcp_config.json"]
        .iter()
        .map(|name| cwd.join(name))
        .find(|p| p.is_file()))
}

/// The flag, else the environment variable; either must name an existing file.
fn explicit(
    flag: Option<&Path>,
    flag_name: &str,
    var: &str,
    cwd: &Path,
    env: EnvLookup<'_>,
) -> Result<Option<PathBuf>, ConfigError> {
    let (path, origin) = match (flag, env(var).filter(|v| !v.is_empty())) {
        (Some(path), _) => (path.to_path_buf(), flag_name.to_string()),
        (None, Some(value)) => (PathBuf::from(value), var.to_string()),
        (None, None) => return Ok(None),
    };
    let path = cwd.join(path);
    if path.exists() {
        Ok(Some(path))
    } else {
        Err(ConfigError::NotFound { path, origin })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::fixed_env as lookup;

    #[test]
    fn app_config_search_order() {
        let root = tempfile::tempdir().unwrap();
        let cwd = root.path().join("work");
        let xdg = root.path().join("xdg");
        std::fs::create_dir_all(xdg.join("antler")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        let env_file = root.path().join("from-env.yaml");
        let flag_file = root.path().join("from-flag.yaml");
        for f in [&env_file, &flag_file, &xdg.join("antler/config.yaml")] {
            std::fs::write(f, "{}").unwrap();
        }
        let xdg_s = xdg.to_string_lossy().to_string();
        let env_s = env_file.to_string_lossy().to_string();

        let none = lookup(&[]);
        assert_eq!(find_app_config(None, &cwd, &none).unwrap(), None);

        let only_xdg = lookup(&[("XDG_CONFIG_HOME", &xdg_s)]);
        assert_eq!(
            find_app_config(None, &cwd, &only_xdg).unwrap(),
            Some(xdg.join("antler/config.yaml"))
        );

        std::fs::write(cwd.join("config.yaml"), "{}").unwrap();
        assert_eq!(
            find_app_config(None, &cwd, &only_xdg).unwrap(),
            Some(cwd.join("config.yaml"))
        );

        let with_env = lookup(&[("XDG_CONFIG_HOME", &xdg_s), ("ANTLER_CONFIG", &env_s)]);
        assert_eq!(
            find_app_config(None, &cwd, &with_env).unwrap(),
            Some(env_file)
        );
        assert_eq!(
            find_app_config(Some(&flag_file), &cwd, &with_env).unwrap(),
            Some(flag_file)
        );
    }

    #[test]
    fn home_dot_config_is_the_default_config_home() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(".config/antler")).unwrap();
        std::fs::write(root.path().join(".config/antler/config.yaml"), "{}").unwrap();
        let home = root.path().to_string_lossy().to_string();
        let env = lookup(&[("HOME", &home)]);
        let cwd = root.path().join("elsewhere");
        assert_eq!(
            find_app_config(None, &cwd, &env).unwrap(),
            Some(root.path().join(".config/antler/config.yaml"))
        );
    }

    #[test]
    fn explicit_paths_must_exist() {
        let root = tempfile::tempdir().unwrap();
        let env = lookup(&[("ANTLER_EXTENSIONS_CONFIG", "missing.json")]);
        let err = find_extensions_config(None, root.path(), &env).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("missing.json"), "{text}");
        assert!(text.contains("ANTLER_EXTENSIONS_CONFIG"), "{text}");
        let err = find_app_config(Some(Path::new("nope.yaml")), root.path(), &lookup(&[]));
        assert!(err.unwrap_err().to_string().contains("--config"));
    }

    #[test]
    fn extensions_search_order() {
        let root = tempfile::tempdir().unwrap();
        let none = lookup(&[]);
        assert_eq!(
            find_extensions_config(None, root.path(), &none).unwrap(),
            None
        );
        std::fs::write(root.path().join("mcp_config.json"), "{}").unwrap();
        assert_eq!(
            find_extensions_config(None, root.path(), &none).unwrap(),
            Some(root.path().join("mcp_config.json"))
        );
        std::fs::write(root.path().join("extensions_config.json"), "{}").unwrap();
        assert_eq!(
            find_extensions_config(None, root.path(), &none).unwrap(),
            Some(root.path().join("extensions_config.json"))
        );
    }
}

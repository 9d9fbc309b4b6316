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
    /// `--set key.path=value`, applied to config.yaml in order.
    pub overrides: Vec<super::Override>,
}

/// Where a configuration file was found. Only [`Origin::Project`] files need the user's
/// trust: the others were named by the user or live in the user's own folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `--config` / `--extensions`.
    Flag,
    /// `ANTLER_CONFIG` / `ANTLER_EXTENSIONS_CONFIG`.
    Env,
    /// Found in the working directory.
    Project,
    /// In the user's config folder.
    User,
}

/// A configuration file and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Joined to the working directory when given relative (a flag, a variable); links are not
    /// resolved.
    pub path: PathBuf,
    /// How it was found.
    pub origin: Origin,
}

impl Found {
    fn new(path: PathBuf, origin: Origin) -> Self {
        Self { path, origin }
    }
}

/// The `config.yaml` files that may be used, best first: `--config`, else `ANTLER_CONFIG`
/// (alone: a path the user named must exist), else `./config.yaml`, then
/// `$XDG_CONFIG_HOME/antler/config.yaml` (default `~/.config`). Empty: defaults apply. The
/// first usable one is used (a project file the user did not trust is not usable).
pub fn app_config_candidates(
    flag: Option<&Path>,
    cwd: &Path,
    env: EnvLookup<'_>,
) -> Result<Vec<Found>, ConfigError> {
    if let Some(found) = explicit(flag, "--config", "ANTLER_CONFIG", cwd, env)? {
        return Ok(vec![found]);
    }
    let local = cwd.join("config.yaml");
    let user = crate::config::dirs::config_dir(env).map(|dir| dir.join("config.yaml"));
    Ok([
        Some(local)
            .filter(|p| p.is_file())
            .map(|p| Found::new(p, Origin::Project)),
        user.filter(|p| p.is_file())
            .map(|p| Found::new(p, Origin::User)),
    ]
    .into_iter()
    .flatten()
    .collect())
}

/// The MCP servers files that may be used, best first: `--extensions`, else
/// `ANTLER_EXTENSIONS_CONFIG`, else `./extensions_config.json`, then `./mcp_config.json`,
/// then the user's own ([`user_extensions`]). Empty: no MCP servers.
pub fn extensions_candidates(
    flag: Option<&Path>,
    cwd: &Path,
    env: EnvLookup<'_>,
) -> Result<Vec<Found>, ConfigError> {
    if let Some(found) = explicit(flag, "--extensions", "ANTLER_EXTENSIONS_CONFIG", cwd, env)? {
        return Ok(vec![found]);
    }
    let project = ["extensions_config.json", "mcp_config.json"]
        .iter()
        .map(|name| cwd.join(name))
        .filter(|p| p.is_file())
        .map(|p| Found::new(p, Origin::Project));
    let user = user_extensions(env)
        .filter(|p| p.is_file())
        .map(|p| Found::new(p, Origin::User));
    Ok(project.chain(user).collect())
}

/// The user's own MCP servers file, which `antler mcp add` edits:
/// `$XDG_CONFIG_HOME/antler/extensions_config.json` (default `~/.config`).
pub fn user_extensions(env: EnvLookup<'_>) -> Option<PathBuf> {
    crate::config::dirs::config_dir(env).map(|dir| dir.join("extensions_config.json"))
}

/// The `.env` of the working directory, if there is one (always a project file).
pub fn dotenv_candidate(cwd: &Path) -> Option<Found> {
    Some(cwd.join(".env"))
        .filter(|p| p.is_file())
        .map(|p| Found::new(p, Origin::Project))
}

/// The flag, else the environment variable; either must name an existing file.
fn explicit(
    flag: Option<&Path>,
    flag_name: &str,
    var: &str,
    cwd: &Path,
    env: EnvLookup<'_>,
) -> Result<Option<Found>, ConfigError> {
    let (path, origin, how) = match (flag, env(var).filter(|v| !v.is_empty())) {
        (Some(path), _) => (path.to_path_buf(), flag_name.to_string(), Origin::Flag),
        (None, Some(value)) => (PathBuf::from(value), var.to_string(), Origin::Env),
        (None, None) => return Ok(None),
    };
    let path = cwd.join(path);
    if path.exists() {
        Ok(Some(Found::new(path, how)))
    } else {
        Err(ConfigError::NotFound { path, origin })
    }
}

/// The project's folders, outermost first: from the repository root (the nearest folder
/// with `.git`) down to `workspace`; outside a repository, the workspace only.
pub fn project_folders(workspace: &Path) -> Vec<&Path> {
    let mut folders: Vec<&Path> = Vec::new();
    let mut repository = false;
    for dir in workspace.ancestors() {
        folders.push(dir);
        if dir.join(".git").exists() {
            repository = true;
            break;
        }
    }
    if !repository {
        folders.truncate(1);
    }
    folders.reverse();
    folders
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::fixed_env as lookup;

    fn find_app_config(
        flag: Option<&Path>,
        cwd: &Path,
        env: EnvLookup<'_>,
    ) -> Result<Option<PathBuf>, ConfigError> {
        app_config_candidates(flag, cwd, env).map(|c| c.into_iter().next().map(|f| f.path))
    }

    fn find_extensions_config(
        flag: Option<&Path>,
        cwd: &Path,
        env: EnvLookup<'_>,
    ) -> Result<Option<PathBuf>, ConfigError> {
        extensions_candidates(flag, cwd, env).map(|c| c.into_iter().next().map(|f| f.path))
    }

    #[test]
    fn origins_tell_project_files_from_named_and_user_ones() {
        let root = tempfile::tempdir().unwrap();
        let xdg = root.path().join("xdg");
        std::fs::create_dir_all(xdg.join("antler")).unwrap();
        std::fs::write(xdg.join("antler/config.yaml"), "{}").unwrap();
        std::fs::write(root.path().join("config.yaml"), "{}").unwrap();
        std::fs::write(root.path().join(".env"), "A=1").unwrap();
        let xdg_s = xdg.to_string_lossy().to_string();
        let env = lookup(&[("XDG_CONFIG_HOME", &xdg_s)]);
        let found = app_config_candidates(None, root.path(), &env).unwrap();
        let origins: Vec<_> = found.iter().map(|f| f.origin).collect();
        assert_eq!(origins, [Origin::Project, Origin::User]);
        let named = app_config_candidates(Some(Path::new("config.yaml")), root.path(), &env);
        assert_eq!(named.unwrap()[0].origin, Origin::Flag);
        assert_eq!(
            dotenv_candidate(root.path()).unwrap().origin,
            Origin::Project
        );
    }

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

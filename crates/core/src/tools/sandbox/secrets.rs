//! Secret files (`sandbox.deny_read`): keys, credentials and `.env` files that no file tool
//! reads or writes and that listings do not show, so that a prompt-injected tool call
//! cannot read the user's API key and send it out.

use std::path::{Component, Path};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The default of `sandbox.deny_read`.
pub const DEFAULT_DENY_READ: &[&str] = &[
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".aws/credentials",
    ".docker/config.json",
    ".kube/config",
];

/// The compiled `deny_read` patterns. A pattern without `/` matches a file or folder name
/// at any depth (everything inside a matching folder is secret too); one with `/` matches
/// a path below any folder (`.aws/credentials`), or below the root when it starts with `/`.
/// Matching ignores case.
#[derive(Debug, Clone)]
pub struct SecretFiles {
    names: GlobSet,
    paths: GlobSet,
}

impl Default for SecretFiles {
    fn default() -> Self {
        let defaults: Vec<String> = DEFAULT_DENY_READ.iter().map(|p| p.to_string()).collect();
        // The defaults are fixed patterns, tested below; an empty set is the safe failure.
        Self::new(&defaults).unwrap_or_else(|_| Self::none())
    }
}

impl SecretFiles {
    /// Compiles `patterns`; the error names the index of the first bad one and why.
    pub fn new(patterns: &[String]) -> Result<Self, (usize, String)> {
        let mut names = GlobSetBuilder::new();
        let mut paths = GlobSetBuilder::new();
        for (i, pattern) in patterns.iter().enumerate() {
            let trimmed = pattern.trim().trim_end_matches('/');
            if trimmed.is_empty() {
                return Err((i, String::from("the pattern is empty")));
            }
            let (set, glob) = match trimmed.strip_prefix('/') {
                Some(anchored) => (&mut paths, anchored.to_string()),
                None if trimmed.contains('/') => (&mut paths, format!("**/{trimmed}")),
                None => (&mut names, trimmed.to_string()),
            };
            let glob = GlobBuilder::new(&glob)
                .literal_separator(true)
                .case_insensitive(true)
                .build()
                .map_err(|e| (i, e.to_string()))?;
            set.add(glob);
        }
        let built = |set: GlobSetBuilder| set.build().map_err(|e| (0, e.to_string()));
        Ok(Self {
            names: built(names)?,
            paths: built(paths)?,
        })
    }

    /// Nothing is secret (`deny_read: []`).
    pub fn none() -> Self {
        Self {
            names: GlobSet::empty(),
            paths: GlobSet::empty(),
        }
    }

    /// Whether `relative` (a path below a root) is a secret file or lies in a secret folder.
    pub fn matches(&self, relative: &Path) -> bool {
        let mut prefix = std::path::PathBuf::new();
        for component in relative.components() {
            let Component::Normal(name) = component else {
                continue;
            };
            prefix.push(name);
            if self.names.is_match(Path::new(name)) || self.paths.is_match(&prefix) {
                return true;
            }
        }
        false
    }

    /// Whether any name in `path` (as the model wrote it, `..` and all) is a secret name.
    pub fn names_match(&self, path: &Path) -> bool {
        path.components().any(|c| match c {
            Component::Normal(name) => self.names.is_match(Path::new(name)),
            _ => false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_catch_keys_credentials_and_env_files() {
        let secrets = SecretFiles::default();
        for path in [
            ".env",
            "app/.env.local",
            ".ENV",
            "certs/server.pem",
            "tls.key",
            "home/.ssh/id_rsa",
            "id_ed25519.pub",
            ".netrc",
            ".git-credentials",
            ".npmrc",
            ".pypirc",
            "u/.aws/credentials",
            ".docker/config.json",
            ".env/inside/venv.txt",
        ] {
            assert!(secrets.matches(Path::new(path)), "{path}");
        }
        for path in [
            "README.md",
            "src/env.rs",
            "keys.txt",
            "credentials.md",
            "docker/config.json",
            "environment",
        ] {
            assert!(!secrets.matches(Path::new(path)), "{path}");
        }
        assert!(secrets.names_match(Path::new("sub/../.env")));
        assert!(!secrets.names_match(Path::new("notes.txt")));
    }

    #[test]
    fn custom_patterns_replace_the_defaults_and_bad_ones_are_named() {
        let secrets = SecretFiles::new(&["/private/**".into(), "*.secret".into()]).unwrap();
        assert!(secrets.matches(Path::new("private/a/b")));
        assert!(!secrets.matches(Path::new("x/private/a")));
        assert!(secrets.matches(Path::new("x/y.SECRET")));
        assert!(!secrets.matches(Path::new(".env")));
        let err = SecretFiles::new(&["ok".into(), "[unclosed".into()]).unwrap_err();
        assert_eq!(err.0, 1);
        assert!(SecretFiles::new(&[" ".into()]).is_err());
        assert!(!SecretFiles::none().matches(Path::new(".env")));
    }
}

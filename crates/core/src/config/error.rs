//! The one error type of configuration loading.

use std::path::PathBuf;

/// Why a configuration file could not be used. Every variant names the file, so the user
/// knows which of the two configs (or which `.env`) to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists (or was named explicitly) but could not be read.
    #[error("{path}: cannot read the file: {source}", path = path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A path given by flag or environment variable does not exist.
    #[error("{path}: no such file (given by {origin})", path = path.display())]
    NotFound {
        /// The file.
        path: PathBuf,
        /// Where the path came from, e.g. `--config` or `ANTLER_CONFIG`.
        origin: String,
    },
    /// Malformed syntax or a value of the wrong type, with its position.
    #[error("{path}:{line}:{column}: {message}", path = path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What was wrong, including the expected type where it applies.
        message: String,
    },
    /// A value is well-formed but not acceptable, at a key path such as `models[0].name`.
    #[error("{path}: {key}: {message}", path = path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key path of the bad value.
        key: String,
        /// What was wrong and what is expected.
        message: String,
    },
    /// A `$NAME` value names an environment variable that is not set.
    #[error("{path}: {key}: environment variable ${var} is not set", path = path.display())]
    MissingEnv {
        /// The file.
        path: PathBuf,
        /// The key path of the value.
        key: String,
        /// The variable name, without `$`.
        var: String,
    },
}

/// Reads a configuration file, naming it in the error.
pub(crate) fn read_config_file(path: &std::path::Path) -> Result<String, ConfigError> {
    let bound = crate::base::bounded_read::CONFIG_BYTES;
    crate::base::bounded_read::read_to_string(path, bound, "a config file").map_err(|source| {
        ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }
    })
}

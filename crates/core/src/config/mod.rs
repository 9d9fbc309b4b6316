//! Configuration: `config.yaml` (models, tools, tool search, sandbox, ...) and
//! `extensions_config.json` (MCP servers), how they are found, and `$VAR` expansion.
//!
//! Loading never panics: every problem becomes a [`ConfigError`] that names the file and,
//! where the parser knows it, the line, column and key.

mod app;
mod app_load;
pub mod dirs;
mod discovery;
mod edit;
mod env;
mod error;
mod extensions;
mod hooks;
mod lenient;
mod locate;
mod oauth;
mod overrides;
mod permissions;
mod server_policy;
mod signature;

pub use app::{
    AppConfig, Binding, ListingMode, McpConfig, ModelConfig, SandboxConfig, SandboxMode,
    SkillsConfig, SubagentsConfig, SummarizationConfig, ToolCallFormat, ToolConfig,
    ToolGroupConfig, ToolOutputConfig, ToolSearchConfig, ToolSearchMode, WebFetchPolicy,
};
pub use app_load::{Loaded, parse_app_config, parse_app_config_with};
pub use discovery::{
    ConfigPaths, Found, Origin, app_config_candidates, dotenv_candidate, extensions_candidates,
    project_folders, user_extensions,
};
pub use edit::{EditError, add_server, remove_server};
#[cfg(test)]
pub(crate) use env::fixed_env;
pub(crate) use env::recording_secrets;
pub use env::{EnvLookup, expand_env_reference, expand_string, is_secret_name, load_dotenv};
pub use error::ConfigError;
pub(crate) use error::read_config_file;
pub use extensions::{
    ExtensionsConfig, McpServerConfig, RoutingHint, SkippedServer, TransportKind, disabled_skills,
    parse_extensions_config,
};
pub use hooks::{
    HookCommand, HookGroup, HooksConfig, MAX_HOOK_TIMEOUT_SECS, MatcherItem, antler_tool_name,
    matcher_items,
};
pub(crate) use locate::{Segment, locate};
pub use oauth::{Grant, IdentityProvider, OAuthSettings, PrivateKey, SigningAlgorithm};
pub use overrides::Override;
pub use permissions::{Decision, PermissionsConfig, Rule, RuleError, parse_rule_list};
pub use server_policy::{DeferMode, ServerPolicy, StartMode, ToolFilter};
pub use signature::FileSignature;

/// The project instruction files antler reads into the system prompt, by preference: a
/// folder's AGENTS.md, else its CLAUDE.md. Writing one needs the user's approval.
pub const INSTRUCTION_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md"];

/// The project's skill folders, as a path names them.
pub const SKILL_FOLDERS: &[&str] = &[".agents/skills", ".claude/skills"];

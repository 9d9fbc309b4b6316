//! `config.yaml`: its typed shape, following DeerFlow's config.yaml. Loading is in
//! `app_load`.
//!
//! Numbers and booleans accept a `$NAME` string (see [`super::lenient`]), so that any value
//! can come from the environment, as with DeerFlow's pydantic coercion.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::lenient;
use super::locate::Segment;

/// Top-level keys of `config.yaml`; any other key is reported as a warning.
pub(super) const KNOWN_TOP_LEVEL: &[&str] = &[
    "models",
    "tools",
    "tool_groups",
    "tool_search",
    "sandbox",
    "subagents",
    "summarization",
    "tool_output",
    "mcp",
];

/// Keys of DeerFlow's config.yaml that antler reads nothing from, accepted without a
/// warning so that a DeerFlow file loads quietly; any other key that lands in one of the
/// `extra` maps below is reported with its position.
pub(super) mod deerflow_keys {
    /// DeerFlow's keys of `models[]`.
    pub(crate) const MODEL: &[&str] = &[
        "use",
        "supports_thinking",
        "supports_reasoning_effort",
        "when_thinking_enabled",
        "thinking",
        "reasoning_effort",
        "extra_body",
        "default_headers",
        "api_base",
        "google_api_key",
        "timeout",
        "request_timeout",
        "use_responses_api",
        "output_version",
        "description",
    ];
    /// DeerFlow's keys of `sandbox` (its container settings).
    pub(crate) const SANDBOX: &[&str] = &["use", "image", "port", "mounts", "environment"];
    /// DeerFlow's keys of `subagents`.
    pub(crate) const SUBAGENTS: &[&str] = &["use", "model_name"];
    /// DeerFlow's keys of `summarization`.
    pub(crate) const SUMMARIZATION: &[&str] = &[
        "use",
        "model_name",
        "trigger",
        "keep",
        "trim_tokens_to_summarize",
        "summary_prompt",
    ];
    /// DeerFlow's keys of `tool_groups[]`.
    pub(crate) const TOOL_GROUP: &[&str] = &["description"];
    /// DeerFlow's keys of `skills`.
    pub(crate) const SKILLS: &[&str] = &["container_path", "use_deferred"];
}

/// Everything `config.yaml` configures. A missing file means `AppConfig::default()`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct AppConfig {
    /// Chat models the agent can use; the first is the default.
    pub models: Vec<ModelConfig>,
    /// Configured tools, selected by their `use` identifier.
    pub tools: Vec<ToolConfig>,
    /// Named groups that configured tools can belong to.
    pub tool_groups: Vec<ToolGroupConfig>,
    /// Deferred tool loading.
    pub tool_search: ToolSearchConfig,
    /// Where and how file and shell tools run.
    pub sandbox: SandboxConfig,
    /// Limits for delegated subagents.
    pub subagents: SubagentsConfig,
    /// History summarisation.
    pub summarization: SummarizationConfig,
    /// The per-call budget of tool results.
    pub tool_output: ToolOutputConfig,
    /// Settings for all MCP servers (each server's own are in extensions_config.json).
    pub mcp: McpConfig,
    /// Which tool calls run, ask first, or are refused.
    pub permissions: super::PermissionsConfig,
    /// Added to the system prompt (before the project's AGENTS.md files).
    pub instructions: Option<String>,
    /// Skills: more folders, names turned off, the listing's budget.
    pub skills: SkillsConfig,
    /// `hooks`: the user's programs around every step.
    pub hooks: super::HooksConfig,
}

/// `skills:` in config.yaml.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct SkillsConfig {
    /// More folders that hold skill folders (relative to config.yaml's folder), after the
    /// project's and the user's own.
    pub paths: Vec<PathBuf>,
    /// DeerFlow's skills folder: its `public/` and `custom/` hold skill folders.
    pub path: Option<PathBuf>,
    /// Skills turned off, by name.
    pub disabled: Vec<String>,
    /// The most tokens the `<available-skills>` listing may take (default 2% of the
    /// context window, at most 2,000).
    #[serde(default, deserialize_with = "lenient::optional")]
    pub listing_budget_tokens: Option<usize>,
    /// Any other key.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `mcp:` in config.yaml.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct McpConfig {
    /// How old a server's cached tool list (its manifest) may be before the server is
    /// started to list its tools again (default 86,400: one day); a server's own
    /// `manifest_max_age_secs` wins.
    #[serde(deserialize_with = "lenient::scalar")]
    pub manifest_max_age_secs: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            manifest_max_age_secs: 86_400,
        }
    }
}

/// How much of one tool result the model reads.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct ToolOutputConfig {
    /// A longer result keeps its head and tail; the full text is saved to a file
    /// (default 20,000 characters).
    #[serde(deserialize_with = "lenient::scalar")]
    pub max_chars: usize,
}

impl Default for ToolOutputConfig {
    fn default() -> Self {
        Self { max_chars: 20_000 }
    }
}

/// How a model's tool calls come back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallFormat {
    /// As the server's native tool calls.
    #[default]
    Native,
    /// Written as text: the tools are described in the system prompt and an answer that
    /// is exactly one `{"name", "arguments"}` object (or fence) is the call.
    Text,
    /// Native calls, and an answer that is exactly such an object taken as a call too.
    Auto,
}

impl ToolCallFormat {
    /// The name used in config.yaml.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Text => "text",
            Self::Auto => "auto",
        }
    }
}

/// One chat model on an OpenAI-compatible endpoint.
#[derive(Clone, Deserialize, Serialize)]
pub struct ModelConfig {
    /// The name used to pick this model (`--model NAME`).
    pub name: String,
    /// A friendlier name for display.
    #[serde(default)]
    pub display_name: Option<String>,
    /// The endpoint, e.g. `https://api.openai.com/v1`; the provider default when absent.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The model identifier sent to the endpoint.
    pub model: String,
    /// The API key, usually `$OPENAI_API_KEY`. Never printed (see the `Debug` impl).
    #[serde(default)]
    pub api_key: Option<String>,
    /// Whether the model accepts images.
    #[serde(default, deserialize_with = "lenient::scalar")]
    pub supports_vision: bool,
    /// The context window in tokens.
    #[serde(default, deserialize_with = "lenient::optional")]
    pub context_window: Option<u32>,
    /// The most tokens one answer may take.
    #[serde(default, deserialize_with = "lenient::optional")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, deserialize_with = "lenient::optional")]
    pub temperature: Option<f32>,
    /// How long to wait for the response headers of one model call, in seconds (default 60).
    #[serde(default, deserialize_with = "lenient::optional")]
    pub request_timeout_seconds: Option<u64>,
    /// The longest the stream may send nothing at all (keep-alive comments count), in
    /// seconds (default 120): a stalled stream is retried instead of hanging the session.
    #[serde(default, deserialize_with = "lenient::optional")]
    pub stream_idle_timeout_seconds: Option<u64>,
    /// The longest the stream may send only keep-alive comments before its first chunk, in
    /// seconds (default 600).
    #[serde(default, deserialize_with = "lenient::optional")]
    pub first_chunk_timeout_seconds: Option<u64>,
    /// The longest one model call may take in all, retries included, in seconds (default
    /// 1800): a stream that never ends fails instead of hanging the run.
    #[serde(default, deserialize_with = "lenient::optional")]
    pub call_timeout_seconds: Option<u64>,
    /// How often a failed call is retried (default 3).
    #[serde(default, deserialize_with = "lenient::optional")]
    pub max_retries: Option<u32>,
    /// The first retry's back-off in milliseconds, doubling (with jitter) per retry
    /// (default 500). A server's `Retry-After` takes precedence.
    #[serde(default, deserialize_with = "lenient::optional")]
    pub retry_base_delay_ms: Option<u64>,
    /// How the model's tool calls come: `native`, `text` or `auto` (default: `auto` for a
    /// local or private-network base URL, `native` otherwise).
    #[serde(default, deserialize_with = "lenient::optional")]
    pub tool_call_format: Option<ToolCallFormat>,
    /// Any other key (DeerFlow's `use`, `supports_thinking`, ...), kept for later use.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// Why this model cannot be used: its `$NAME`s that are not set (each an error with
    /// file and key), reported when it is chosen, not when the file loads.
    #[serde(skip)]
    pub unresolved: Vec<String>,
}

impl fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelConfig")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("supports_vision", &self.supports_vision)
            .field("context_window", &self.context_window)
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .field("request_timeout_seconds", &self.request_timeout_seconds)
            .field(
                "stream_idle_timeout_seconds",
                &self.stream_idle_timeout_seconds,
            )
            .field(
                "first_chunk_timeout_seconds",
                &self.first_chunk_timeout_seconds,
            )
            .field("call_timeout_seconds", &self.call_timeout_seconds)
            .field("max_retries", &self.max_retries)
            .field("retry_base_delay_ms", &self.retry_base_delay_ms)
            .finish_non_exhaustive()
    }
}

/// A configured tool: which implementation (`use`), under which name and group, plus free
/// tool-specific keys such as `max_results`.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ToolConfig {
    /// The tool's name as the model sees it.
    pub name: String,
    /// The tool group it belongs to, for group filtering.
    #[serde(default)]
    pub group: Option<String>,
    /// The implementation, e.g. `antler.sandbox:ls`.
    #[serde(rename = "use")]
    pub use_: String,
    /// Tool-specific settings.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A named tool group.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ToolGroupConfig {
    /// The group's name, referenced by `tools[].group`.
    pub name: String,
    /// Any other key.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Whether MCP tools are deferred behind `tool_search`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSearchMode {
    /// Bind every tool.
    Off,
    /// Defer every MCP tool.
    On,
    /// Defer only when the MCP schemas would take a large share of the context window
    /// (the default, as in Claude Code; DeerFlow's is off).
    #[default]
    Auto,
}

impl<'de> Deserialize<'de> for ToolSearchMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ModeVisitor;
        impl serde::de::Visitor<'_> for ModeVisitor {
            type Value = ToolSearchMode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true, false or \"auto\"")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(if v {
                    ToolSearchMode::On
                } else {
                    ToolSearchMode::Off
                })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                if lenient::is_placeholder(v) {
                    return Ok(ToolSearchMode::default());
                }
                match v {
                    "auto" => Ok(ToolSearchMode::Auto),
                    "true" => Ok(ToolSearchMode::On),
                    "false" => Ok(ToolSearchMode::Off),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        deserializer.deserialize_any(ModeVisitor)
    }
}

/// Deferred tool loading settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct ToolSearchConfig {
    /// `false`, `true` or `auto`; unset means `auto` ([`ToolSearchConfig::mode`]), and
    /// `doctor` says so.
    pub enabled: Option<ToolSearchMode>,
    /// How many tools a ranked search returns (1 to 10, default 5).
    #[serde(deserialize_with = "lenient::scalar")]
    pub max_results: usize,
    /// With `enabled: auto`: defer when the MCP schemas take more than this percentage of
    /// the model's context window (default 10).
    #[serde(deserialize_with = "lenient::scalar")]
    pub auto_threshold_percent: f64,
    /// The most deferred tools promoted at once; the least recently used lapse (default 16).
    #[serde(deserialize_with = "lenient::scalar")]
    pub max_promoted: usize,
    /// How many of a server's tools a routing hint promotes (default 3).
    #[serde(deserialize_with = "lenient::scalar")]
    pub auto_promote_top_k: usize,
    /// The sentence encoder blended into the ranking.
    pub semantic: SemanticConfig,
    /// How the system prompt lists the deferred tools: `names`, `servers` or `auto`
    /// (default: names while they fit `listing_budget_tokens`, else one line per server).
    #[serde(deserialize_with = "lenient::scalar")]
    pub listing: ListingMode,
    /// With `listing: auto`: the most tokens (estimated) the names may take (default
    /// 2,000; 2% of the context window when that is smaller).
    #[serde(deserialize_with = "lenient::scalar")]
    pub listing_budget_tokens: usize,
    /// How promoted tools reach the model: `native` (default; bound as tools once
    /// promoted) or `stable` (never bound; called through `call_tool`, so the tool list
    /// and a provider's prompt cache survive every promotion).
    #[serde(deserialize_with = "lenient::scalar")]
    pub binding: Binding,
}

/// How promoted deferred tools are offered to the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Binding {
    /// Promoted schemas are appended to the bound tools.
    #[default]
    Native,
    /// The bound tools never change; promoted tools are called through `call_tool`.
    Stable,
}

impl Binding {
    /// The name used in config.yaml.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Stable => "stable",
        }
    }
}

/// How the system prompt lists the deferred tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ListingMode {
    /// Every deferred tool's name.
    Names,
    /// One line per server: its name, tool count and a short description.
    Servers,
    /// Names while they fit the budget, else servers.
    #[default]
    Auto,
}

/// The sentence encoder of `tool_search`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct SemanticConfig {
    /// Rank with the encoder when its model is installed (default true).
    #[serde(deserialize_with = "lenient::scalar")]
    pub enabled: bool,
    /// The sentence-transformers model directory (relative paths from config.yaml's
    /// folder); default `$XDG_CACHE_HOME/antler/models/all-MiniLM-L6-v2`, where
    /// `antler models fetch` installs. `$ANTLER_SEMANTIC_MODEL` overrides it.
    pub model: Option<std::path::PathBuf>,
}

impl Default for SemanticConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            model: None,
        }
    }
}

impl ToolSearchConfig {
    /// Whether MCP tools are deferred: as set, else `auto`.
    pub fn mode(&self) -> ToolSearchMode {
        self.enabled.unwrap_or_default()
    }
}

impl Default for ToolSearchConfig {
    fn default() -> Self {
        Self {
            enabled: None,
            max_results: 5,
            auto_threshold_percent: 10.0,
            max_promoted: 16,
            auto_promote_top_k: 3,
            semantic: SemanticConfig::default(),
            listing: ListingMode::Auto,
            listing_budget_tokens: 2_000,
            binding: Binding::Native,
        }
    }
}

/// How the sandbox tools are confined: an unknown value is a configuration error, so that a
/// typo never silently runs unconfined.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// `none` (the default): paths are checked against the workspace, nothing more.
    #[default]
    #[serde(rename = "none")]
    Unconfined,
    /// `landlock`: the file tools and `bash` also run under a Linux Landlock ruleset.
    Landlock,
}

impl<'de> Deserialize<'de> for SandboxMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ModeVisitor;
        impl serde::de::Visitor<'_> for ModeVisitor {
            type Value = SandboxMode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"none\" or \"landlock\"")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(SandboxMode::Unconfined)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                if lenient::is_placeholder(v) {
                    return Ok(SandboxMode::default());
                }
                match v {
                    "none" => Ok(SandboxMode::Unconfined),
                    "landlock" => Ok(SandboxMode::Landlock),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        deserializer.deserialize_any(ModeVisitor)
    }
}

/// Sandbox settings for the file and shell tools.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct SandboxConfig {
    /// The workspace root; the working directory when absent.
    pub workspace: Option<PathBuf>,
    /// Extra places the file tools may read.
    pub read_only_paths: Vec<PathBuf>,
    /// Whether `bash` may run on the host (off by default: a host shell is not isolated).
    #[serde(deserialize_with = "lenient::scalar")]
    pub allow_host_bash: bool,
    /// How the sandbox tools are confined beyond the workspace path check.
    pub mode: SandboxMode,
    /// Secret files no file tool reads or writes and listings skip (globs; see
    /// `tools::sandbox::DEFAULT_DENY_READ` for the default, `[]` for none).
    #[serde(default)]
    pub deny_read: Option<Vec<String>>,
    /// What `web_fetch` may reach.
    pub web_fetch: WebFetchPolicy,
    /// Any other key (DeerFlow's `use`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The network `web_fetch` may reach.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct WebFetchPolicy {
    /// Whether loopback, link-local, private and unique-local addresses may be fetched
    /// (default false: a prompt-injected fetch must not reach the machine's or the LAN's
    /// services).
    #[serde(deserialize_with = "lenient::scalar")]
    pub allow_private_networks: bool,
}

/// Limits for the `task` tool's subagents.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default)]
pub struct SubagentsConfig {
    /// Whether the `task` tool is offered (default false, as in DeerFlow).
    #[serde(deserialize_with = "lenient::scalar")]
    pub enabled: bool,
    /// Subagents running at once.
    #[serde(deserialize_with = "lenient::scalar")]
    pub max_concurrent: usize,
    /// Subagents started in one run.
    #[serde(deserialize_with = "lenient::scalar")]
    pub max_total_per_run: usize,
    /// The tools a subagent may use (default: every tool but `task`, `ask_clarification`
    /// and `present_files`); deferred tools stay reachable through `tool_search` if it is
    /// allowed.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// The time one subagent may take.
    #[serde(deserialize_with = "lenient::scalar")]
    pub timeout_seconds: u64,
    /// Any other key.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for SubagentsConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            max_concurrent: 3,
            max_total_per_run: 6,
            tools: None,
            timeout_seconds: 1800,
            extra: Map::new(),
        }
    }
}

/// When and how the history is summarised.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct SummarizationConfig {
    /// Whether summarisation runs at all.
    #[serde(deserialize_with = "lenient::optional")]
    pub enabled: Option<bool>,
    /// History size in tokens that triggers it; 75% of the context window when absent.
    #[serde(deserialize_with = "lenient::optional")]
    pub trigger_tokens: Option<u64>,
    /// How many recent messages are kept verbatim (default 10).
    #[serde(deserialize_with = "lenient::optional")]
    pub keep_messages: Option<usize>,
    /// Any other key (DeerFlow's `trigger`, `keep`, `model_name`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
impl AppConfig {
    /// Keys that the `extra` maps (kept for DeerFlow's keys) caught but that neither antler nor
    /// DeerFlow knows: typos such as `models[0].temprature`.
    pub(super) fn extra_keys(&self) -> Vec<Vec<Segment>> {
        use deerflow_keys as deerflow;
        let key = |k: &str| Segment::Key(k.to_string());
        let mut found = Vec::new();
        let mut check = |at: Vec<Segment>,
                         extra: &serde_json::Map<String, serde_json::Value>,
                         quiet: &[&str]| {
            for name in extra.keys().filter(|k| !quiet.contains(&k.as_str())) {
                let mut path = at.clone();
                path.push(key(name));
                found.push(path);
            }
        };
        for (i, model) in self.models.iter().enumerate() {
            check(
                vec![key("models"), Segment::Index(i)],
                &model.extra,
                deerflow::MODEL,
            );
        }
        for (i, group) in self.tool_groups.iter().enumerate() {
            check(
                vec![key("tool_groups"), Segment::Index(i)],
                &group.extra,
                deerflow::TOOL_GROUP,
            );
        }
        check(vec![key("sandbox")], &self.sandbox.extra, deerflow::SANDBOX);
        check(
            vec![key("subagents")],
            &self.subagents.extra,
            deerflow::SUBAGENTS,
        );
        check(
            vec![key("summarization")],
            &self.summarization.extra,
            deerflow::SUMMARIZATION,
        );
        check(vec![key("skills")], &self.skills.extra, deerflow::SKILLS);
        found
    }
}

lenient::scalar_type!(
    ListingMode => "`names`, `servers` or `auto`",
    Binding => "`native` or `stable`",
    ToolCallFormat => "`native`, `text` or `auto`"
);
lenient::from_names! {
    ListingMode { "names" => ListingMode::Names, "servers" => ListingMode::Servers, "auto" => ListingMode::Auto }
    Binding { "native" => Binding::Native, "stable" => Binding::Stable }
    ToolCallFormat { "native" => ToolCallFormat::Native, "text" => ToolCallFormat::Text, "auto" => ToolCallFormat::Auto }
}

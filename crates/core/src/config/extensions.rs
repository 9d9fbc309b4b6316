//! `extensions_config.json`: the `mcpServers` map shared with Claude Desktop and DeerFlow.
//!
//! One bad server never stops the others: it is reported as a [`SkippedServer`] with its
//! reason. Only a file that cannot be read or parsed at all is a [`ConfigError`].

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::base::describe::json_kind;

use super::locate::{Segment, display_path, locate_json};
use super::server_policy::{DeferMode, ServerPolicy, StartMode, ToolFilter, foreign_filter_key};
use super::{ConfigError, EnvLookup, Loaded, expand_string, is_secret_name, recording_secrets};

/// Top-level keys we know; DeerFlow's file also carries `skills`, which is not ours to warn about.
const KNOWN_TOP_LEVEL: &[&str] = &["mcpServers", "skills"];

/// How antler talks to an MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio,
    /// The legacy HTTP+SSE transport (a GET event stream plus POSTed messages).
    Sse,
    /// Streamable HTTP.
    Http,
}

impl TransportKind {
    /// The name used in configs and listings.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Sse => "sse",
            Self::Http => "http",
        }
    }

    /// A `type` (or `transport`) value as the loader reads it.
    pub(crate) fn parse(value: &str) -> Option<Self> {
        match value {
            "stdio" => Some(Self::Stdio),
            "sse" => Some(Self::Sse),
            "http" | "streamable_http" | "streamable-http" | "streamableHttp" => Some(Self::Http),
            _ => None,
        }
    }
}

/// One usable MCP server entry, with defaults applied and `$VAR`s expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerConfig {
    /// The key in `mcpServers`; also the default tool-name prefix.
    pub name: String,
    /// Disabled servers are listed but never started.
    pub enabled: bool,
    /// `type` (or `transport`): how antler talks to it.
    pub transport: TransportKind,
    /// The program to start (stdio).
    pub command: Option<String>,
    /// Its arguments (stdio).
    pub args: Vec<String>,
    /// Extra environment variables for the child (stdio).
    pub env: BTreeMap<String, String>,
    /// The endpoint (sse, http).
    pub url: Option<String>,
    /// HTTP headers sent with every request (sse, http).
    pub headers: BTreeMap<String, String>,
    /// A human description.
    pub description: Option<String>,
    /// Whether tool names get the `{server}_` prefix.
    pub tool_name_prefix: bool,
    /// How long connecting and listing tools may take.
    pub startup_timeout: Duration,
    /// How long one tool call may take.
    pub tool_timeout: Duration,
    /// Routing hint for deferred tool loading.
    pub routing: Option<RoutingHint>,
    /// When it starts, whether its tools are deferred, which tools exist.
    pub policy: ServerPolicy,
    /// The user vouches for the server (`trusted: true`): its tools' `readOnlyHint` and
    /// `destructiveHint` annotations count for the permission policy. Without it they are
    /// the server's word only, never a grant.
    pub trusted: bool,
    /// How antler signs in to it (`oauth`; http only).
    pub oauth: Option<super::OAuthSettings>,
}

/// A server's routing hint: promote its tools when the user mentions these keywords
/// (`routing: {mode: prefer, keywords: [...], priority}`, as in DeerFlow).
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingHint {
    /// Case-insensitive words matched against the latest user message.
    pub keywords: Vec<String>,
    /// Higher priorities are promoted first when several servers match.
    pub priority: i64,
}

/// A server entry that could not be used, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct SkippedServer {
    /// The key in `mcpServers`.
    pub name: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The parsed `mcpServers` map, in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtensionsConfig {
    /// Usable servers (enabled or not).
    pub servers: Vec<McpServerConfig>,
    /// Entries that were skipped, with their reasons.
    pub skipped: Vec<SkippedServer>,
    /// Values that must never reach the model: HTTP header values, `env` values under
    /// secret names, and what secret-named variables expanded to.
    pub secrets: Vec<String>,
}

/// The raw shape of one entry, before defaults and validation.
#[derive(Deserialize)]
struct RawServer {
    #[serde(default = "default_true")]
    enabled: bool,
    #[serde(rename = "type", default)]
    type_: Option<String>,
    #[serde(default)]
    transport: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default = "default_true")]
    tool_name_prefix: bool,
    #[serde(default = "default_startup_timeout")]
    startup_timeout_secs: f64,
    #[serde(default = "default_tool_timeout")]
    tool_timeout_secs: f64,
    #[serde(default)]
    routing: Option<RawRouting>,
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    defer: Option<String>,
    #[serde(default)]
    enabled_tools: Option<Vec<String>>,
    #[serde(default)]
    disabled_tools: Option<Vec<String>>,
    #[serde(default)]
    manifest_max_age_secs: Option<f64>,
    #[serde(default)]
    trusted: bool,
    #[serde(default)]
    oauth: Option<super::oauth::RawOAuth>,
}

#[derive(Deserialize)]
struct RawRouting {
    #[serde(default = "default_routing_mode")]
    mode: String,
    #[serde(default)]
    keywords: Vec<String>,
    #[serde(default)]
    priority: i64,
}

fn default_routing_mode() -> String {
    String::from("prefer")
}

fn default_true() -> bool {
    true
}
fn default_startup_timeout() -> f64 {
    30.0
}
fn default_tool_timeout() -> f64 {
    60.0
}

/// Parses the text of an extensions file; `path` is only used in messages.
pub fn parse_extensions_config(
    text: &str,
    path: &Path,
    env: EnvLookup<'_>,
) -> Result<Loaded<ExtensionsConfig>, ConfigError> {
    let (servers, mut warnings) = servers_of(text, path)?;
    let file = path.display();
    let mut config = ExtensionsConfig::default();
    for (name, mut raw) in servers {
        let key = format!("mcpServers.{}", crate::base::text::quoted(&name));
        let at_server = |field: &[Segment]| {
            let mut full = vec![
                Segment::Key("mcpServers".into()),
                Segment::Key(name.clone()),
            ];
            full.extend_from_slice(field);
            (position_suffix(text, &full), display_path(&full))
        };
        let (unset, expanded) = recording_secrets(env, |env| expand_json(&mut raw, &key, env));
        config.secrets.extend(expanded);
        let unset: Vec<String> = unset
            .into_iter()
            .map(|(var, at)| {
                format!("{file}: {at}: environment variable ${var} is not set; using \"\"")
            })
            .collect();
        let mut unknown = Vec::new();
        match server_from_raw(&name, raw, path.parent(), &mut unknown) {
            Ok(server) => {
                // A disabled server's variables matter only once it is enabled.
                if server.enabled {
                    warnings.extend(unset);
                }
                config.secrets.extend(server.secret_values());
                for field in unknown {
                    let (at, shown) = at_server(&field);
                    warnings.push(format!("{file}{at}: {shown}: unknown key is ignored"));
                }
                config.servers.push(server);
            }
            Err(Skip { field, reason }) => {
                warnings.extend(unset);
                let (at, shown) = at_server(&field);
                let reason = format!("{file}{at}: {shown}: {reason}");
                warnings.push(format!("{reason} (the server is skipped)"));
                config.skipped.push(SkippedServer { name, reason });
            }
        }
    }
    Ok(Loaded {
        value: config,
        path: Some(path.to_path_buf()),
        warnings,
        secrets: Vec::new(),
    })
}

/// The file's `mcpServers` object, and a warning for each top-level key antler does not
/// know; a file that is not JSON, or not of that shape, is an error at its position.
fn servers_of(
    text: &str,
    path: &Path,
) -> Result<(serde_json::Map<String, Value>, Vec<String>), ConfigError> {
    let root: Value = serde_json::from_str(text).map_err(|err| ConfigError::Syntax {
        path: path.to_path_buf(),
        line: err.line(),
        column: err.column(),
        message: strip_position(&err.to_string()),
    })?;
    // A wrong shape is reported where it is, with the key path and what was expected.
    let misshapen = |key: &[Segment], message: String| match locate_json(text, key) {
        Some(at) => ConfigError::Syntax {
            path: path.to_path_buf(),
            line: at.line,
            column: at.column,
            message: format!("{}: {message}", display_path(key)),
        },
        None => ConfigError::Invalid {
            path: path.to_path_buf(),
            key: display_path(key),
            message,
        },
    };
    let Value::Object(mut root) = root else {
        return Err(ConfigError::Syntax {
            path: path.to_path_buf(),
            line: 1,
            column: 1,
            message: format!(
                "(top level): expected an object with a `mcpServers` key, found {}",
                json_kind(&root)
            ),
        });
    };
    let file = path.display();
    let warnings: Vec<String> = root
        .keys()
        .filter(|k| !KNOWN_TOP_LEVEL.contains(&k.as_str()))
        .map(|k| {
            let at = position_suffix(text, &[Segment::Key(k.clone())]);
            let k = crate::base::text::quoted(k);
            format!("{file}{at}: unknown top-level key `{k}` is ignored")
        })
        .collect();
    let servers = match root.remove("mcpServers") {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(misshapen(
                &[Segment::Key("mcpServers".into())],
                format!(
                    "expected an object mapping server names to settings, found {}",
                    json_kind(&other)
                ),
            ));
        }
    };
    Ok((servers, warnings))
}

impl McpServerConfig {
    /// The values of the entry that are secrets, for redaction: its headers, its OAuth
    /// client secret and identity provider's, and its env variables with secret names.
    fn secret_values(&self) -> impl Iterator<Item = String> + '_ {
        let oauth = self.oauth.iter().flat_map(|oauth| {
            let idp = match &oauth.grant {
                super::Grant::CrossAppAccess(idp) => Some(idp.secrets().cloned()),
                _ => None,
            };
            oauth
                .client_secret
                .clone()
                .into_iter()
                .chain(idp.into_iter().flatten())
        });
        self.headers.values().cloned().chain(oauth).chain(
            self.env
                .iter()
                .filter(|(name, _)| is_secret_name(name))
                .map(|(_, value)| value.clone()),
        )
    }
}

/// `:LINE:COLUMN` of `key` in the JSON `text`, or nothing when it cannot be found.
fn position_suffix(text: &str, key: &[Segment]) -> String {
    locate_json(text, key).map_or_else(String::new, |at| format!(":{}:{}", at.line, at.column))
}

/// A JSON value's kind, for "found ..." in messages.
/// DeerFlow's `skills` map of an extensions file (`{"NAME": {"enabled": false}}`): the
/// names it turns off. A file that is not JSON, or a map of another shape, turns off
/// nothing (the file's own errors are reported where its servers are read).
pub fn disabled_skills(text: &str) -> Vec<String> {
    let Ok(Value::Object(root)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let Some(Value::Object(skills)) = root.get("skills") else {
        return Vec::new();
    };
    skills
        .iter()
        .filter(|(_, entry)| entry.get("enabled") == Some(&Value::Bool(false)))
        .map(|(name, _)| name.clone())
        .collect()
}

/// Why an entry is skipped: the field at fault (empty: the entry itself) and the reason.
struct Skip {
    field: Vec<Segment>,
    reason: String,
}

impl Skip {
    fn entry(reason: impl Into<String>) -> Self {
        Self {
            field: Vec::new(),
            reason: reason.into(),
        }
    }

    fn at(field: &str, reason: impl Into<String>) -> Self {
        Self {
            field: vec![Segment::Key(field.to_string())],
            reason: reason.into(),
        }
    }
}

/// The key path of a serde error inside one entry, as segments.
fn error_field(path: &serde_path_to_error::Path) -> Vec<Segment> {
    use serde_path_to_error::Segment as S;
    path.iter()
        .filter_map(|segment| match segment {
            S::Seq { index } => Some(Segment::Index(*index)),
            S::Map { key } => Some(Segment::Key(key.clone())),
            S::Enum { .. } | S::Unknown => None,
        })
        .collect()
}

/// Validates one entry; the error says which field is wrong and why the entry is skipped.
/// Unknown keys (other clients' settings such as `autoApprove`) are collected in `unknown`.
fn server_from_raw(
    name: &str,
    raw: Value,
    folder: Option<&Path>,
    unknown: &mut Vec<Vec<Segment>>,
) -> Result<McpServerConfig, Skip> {
    if name.trim().is_empty() {
        return Err(Skip::entry("the server name is empty"));
    }
    let raw = read_entry(raw, unknown)?;
    let type_name = raw
        .type_
        .or(raw.transport)
        .unwrap_or_else(|| "stdio".into());
    let transport = TransportKind::parse(&type_name).ok_or_else(|| {
        Skip::at(
            "type",
            format!("unknown type `{type_name}` (expected \"stdio\", \"sse\" or \"http\")"),
        )
    })?;
    let non_empty = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
    let command = non_empty(raw.command);
    let url = non_empty(raw.url);
    match transport {
        TransportKind::Stdio => check_stdio(command.as_deref(), url.as_deref())?,
        TransportKind::Sse | TransportKind::Http => {
            check_remote(transport, url.as_deref(), &raw.headers)?;
        }
    }
    let routing = routing_from_raw(raw.routing)?;
    let oauth = match raw.oauth {
        None => None,
        Some(_) if transport != TransportKind::Http => {
            return Err(Skip::at(
                "oauth",
                "`oauth` is for streamable HTTP servers (`\"type\": \"http\"`)",
            ));
        }
        Some(oauth) => Some(oauth.check(folder).map_err(|invalid| Skip {
            field: vec![
                Segment::Key("oauth".into()),
                Segment::Key(invalid.key.into()),
            ],
            reason: invalid.reason,
        })?),
    };
    let policy = policy_from_raw(
        raw.start,
        raw.defer,
        raw.enabled_tools,
        raw.disabled_tools,
        raw.manifest_max_age_secs,
    )?;
    Ok(McpServerConfig {
        name: name.to_string(),
        enabled: raw.enabled,
        transport,
        command,
        args: raw.args,
        env: raw.env,
        url,
        headers: raw.headers,
        description: raw.description,
        tool_name_prefix: raw.tool_name_prefix,
        startup_timeout: seconds("startup_timeout_secs", raw.startup_timeout_secs)
            .map_err(|reason| Skip::at("startup_timeout_secs", reason))?,
        tool_timeout: seconds("tool_timeout_secs", raw.tool_timeout_secs)
            .map_err(|reason| Skip::at("tool_timeout_secs", reason))?,
        routing,
        policy,
        trusted: raw.trusted,
        oauth,
    })
}

/// One entry's JSON in its typed shape. Unknown keys are collected in `unknown`, except
/// another client's tool filter, which skips the entry: a tool it meant to hide must not
/// be exposed.
fn read_entry(raw: Value, unknown: &mut Vec<Vec<Segment>>) -> Result<RawServer, Skip> {
    if !raw.is_object() {
        return Err(Skip::entry(format!(
            "expected an object of settings, found {}",
            json_kind(&raw)
        )));
    }
    let mut ignored = Vec::new();
    let raw: RawServer = serde_path_to_error::deserialize(serde_ignored::Deserializer::new(
        raw,
        &mut |path: serde_ignored::Path<'_>| ignored.push(path.to_string()),
    ))
    .map_err(|err| Skip {
        field: error_field(err.path()),
        reason: err.into_inner().to_string(),
    })?;
    if let Some(key) = ignored.iter().find(|key| foreign_filter_key(key)) {
        return Err(Skip::at(
            key,
            format!(
                "`{key}` is not an antler setting; use `enabled_tools` or `disabled_tools` \
                 (names or globs) — the server is skipped so that no tool it meant to hide \
                 is exposed"
            ),
        ));
    }
    unknown.extend(ignored.into_iter().map(|key| {
        key.split('.')
            .map(|k| Segment::Key(k.to_string()))
            .collect()
    }));
    Ok(raw)
}

/// A stdio server needs a `command`.
fn check_stdio(command: Option<&str>, url: Option<&str>) -> Result<(), Skip> {
    if command.is_some() {
        return Ok(());
    }
    let hint = if url.is_some() {
        " (it has a `url`: set \"type\" to \"http\" or \"sse\")"
    } else {
        ""
    };
    Err(Skip::entry(format!(
        "a stdio server needs a `command`{hint}"
    )))
}

/// An `sse` or `http` server needs an http(s) `url`, and headers HTTP can carry.
fn check_remote(
    transport: TransportKind,
    url: Option<&str>,
    headers: &BTreeMap<String, String>,
) -> Result<(), Skip> {
    let Some(url) = url else {
        return Err(Skip::entry(format!(
            "a `{}` server needs a `url`",
            transport.as_str()
        )));
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| {
        let url = crate::base::text::quoted(url);
        Skip::at("url", format!("invalid `url` \"{url}\": {e}"))
    })?;
    for (name, value) in headers {
        if http::HeaderName::try_from(name.as_str()).is_err() {
            return Err(Skip::at(
                "headers",
                format!(
                    "\"{}\" is not a valid HTTP header name",
                    crate::base::text::quoted(name)
                ),
            ));
        }
        if http::HeaderValue::try_from(value.as_str()).is_err() {
            return Err(Skip::at(
                "headers",
                format!(
                    "the value of \"{}\" is not a valid HTTP header value",
                    crate::base::text::quoted(name)
                ),
            ));
        }
    }
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Skip::at(
            "url",
            format!(
                "the `url` \"{}\" must start with http:// or https://",
                crate::base::text::quoted(url)
            ),
        ));
    }
    Ok(())
}

/// A `routing` hint; only `prefer` is a mode.
fn routing_from_raw(routing: Option<RawRouting>) -> Result<Option<RoutingHint>, Skip> {
    match routing {
        None => Ok(None),
        Some(r) if r.mode == "prefer" => Ok(Some(RoutingHint {
            keywords: r.keywords,
            priority: r.priority,
        })),
        Some(r) => Err(Skip::at(
            "routing",
            format!(
                "`routing.mode` {:?} is not supported (expected \"prefer\")",
                r.mode
            ),
        )),
    }
}

/// `start`, `defer`, `enabled_tools`, `disabled_tools` and `manifest_max_age_secs`.
fn policy_from_raw(
    start: Option<String>,
    defer: Option<String>,
    enabled_tools: Option<Vec<String>>,
    disabled_tools: Option<Vec<String>>,
    manifest_max_age_secs: Option<f64>,
) -> Result<ServerPolicy, Skip> {
    let start = start
        .map(|value| {
            StartMode::parse(&value).ok_or_else(|| {
                Skip::at(
                    "start",
                    format!("unknown `start` {value:?} (expected \"lazy\" or \"eager\")"),
                )
            })
        })
        .transpose()?
        .unwrap_or_default();
    let defer = defer
        .map(|value| {
            DeferMode::parse(&value).ok_or_else(|| {
                Skip::at(
                    "defer",
                    format!(
                        "unknown `defer` {value:?} (expected \"auto\", \"always\" or \"never\")"
                    ),
                )
            })
        })
        .transpose()?
        .unwrap_or_default();
    let tools = ToolFilter::new(enabled_tools, disabled_tools)
        .map_err(|(field, reason)| Skip::at(field, reason))?;
    let manifest_max_age = manifest_max_age_secs
        .map(|secs| {
            Duration::try_from_secs_f64(secs).map_err(|_| {
                Skip::at(
                    "manifest_max_age_secs",
                    format!("`manifest_max_age_secs` must be a number of seconds >= 0, got {secs}"),
                )
            })
        })
        .transpose()?;
    Ok(ServerPolicy {
        start,
        defer,
        tools,
        manifest_max_age,
    })
}

fn seconds(key: &str, value: f64) -> Result<Duration, String> {
    if value > 0.0 {
        Duration::try_from_secs_f64(value).map_err(|_| format!("`{key}` {value} is too large"))
    } else {
        Err(format!(
            "`{key}` must be a positive number of seconds, got {value}"
        ))
    }
}

/// Expands `$NAME` and `${NAME}` at any depth; an unset variable becomes "" (as DeerFlow
/// does).
/// Returns the unset variables with the key paths where they were used.
fn expand_json(node: &mut Value, key_path: &str, env: EnvLookup<'_>) -> Vec<(String, String)> {
    let mut missing = Vec::new();
    match node {
        Value::String(s) => {
            let mut unset = Vec::new();
            if let Some(value) = expand_string(s, env, &mut unset) {
                *s = value;
            }
            missing.extend(unset.into_iter().map(|var| (var, key_path.to_string())));
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                missing.extend(expand_json(item, &format!("{key_path}[{i}]"), env));
            }
        }
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                missing.extend(expand_json(value, &format!("{key_path}.{key}"), env));
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    missing
}

/// serde_json appends " at line L column C"; the error type carries those separately.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::fixed_env as env_of;

    fn parse(text: &str, vars: &[(&str, &str)]) -> Loaded<ExtensionsConfig> {
        parse_extensions_config(text, Path::new("ext.json"), &env_of(vars)).unwrap()
    }

    /// Why the server `name` was skipped.
    fn skip_reason(loaded: &Loaded<ExtensionsConfig>, name: &str) -> String {
        let skipped = loaded.value.skipped.iter().find(|s| s.name == name);
        skipped.unwrap().reason.clone()
    }

    #[test]
    fn defaults_and_aliases() {
        let loaded = parse(
            r#"{"mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "x"],
                       "routing": {"keywords": ["file", "folder"], "priority": 2}},
                "remote": {"transport": "sse", "url": "http://127.0.0.1:9/sse"},
                "both": {"type": "http", "transport": "sse", "url": "http://127.0.0.1:9/mcp",
                         "tool_name_prefix": false, "startup_timeout_secs": 0.5,
                         "enabled": false}
            }}"#,
            &[],
        );
        let s = &loaded.value.servers;
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].name, "fs");
        assert_eq!(s[0].transport, TransportKind::Stdio);
        assert!(s[0].enabled && s[0].tool_name_prefix);
        assert_eq!(s[0].startup_timeout, Duration::from_secs(30));
        assert_eq!(s[0].tool_timeout, Duration::from_secs(60));
        assert_eq!(
            s[0].routing,
            Some(RoutingHint {
                keywords: vec!["file".into(), "folder".into()],
                priority: 2
            })
        );
        assert_eq!(s[1].routing, None);
        assert_eq!(s[1].transport, TransportKind::Sse);
        assert_eq!(
            s[2].transport,
            TransportKind::Http,
            "`type` wins over `transport`"
        );
        assert!(!s[2].enabled && !s[2].tool_name_prefix);
        assert_eq!(s[2].startup_timeout, Duration::from_millis(500));
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    }

    #[test]
    fn env_values_expand_at_any_depth_and_missing_become_empty() {
        let loaded = parse(
            r#"{"mcpServers": {"gh": {"command": "$CMD", "args": ["$ARG", "lit$X"],
                "headers": {"Authorization": "Bearer ${TOKEN}"},
                "env": {"TOKEN": "$TOKEN", "UNSET": "$NOT_SET_ANYWHERE"}}}}"#,
            &[("CMD", "node"), ("ARG", "a1"), ("TOKEN", "t")],
        );
        let s = &loaded.value.servers[0];
        assert_eq!(s.command.as_deref(), Some("node"));
        assert_eq!(s.args, ["a1", "lit$X"]);
        assert_eq!(s.env["TOKEN"], "t");
        assert_eq!(s.headers["Authorization"], "Bearer t");
        assert_eq!(s.env["UNSET"], "");
        assert_eq!(loaded.value.secrets, ["t", "t", "Bearer t", "t"]);
        assert_eq!(loaded.warnings.len(), 1);
        assert!(loaded.warnings[0].contains("mcpServers.gh.env.UNSET"));
        assert!(loaded.warnings[0].contains("$NOT_SET_ANYWHERE"));
    }

    #[test]
    fn a_disabled_servers_unset_variables_do_not_warn() {
        let loaded = parse(
            r#"{"mcpServers": {
                "off": {"enabled": false, "type": "http", "url": "https://x.example/mcp",
                        "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
                "on": {"command": "x", "env": {"K": "$ALSO_UNSET"}}}}"#,
            &[],
        );
        assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
        assert!(loaded.warnings[0].contains("$ALSO_UNSET"));
    }

    #[test]
    fn bad_servers_are_skipped_with_reasons_and_the_rest_load() {
        let loaded = parse(
            r#"{"mcpServers": {
                "nocmd": {"url": "http://127.0.0.1:1/mcp"},
                "nourl": {"type": "http"},
                "weird": {"type": "websocket", "url": "ws://x"},
                "badtype": {"command": "x", "args": "not-a-list"},
                "badtimeout": {"command": "x", "startup_timeout_secs": 0},
                "badscheme": {"type": "sse", "url": "ftp://host/sse"},
                "badroute": {"command": "x", "routing": {"mode": "force"}},
                "badheader": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Bad Header": "x"}},
                "good": {"command": "x"}
            }}"#,
            &[],
        );
        let names: Vec<_> = loaded
            .value
            .servers
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["good"]);
        let reason = |n: &str| skip_reason(&loaded, n);
        assert!(reason("nocmd").contains("needs a `command`"));
        assert!(reason("nocmd").contains("set \"type\""));
        assert!(reason("nourl").contains("needs a `url`"));
        assert!(reason("weird").contains("unknown type `websocket`"));
        assert!(reason("badtype").contains("invalid type"));
        assert!(reason("badtimeout").contains("positive"));
        assert!(reason("badscheme").contains("http://"));
        assert!(reason("badheader").contains("\"Bad Header\" is not a valid HTTP header name"));
        assert!(reason("badroute").contains("`routing.mode` \"force\" is not supported"));
        assert_eq!(loaded.warnings.len(), 8);
    }

    #[test]
    fn wrong_types_name_the_file_line_and_field() {
        let text = r#"{
  "mcpServers": {
    "a": {"command": "x", "args": "x"},
    "b": {"command": "x",
          "startup_timeout_secs": "ten"},
    "c": {"command": "x", "env": {"GOOD": "1", "N": 5}},
    "d": {"command": "x", "routing": {"keywords": "file"}},
    "e": "not an object",
    "f": {"command": "x", "autoApprove": []}
  }
}"#;
        let loaded = parse(text, &[]);
        let reason = |n: &str| skip_reason(&loaded, n);
        assert!(
            reason("a").starts_with("ext.json:3:32: mcpServers.a.args: invalid type: string"),
            "{}",
            reason("a")
        );
        assert!(
            reason("b").starts_with("ext.json:5:32: mcpServers.b.startup_timeout_secs: invalid type: string \"ten\", expected f64"),
            "{}",
            reason("b")
        );
        assert!(
            reason("c").starts_with(
                "ext.json:6:50: mcpServers.c.env.N: invalid type: integer `5`, expected a string"
            ),
            "{}",
            reason("c")
        );
        assert!(
            reason("d").starts_with("ext.json:7:48: mcpServers.d.routing.keywords: invalid type"),
            "{}",
            reason("d")
        );
        assert_eq!(
            reason("e"),
            "ext.json:8:7: mcpServers.e: expected an object of settings, found a string"
        );
        assert_eq!(loaded.value.servers.len(), 1);
        assert!(
            loaded
                .warnings
                .iter()
                .any(|w| w == "ext.json:9:39: mcpServers.f.autoApprove: unknown key is ignored"),
            "{:?}",
            loaded.warnings
        );
    }

    #[test]
    fn unknown_server_keys_warn_and_the_server_loads() {
        let loaded = parse(
            r#"{"mcpServers": {"a": {"command": "x", "autoApprove": []}}}"#,
            &[],
        );
        assert_eq!(loaded.value.servers.len(), 1);
        assert_eq!(loaded.warnings.len(), 1);
        assert!(loaded.warnings[0].contains("mcpServers.a.autoApprove: unknown key"));
    }

    #[test]
    fn malformed_json_names_line_and_column() {
        let err = parse_extensions_config(
            "{\n  \"mcpServers\": {\n    \"a\": {,}\n  }\n}",
            Path::new("ext.json"),
            &env_of(&[]),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "ext.json:3:11: key must be a string");
    }

    #[test]
    fn top_level_shape_errors() {
        let err = parse_extensions_config("[]", Path::new("e.json"), &env_of(&[])).unwrap_err();
        assert!(err.to_string().contains("expected an object"));
        let err =
            parse_extensions_config(r#"{"mcpServers": []}"#, Path::new("e.json"), &env_of(&[]))
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "e.json:1:13: mcpServers: expected an object mapping server names to settings, \
             found an array"
        );
        let loaded = parse(r#"{"skills": {}, "other": 1}"#, &[]);
        assert!(loaded.value.servers.is_empty());
        assert_eq!(loaded.warnings.len(), 1);
        assert!(loaded.warnings[0].contains("`other`"));
    }
}

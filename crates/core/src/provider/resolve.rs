//! Which model a session talks to: a configured model picked by name, the first configured
//! model, or a raw model id on the endpoint the environment names.

use std::sync::Arc;
use std::time::Duration;

use super::Provider;
use super::embedded::catalog::{self, CHAT};
use super::embedded::{EMBEDDED, EmbeddedProvider};
use super::openai::OpenAiSettings;
use crate::config::{EnvLookup, ModelConfig, ToolCallFormat};

/// OpenAI's endpoint, used when a key is given without a base URL.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Why no model could be chosen; each message says what to set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// Neither config.yaml nor the environment names an endpoint.
    #[error(
        "no model endpoint configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for another \
         OpenAI-compatible server, e.g. http://localhost:11434/v1 for Ollama) and pass \
         --model NAME, or add a model to config.yaml (see config.example.yaml)"
    )]
    NoEndpoint,
    /// An endpoint is known but no model id.
    #[error(
        "no model chosen for {endpoint}: pass --model NAME (or set ANTLER_MODEL), or add a \
         model to config.yaml (see config.example.yaml)"
    )]
    NoModelId {
        /// The endpoint (without credentials).
        endpoint: String,
    },
    /// The requested name is not configured and the environment names no endpoint.
    #[error(
        "unknown model `{requested}`: config.yaml defines {}; pass one of those to --model, \
         or set OPENAI_API_KEY or OPENAI_BASE_URL to use `{requested}` as a model id there",
        crate::base::text::quoted_list(.configured.iter().map(String::as_str)),
        requested = crate::base::text::quoted(.requested)
    )]
    UnknownModel {
        /// What was asked for.
        requested: String,
        /// The `models[].name`s config.yaml defines, offered in the message.
        configured: Vec<String>,
    },
    /// OpenAI's own endpoint would be called without a key.
    #[error(
        "{source_name} uses {DEFAULT_BASE_URL} but has no API key: set OPENAI_API_KEY (or \
         `api_key` in config.yaml), or set a `base_url` for a local server"
    )]
    MissingKey {
        /// The configured model's name, or "the environment".
        source_name: String,
    },
    /// The chosen model's settings name an environment variable that is not set.
    #[error("{0}")]
    Unresolved(String),
    /// A configured model has an empty `model` id.
    #[error("model `{name}` in config.yaml has no `model` id")]
    EmptyModelId {
        /// Its `name` in config.yaml.
        name: String,
    },
}

/// Resolving or building the model's provider failed.
#[derive(Debug, thiserror::Error)]
pub enum ModelSetupError {
    /// No usable endpoint or model id.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// The endpoint's client cannot be built (e.g. an invalid base URL).
    #[error(transparent)]
    Provider(#[from] super::ProviderError),
    /// The embedded model is the one to use and is not installed.
    #[error(
        "{}the embedded model is not installed: run `antler models fetch chat` ({}, once) to \
         answer with a small model on this machine, or set OPENAI_API_KEY (and \
         OPENAI_BASE_URL for another OpenAI-compatible server) and pass --model NAME, or add a \
         model to config.yaml (see config.example.yaml)",
        if *.defaulted { "no model endpoint configured and " } else { "" },
        CHAT.size_text()
    )]
    EmbeddedMissing {
        /// The model was the default, not asked for.
        defaulted: bool,
    },
}

/// The provider a session talks to, and what to tell the user about that choice.
pub(crate) struct ChosenModel {
    pub provider: Arc<dyn Provider>,
    /// Said once when the embedded model is used because nothing else is configured.
    pub notice: Option<String>,
    /// Whether it is the embedded model.
    pub embedded: bool,
}

/// The provider for `requested`: the embedded model for `-m embedded` (unless config.yaml
/// names a model so) and when neither config.yaml nor the environment names an endpoint;
/// else the OpenAI-compatible endpoint [`resolve_model`] finds.
pub(crate) fn model_provider(
    models: &[ModelConfig],
    requested: Option<&str>,
    env: EnvLookup<'_>,
) -> Result<ChosenModel, ModelSetupError> {
    let asked = requested.map(str::trim);
    let configured = models.iter().any(|m| Some(m.name.as_str()) == asked);
    if asked == Some(EMBEDDED) && !configured {
        return embedded(env, false);
    }
    match resolve_model(models, requested, env) {
        Ok(settings) => Ok(ChosenModel {
            provider: Arc::new(super::openai::OpenAiProvider::new(settings)?),
            notice: None,
            embedded: false,
        }),
        Err(ResolveError::NoEndpoint) => embedded(env, true),
        Err(err) => Err(err.into()),
    }
}

/// Whether [`model_provider`] would pick the embedded model and find it missing; cheap (no
/// client is built), so the chat can offer to install it before it starts.
pub(crate) fn embedded_missing(
    models: &[ModelConfig],
    requested: Option<&str>,
    env: EnvLookup<'_>,
) -> bool {
    let asked = requested.map(str::trim);
    let configured = models.iter().any(|m| Some(m.name.as_str()) == asked);
    let wanted = (asked == Some(EMBEDDED) && !configured)
        || matches!(
            resolve_model(models, requested, env),
            Err(ResolveError::NoEndpoint)
        );
    wanted
        && crate::config::dirs::models_dir(env)
            .and_then(|dir| catalog::installed(&dir))
            .is_none()
}

fn embedded(env: EnvLookup<'_>, defaulted: bool) -> Result<ChosenModel, ModelSetupError> {
    let found = crate::config::dirs::models_dir(env).and_then(|dir| catalog::installed(&dir));
    let Some((model, path)) = found else {
        return Err(ModelSetupError::EmbeddedMissing { defaulted });
    };
    let notice = defaulted.then(|| {
        format!(
            "no model endpoint configured: answering with the embedded model {} on this \
             machine's CPU (slow, and no match for a hosted model). For a real model set \
             OPENAI_API_KEY (and OPENAI_BASE_URL for another server) or add one to config.yaml",
            model.title
        )
    });
    Ok(ChosenModel {
        provider: Arc::new(EmbeddedProvider::new(model, path)),
        notice,
        embedded: true,
    })
}

/// The OpenAI-compatible provider for `requested` (see [`resolve_model`]): the one path
/// the one-shot run, the chat and `doctor` take to their model.
pub(crate) fn openai_provider(
    models: &[ModelConfig],
    requested: Option<&str>,
    env: EnvLookup<'_>,
) -> Result<super::openai::OpenAiProvider, ModelSetupError> {
    let settings = resolve_model(models, requested, env)?;
    Ok(super::openai::OpenAiProvider::new(settings)?)
}

/// Picks the model for a session; `requested` is `--model`.
///
/// - A configured model whose `name` is `requested` (or the first one when nothing is
///   requested) is used; its `api_key` falls back to `OPENAI_API_KEY`, its `base_url` to
///   `OPENAI_BASE_URL`, then to OpenAI's endpoint.
/// - With no configured model, the endpoint comes from `OPENAI_BASE_URL` and/or
///   `OPENAI_API_KEY`, the model id from `requested` or `ANTLER_MODEL`.
/// - A requested name that is not configured while some are is a raw model id on the
///   environment's endpoint if `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set, else an error
///   listing the configured names.
/// - OpenAI's endpoint without a key is an error; other servers need none.
pub fn resolve_model(
    models: &[ModelConfig],
    requested: Option<&str>,
    env: EnvLookup<'_>,
) -> Result<OpenAiSettings, ResolveError> {
    let requested = requested.map(str::trim).filter(|name| !name.is_empty());
    let chosen = match requested {
        Some(name) => models.iter().find(|model| model.name == name),
        None => models.first(),
    };
    if let Some(model) = chosen {
        return from_config(model, env);
    }
    let var = |name: &str| {
        env(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let base_url = var("OPENAI_BASE_URL");
    let api_key = var("OPENAI_API_KEY");
    if base_url.is_none() && api_key.is_none() {
        return Err(match requested {
            Some(name) if !models.is_empty() => ResolveError::UnknownModel {
                requested: name.to_string(),
                configured: models.iter().map(|m| m.name.clone()).collect(),
            },
            _ => ResolveError::NoEndpoint,
        });
    }
    let base_url = base_url.unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
    check_key(&base_url, api_key.as_deref(), "the environment")?;
    let model = requested
        .map(str::to_string)
        .or_else(|| var("ANTLER_MODEL"));
    let Some(model) = model else {
        return Err(ResolveError::NoModelId {
            endpoint: super::openai::display_endpoint(&base_url),
        });
    };
    let mut settings = OpenAiSettings::new(base_url, model);
    settings.api_key = api_key;
    settings.tool_call_format = default_tool_call_format(&settings.base_url);
    Ok(settings)
}

/// `auto` for a server on this machine or a private network (a local model, which may
/// write its tool calls as text), `native` for the rest.
pub(crate) fn default_tool_call_format(base_url: &str) -> ToolCallFormat {
    let host = url::Url::parse(base_url)
        .ok()
        .and_then(|url| url.host().map(|h| h.to_owned()));
    let local = match host {
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.');
            name == "localhost" || name.ends_with(".localhost") || name.ends_with(".local")
        }
        Some(url::Host::Ipv4(ip)) => {
            ip.is_loopback() || ip.is_private() || ip.is_link_local() || ip.is_unspecified()
        }
        Some(url::Host::Ipv6(ip)) => {
            let unique_local = (ip.segments()[0] & 0xfe00) == 0xfc00;
            ip.is_loopback()
                || ip.is_unspecified()
                || unique_local
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_private())
        }
        None => false,
    };
    if local {
        ToolCallFormat::Auto
    } else {
        ToolCallFormat::Native
    }
}

/// Settings for a configured model; its key and base URL fall back to the environment.
fn from_config(model: &ModelConfig, env: EnvLookup<'_>) -> Result<OpenAiSettings, ResolveError> {
    let non_empty = |value: Option<String>| value.filter(|v| !v.trim().is_empty());
    if let Some(error) = model.unresolved.first() {
        return Err(ResolveError::Unresolved(error.clone()));
    }
    if model.model.trim().is_empty() {
        return Err(ResolveError::EmptyModelId {
            name: model.name.clone(),
        });
    }
    let api_key = non_empty(model.api_key.clone()).or_else(|| non_empty(env("OPENAI_API_KEY")));
    let base_url = non_empty(model.base_url.clone())
        .or_else(|| non_empty(env("OPENAI_BASE_URL")))
        .unwrap_or_else(|| DEFAULT_BASE_URL.to_string());
    check_key(
        &base_url,
        api_key.as_deref(),
        &format!("model `{}`", model.name),
    )?;
    let mut settings = OpenAiSettings::new(base_url, model.model.trim());
    settings.api_key = api_key;
    settings.tool_call_format = model
        .tool_call_format
        .unwrap_or_else(|| default_tool_call_format(&settings.base_url));
    settings.max_tokens = model.max_tokens;
    settings.temperature = model.temperature;
    if let Some(seconds) = model.request_timeout_seconds {
        settings.request_timeout = Duration::from_secs(seconds);
    }
    if let Some(seconds) = model.stream_idle_timeout_seconds {
        settings.stream_idle_timeout = Duration::from_secs(seconds);
    }
    if let Some(seconds) = model.first_chunk_timeout_seconds {
        settings.first_chunk_timeout = Duration::from_secs(seconds);
    }
    if let Some(seconds) = model.call_timeout_seconds {
        settings.call_timeout = Duration::from_secs(seconds);
    }
    if let Some(retries) = model.max_retries {
        settings.max_retries = retries;
    }
    if let Some(ms) = model.retry_base_delay_ms {
        settings.backoff_base = Duration::from_millis(ms);
    }
    Ok(settings)
}

/// OpenAI's own endpoint needs a key; other servers may not.
fn check_key(base_url: &str, api_key: Option<&str>, source_name: &str) -> Result<(), ResolveError> {
    let is_openai = reqwest::Url::parse(base_url.trim())
        .is_ok_and(|url| url.host_str() == Some("api.openai.com"));
    if is_openai && api_key.is_none() {
        return Err(ResolveError::MissingKey {
            source_name: source_name.to_string(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(name: &str, base_url: Option<&str>, api_key: Option<&str>) -> ModelConfig {
        let mut value = serde_json::json!({"name": name, "model": format!("{name}-id")});
        if let Some(url) = base_url {
            value["base_url"] = url.into();
        }
        if let Some(key) = api_key {
            value["api_key"] = key.into();
        }
        serde_json::from_value(value).unwrap()
    }

    fn resolve(
        models: &[ModelConfig],
        requested: Option<&str>,
        vars: &[(&str, &str)],
    ) -> Result<OpenAiSettings, ResolveError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        resolve_model(models, requested, &env)
    }

    #[test]
    fn a_requested_name_picks_that_model_with_env_fallbacks() {
        let models = [
            model("a", Some("http://a/v1"), Some("ka")),
            model("b", None, None),
        ];
        let env = [
            ("OPENAI_API_KEY", "kenv"),
            ("OPENAI_BASE_URL", "http://env/v1"),
        ];
        let s = resolve(&models, Some("b"), &env).unwrap();
        assert_eq!(
            (s.model.as_str(), s.base_url.as_str()),
            ("b-id", "http://env/v1")
        );
        assert_eq!(s.api_key.as_deref(), Some("kenv"));
        let s = resolve(&models, Some("a"), &env).unwrap();
        assert_eq!(
            (s.base_url.as_str(), s.api_key.as_deref()),
            ("http://a/v1", Some("ka"))
        );
        let s = resolve(&models, Some("b"), &[("OPENAI_API_KEY", "k")]).unwrap();
        assert_eq!(s.base_url, DEFAULT_BASE_URL);
    }

    #[test]
    fn no_request_picks_the_first_model_and_its_limits() {
        let mut first = model("a", Some("http://localhost:11434/v1"), None);
        first.max_tokens = Some(50);
        first.temperature = Some(0.1);
        first.request_timeout_seconds = Some(5);
        first.stream_idle_timeout_seconds = Some(6);
        first.max_retries = Some(0);
        first.retry_base_delay_ms = Some(7);
        let s = resolve(&[first, model("b", None, Some("k"))], None, &[]).unwrap();
        assert_eq!(s.model, "a-id");
        assert_eq!(s.api_key, None);
        assert_eq!((s.max_tokens, s.temperature), (Some(50), Some(0.1)));
        assert_eq!(s.request_timeout, Duration::from_secs(5));
        assert_eq!(s.stream_idle_timeout, Duration::from_secs(6));
        assert_eq!(s.max_retries, 0);
        assert_eq!(s.backoff_base, Duration::from_millis(7));
    }

    #[test]
    fn without_models_the_environment_is_used() {
        let s = resolve(&[], Some("gpt-x"), &[("OPENAI_API_KEY", "k")]).unwrap();
        assert_eq!(
            (s.base_url.as_str(), s.model.as_str()),
            (DEFAULT_BASE_URL, "gpt-x")
        );
        let env = [
            ("OPENAI_BASE_URL", "http://localhost:11434/v1"),
            ("ANTLER_MODEL", "qwen"),
        ];
        let s = resolve(&[], None, &env).unwrap();
        assert_eq!((s.model.as_str(), s.api_key.as_deref()), ("qwen", None));
        let err = resolve(&[], None, &[("OPENAI_API_KEY", "k")]).unwrap_err();
        assert!(matches!(err, ResolveError::NoModelId { .. }));
        assert!(err.to_string().contains("--model"), "{err}");
    }

    #[test]
    fn nothing_configured_says_what_to_set() {
        let err = resolve(&[], Some("m"), &[("OPENAI_API_KEY", "  ")]).unwrap_err();
        assert_eq!(err, ResolveError::NoEndpoint);
        let text = err.to_string();
        for needle in [
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "--model",
            "config.yaml",
            "11434",
        ] {
            assert!(text.contains(needle), "{text}");
        }
    }

    #[test]
    fn an_unknown_name_is_a_raw_id_only_with_an_env_endpoint() {
        let models = [
            model("a", Some("http://a/v1"), None),
            model("b", None, Some("k")),
        ];
        let s = resolve(
            &models,
            Some("llama3"),
            &[("OPENAI_BASE_URL", "http://o/v1")],
        )
        .unwrap();
        assert_eq!(
            (s.model.as_str(), s.base_url.as_str()),
            ("llama3", "http://o/v1")
        );
        let err = resolve(&models, Some("llama3"), &[]).unwrap_err();
        assert!(matches!(err, ResolveError::UnknownModel { .. }));
        assert!(err.to_string().contains("defines a, b"), "{err}");
    }

    #[test]
    fn openai_without_a_key_is_an_error() {
        let err = resolve(&[model("a", None, None)], None, &[]).unwrap_err();
        assert!(matches!(err, ResolveError::MissingKey { .. }), "{err}");
        assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
        let env = [("OPENAI_BASE_URL", "https://api.openai.com/v1/")];
        let err = resolve(&[], Some("m"), &env).unwrap_err();
        assert!(matches!(err, ResolveError::MissingKey { .. }), "{err}");
        let empty_key = model("a", Some("https://api.openai.com/v1"), Some(""));
        assert!(resolve(&[empty_key], None, &[]).is_err());
    }

    #[test]
    fn an_empty_model_id_is_an_error() {
        let mut m = model("a", Some("http://a/v1"), None);
        m.model = String::from(" ");
        let err = resolve(&[m], None, &[]).unwrap_err();
        assert_eq!(
            err,
            ResolveError::EmptyModelId {
                name: String::from("a")
            }
        );
    }

    #[test]
    fn local_and_private_servers_default_to_auto() {
        for url in [
            "http://localhost:8080/v1",
            "http://LOCALHOST./v1",
            "http://127.0.0.1:11434/v1",
            "http://user:pw@192.168.1.5:8000/v1",
            "http://10.0.0.2/v1",
            "http://[::1]:8080/v1",
            "http://[fd12::1]/v1",
            "http://box.local/v1",
        ] {
            assert_eq!(default_tool_call_format(url), ToolCallFormat::Auto, "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "https://127.0.0.1.example.com/v1",
            "http://8.8.8.8/v1",
            "not a url",
        ] {
            assert_eq!(
                default_tool_call_format(url),
                ToolCallFormat::Native,
                "{url}"
            );
        }
    }
}

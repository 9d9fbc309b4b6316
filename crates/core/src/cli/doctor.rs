//! `antler doctor`: every part of the agent setup checked once, as a CI smoke test.

use std::path::Path;
use std::time::{Duration, Instant};

use super::context::CommandContext;
use super::output::{to_json, write_stdout};
use super::{DoctorArgs, Exit};
use crate::config::{ConfigPaths, EnvLookup, SandboxMode};
use crate::mcp::McpManager;
use crate::protocol::Message;
use crate::protocol::ServerState;
use crate::provider::resolve::{ModelSetupError, model_provider, openai_provider};
use crate::provider::{ModelRequest, Provider};
use crate::setup::Setup;
use crate::store::{ThreadStore, default_path};
use crate::tools::sandbox::{LandlockStatus, landlock_status};
use crate::trust::{ProjectTrust, project_files};
use crate::ui::doctor::{Check, CheckStatus, doctor_table};
use antler_search::semantic::SemanticModel;

/// How long the model endpoint gets to answer the one-token request.
const MODEL_PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs every check and prints the report: exit 0 when nothing failed, 1 when a check
/// failed, 2 when the configuration cannot be loaded at all.
pub(super) async fn run(args: &DoctorArgs, ctx: CommandContext<'_>) -> Exit {
    let CommandContext {
        model,
        paths,
        cwd,
        env,
        trust,
    } = ctx;
    let mut checks = Vec::new();
    trust_checks(paths, cwd, env, trust, &mut checks);
    let exit = match ctx.setup() {
        Err(err) => {
            checks.push(Check::new(
                "config.yaml",
                CheckStatus::Fail,
                err.to_string(),
            ));
            Exit::Config
        }
        Ok(mut setup) => {
            config_checks(&setup, &mut checks);
            skills_check(&setup, &mut checks);
            hooks_check(&setup, &mut checks);
            sandbox_check(&setup, &mut checks);
            match setup.mcp(env).await {
                Err(err) => {
                    checks.push(Check::new(
                        "extensions_config.json",
                        CheckStatus::Fail,
                        err.to_string(),
                    ));
                    Exit::Config
                }
                Ok(mcp) => {
                    server_checks(&mcp, &mut checks).await;
                    deferred_check(&setup, &mcp, model, &mut checks).await;
                    semantic_check(&setup, &mut checks);
                    multilingual_check(&setup, &mut checks);
                    dictionary_check(&setup, &mut checks);
                    mcp.shutdown(crate::mcp::McpManager::EXIT_GRACE).await;
                    model_check(&setup, model, args.offline, env, &mut checks).await;
                    store_check(env, &mut checks);
                    if checks.iter().any(|c| c.status == CheckStatus::Fail) {
                        Exit::Failure
                    } else {
                        Exit::Success
                    }
                }
            }
        }
    };
    let text = if args.json {
        to_json(&serde_json::json!({
            "ok": exit == Exit::Success,
            "checks": checks,
        }))
    } else {
        doctor_table(&checks)
    };
    write_stdout(&text).map_or_else(super::error::CliError::report, |()| exit)
}

/// Each project file: trusted, or not used (a failed check: the setup runs without it).
fn trust_checks(
    paths: &ConfigPaths,
    cwd: &Path,
    env: EnvLookup<'_>,
    trust: &ProjectTrust,
    checks: &mut Vec<Check>,
) {
    let Ok(files) = project_files(paths, cwd, env) else {
        // The same error is reported by the config checks.
        return;
    };
    for file in files {
        let name = format!("trust: {}", file.path.display());
        let state = trust.state(&file);
        checks.push(if state.is_trusted() {
            Check::new(name, CheckStatus::Ok, "trusted")
        } else {
            Check::new(
                name,
                // A run does without an untrusted skill; it fails without a config file.
                if file.kind == crate::trust::ProjectFileKind::Skill {
                    CheckStatus::Warn
                } else {
                    CheckStatus::Fail
                },
                format!(
                    "{}; not used (it {}). Run `antler trust` to review and trust it, or pass \
                     --trust-project",
                    state.describe(),
                    file.kind.power()
                ),
            )
        });
    }
}

/// The configured hooks, one line each: the event, the matcher, the command, its file.
fn hooks_check(setup: &Setup, checks: &mut Vec<Check>) {
    for hook in setup.hooks().all() {
        let matcher = hook.matcher.as_deref().map_or_else(String::new, |m| {
            format!(" for `{}`", crate::base::text::printable(m))
        });
        checks.push(Check::new(
            "hook",
            CheckStatus::Ok,
            format!(
                "{}{matcher}: `{}` (timeout {} s, from {})",
                hook.event.name(),
                crate::base::text::printable(&hook.command),
                hook.timeout.as_secs(),
                hook.origin.display()
            ),
        ));
    }
}

/// The skills: how many are usable and what the listing costs; each skipped one a warning.
fn skills_check(setup: &Setup, checks: &mut Vec<Check>) {
    let skills = setup.skills();
    if skills.skills.is_empty() && skills.errors.is_empty() {
        return;
    }
    let usable = skills.usable().count();
    checks.push(Check::new(
        "skills",
        CheckStatus::Ok,
        format!(
            "{usable} usable of {} found (`antler skills list` shows each)",
            skills.skills.len()
        ),
    ));
    for error in &skills.errors {
        checks.push(Check::new("skill", CheckStatus::Warn, error.to_string()));
    }
}

fn config_checks(setup: &Setup, checks: &mut Vec<Check>) {
    let app = &setup.app;
    let (status, mut detail) = match &app.path {
        Some(path) => (CheckStatus::Ok, path.display().to_string()),
        None => (
            CheckStatus::Ok,
            String::from("none found; using defaults (see config.example.yaml)"),
        ),
    };
    detail.push_str(&format!(
        " ({} models, {} configured tools)",
        app.value.models.len(),
        app.value.tools.len()
    ));
    if app.warnings.is_empty() {
        checks.push(Check::new("config.yaml", status, detail));
    } else {
        detail.push_str(&format!("; {}", app.warnings.join("; ")));
        checks.push(Check::new("config.yaml", CheckStatus::Warn, detail));
    }
}

/// With `sandbox.mode: landlock`, whether this kernel can enforce it (the tools refuse to
/// build when it cannot).
fn sandbox_check(setup: &Setup, checks: &mut Vec<Check>) {
    if setup.app.value.sandbox.mode != SandboxMode::Landlock {
        return;
    }
    checks.push(match landlock_status() {
        status @ LandlockStatus::Available { .. } => {
            Check::new("sandbox", CheckStatus::Ok, format!("landlock {status}"))
        }
        status => Check::new(
            "sandbox",
            CheckStatus::Fail,
            format!("sandbox.mode is `landlock` but Landlock is {status}"),
        ),
    });
}

/// One check per server. Idle servers are started once to list their tools (and their
/// manifests refreshed), then stopped again: the doctor's answer is about the servers as
/// they are, not about what they said last time.
async fn server_checks(mcp: &McpManager, checks: &mut Vec<Check>) {
    let idle: Vec<String> = mcp
        .statuses()
        .await
        .into_iter()
        .filter(|s| s.status == ServerState::Idle)
        .map(|s| s.name)
        .collect();
    let refreshed = if idle.is_empty() {
        Vec::new()
    } else {
        mcp.refresh_manifests(&idle).await
    };
    let statuses = mcp.statuses().await;
    if statuses.is_empty() {
        checks.push(Check::new(
            "mcp",
            CheckStatus::Ok,
            "no MCP servers configured",
        ));
    }
    for s in statuses {
        let name = format!("mcp: {}", s.name);
        let refresh_error = refreshed
            .iter()
            .find(|(server, _)| *server == s.name)
            .and_then(|(_, error)| error.clone());
        let check = match (s.status, s.error, refresh_error) {
            (ServerState::Idle, _, Some(error)) => Check::new(name, CheckStatus::Fail, error),
            (ServerState::Idle, _, None) => Check::new(
                name,
                CheckStatus::Ok,
                format!(
                    "{} · {} tools · idle (starts on first use; its manifest was just \
                     refreshed)",
                    s.transport, s.tool_count
                ),
            ),
            (ServerState::Connected, _, _) => Check::new(
                name,
                CheckStatus::Ok,
                format!(
                    "{} · {} tools · {} ms",
                    s.transport,
                    s.tool_count,
                    s.startup_ms.unwrap_or(0)
                ),
            ),
            (ServerState::Disabled, _, _) => {
                Check::new(name, CheckStatus::Warn, "disabled in the config")
            }
            (ServerState::Failed, error, _) => Check::new(
                name,
                CheckStatus::Fail,
                error.unwrap_or_else(|| String::from("not connected")),
            ),
        };
        checks.push(check);
    }
}

async fn deferred_check(
    setup: &Setup,
    mcp: &McpManager,
    model: Option<&str>,
    checks: &mut Vec<Check>,
) {
    let toolset = match setup.builtins(model, None, &Default::default()) {
        Ok(builtins) => {
            setup
                .toolset(mcp, None, builtins.tools, &Default::default())
                .await
        }
        Err(err) => Err(err),
    };
    let deferred = toolset.and_then(|toolset| setup.deferred(&toolset, model, &mcp.configs()));
    checks.push(match deferred {
        Ok(deferred) => {
            let mut detail = deferred.reason.clone();
            if let Some(catalog) = &deferred.catalog {
                detail.push_str(&format!(
                    " · catalog {} · {} bound · listed by {} · {} binding",
                    catalog.hash(),
                    deferred.bound.len(),
                    deferred.listed.map_or("names", |l| l.as_str()),
                    deferred.binding.as_str()
                ));
            }
            Check::new("tool search", CheckStatus::Ok, detail)
        }
        Err(err) => Check::new("tool search", CheckStatus::Fail, err.to_string()),
    });
}

/// Whether tool search ranks with the sentence encoder. Its absence is a warning, not a
/// failure: search works without it, less well.
fn semantic_check(setup: &Setup, checks: &mut Vec<Check>) {
    const NAME: &str = "sentence encoder";
    let Some(model) = setup.semantic_model() else {
        checks.push(Check::new(
            NAME,
            CheckStatus::Skip,
            "off (tool_search.semantic.enabled: false): tool search uses its built-in ranking",
        ));
        return;
    };
    checks.push(match loaded(model) {
        Ok(described) => Check::new(NAME, CheckStatus::Ok, described),
        Err(err) => Check::new(
            NAME,
            CheckStatus::Warn,
            format!(
                "not used, tool search uses {}: {err}; `antler models fetch` installs it",
                if setup.multilingual_model().is_some_and(|m| m.may_load()) {
                    "the multilingual encoder alone"
                } else {
                    "its built-in ranking"
                }
            ),
        ),
    });
}

/// Loads an encoder's model and describes it: where it is, its dimensions, how long the
/// load took; why it does not load otherwise.
fn loaded(model: &SemanticModel) -> Result<String, String> {
    let location = model.location();
    let started = std::time::Instant::now();
    let encoder = model.encoder()?;
    Ok(format!(
        "{} (from {}), {} dimensions{}, loaded in {} ms",
        location.dir.display(),
        location.source,
        encoder.dims(),
        if encoder.multilingual() {
            ", multilingual"
        } else {
            ""
        },
        started.elapsed().as_millis()
    ))
}

/// The multilingual encoder, reported only when installed (it is optional): it ranks beside
/// the sentence encoder, and alone for queries in CJK characters.
fn multilingual_check(setup: &Setup, checks: &mut Vec<Check>) {
    const NAME: &str = "multilingual encoder";
    let Some(model) = setup.multilingual_model().filter(|m| m.may_load()) else {
        return;
    };
    checks.push(match loaded(model) {
        Ok(described) => Check::new(
            NAME,
            CheckStatus::Ok,
            format!(
                "{described}; {}",
                if setup.semantic_model().is_some_and(|m| m.may_load()) {
                    "ranks beside the sentence encoder, and alone for queries in CJK characters"
                } else {
                    "ranks alone (the sentence encoder is not installed)"
                }
            ),
        ),
        Err(err) => Check::new(NAME, CheckStatus::Warn, format!("not used: {err}")),
    });
}

/// The dictionary glossing Chinese queries, reported only when installed (it is optional).
fn dictionary_check(setup: &Setup, checks: &mut Vec<Check>) {
    const NAME: &str = "dictionary";
    let Some(glossary) = setup.dictionary().filter(|g| g.may_load()) else {
        return;
    };
    let started = std::time::Instant::now();
    checks.push(match glossary.dictionary() {
        Ok(dictionary) => Check::new(
            NAME,
            CheckStatus::Ok,
            format!(
                "CC-CEDICT in {}, {} headwords, read in {} ms; a query with Chinese words is \
                 also ranked as its English gloss",
                glossary.dir().display(),
                dictionary.headwords(),
                started.elapsed().as_millis()
            ),
        ),
        Err(err) => Check::new(NAME, CheckStatus::Warn, format!("not used: {err}")),
    });
}

async fn model_check(
    setup: &Setup,
    model: Option<&str>,
    offline: bool,
    env: EnvLookup<'_>,
    checks: &mut Vec<Check>,
) {
    let chosen = model_provider(&setup.app.value.models, model, env);
    let in_use = match &chosen {
        Ok(chosen) => chosen.embedded,
        Err(err) => matches!(err, ModelSetupError::EmbeddedMissing { .. }),
    };
    embedded_check(env, in_use, offline, checks).await;
    if let Err(err @ ModelSetupError::EmbeddedMissing { .. }) = &chosen {
        checks.push(Check::new("model", CheckStatus::Fail, err.to_string()));
    }
    if in_use {
        return;
    }
    let provider = match openai_provider(&setup.app.value.models, model, env) {
        Ok(provider) => provider,
        Err(err) => {
            checks.push(Check::new("model", CheckStatus::Fail, err.to_string()));
            return;
        }
    };
    let name = format!("model: {}", provider.model());
    let format = provider.tool_call_format().as_str();
    if offline {
        checks.push(Check::new(
            name,
            CheckStatus::Skip,
            format!(
                "{} · tool calls: {format} (not contacted: --offline)",
                provider.endpoint()
            ),
        ));
        return;
    }
    let request = ModelRequest {
        system: String::from("Reply with OK."),
        messages: vec![Message::User {
            content: String::from("ping"),
        }],
        tools: Vec::new(),
        max_tokens: Some(1),
        callable: Default::default(),
    };
    let started = Instant::now();
    let outcome =
        tokio::time::timeout(MODEL_PROBE_TIMEOUT, provider.complete(&request, &|_| {})).await;
    checks.push(match outcome {
        Ok(Ok(_)) => Check::new(
            name,
            CheckStatus::Ok,
            format!(
                "{} answered in {} ms · tool calls: {format}",
                provider.endpoint(),
                started.elapsed().as_millis()
            ),
        ),
        Ok(Err(err)) => Check::new(name, CheckStatus::Fail, err.to_string()),
        Err(_) => Check::new(
            name,
            CheckStatus::Fail,
            format!(
                "{}: no answer within {} s",
                provider.endpoint(),
                MODEL_PROBE_TIMEOUT.as_secs()
            ),
        ),
    });
}

/// The embedded model: installed or not, its size, and (when it is the model in use and
/// not `--offline`) how fast it runs a short probe.
async fn embedded_check(env: EnvLookup<'_>, in_use: bool, offline: bool, checks: &mut Vec<Check>) {
    use crate::provider::embedded::{EmbeddedProvider, catalog};
    const NAME: &str = "embedded model";
    let found = crate::config::dirs::models_dir(env).and_then(|dir| catalog::installed(&dir));
    let Some((model, path)) = found else {
        checks.push(Check::new(
            NAME,
            CheckStatus::Skip,
            format!(
                "not installed: `antler models fetch chat` ({}) to run a model on this machine \
                 with no key and no server",
                catalog::CHAT.size_text()
            ),
        ));
        return;
    };
    let installed = format!(
        "{} in {} ({})",
        model.title,
        path.display(),
        model.size_text()
    );
    if !in_use || offline {
        let why = if in_use {
            "not probed: --offline"
        } else {
            "not the model in use"
        };
        checks.push(Check::new(
            NAME,
            CheckStatus::Ok,
            format!("{installed} · {why}"),
        ));
        return;
    }
    let provider = EmbeddedProvider::new(model, path);
    // The first call also repacks the weights for the CPU's kernels: it loads and warms
    // up, and a second, longer prompt measures.
    let ask = |system: String, max_tokens| ModelRequest {
        system,
        messages: vec![Message::User {
            content: String::from("Say hello."),
        }],
        tools: Vec::new(),
        max_tokens: Some(max_tokens),
        callable: Default::default(),
    };
    let warm_up = ask(String::from("Reply with one word."), 2);
    let request = ask(
        "You are a terse assistant in a terminal. Answer in one short sentence. ".repeat(12),
        16,
    );
    let probed = tokio::task::spawn_blocking(move || {
        let (loaded, _) = provider.probe(&warm_up)?;
        provider
            .probe(&request)
            .map(|(_, generation)| (loaded, generation))
    })
    .await;
    checks.push(match probed {
        Ok(Ok((loaded, generation))) => Check::new(
            NAME,
            CheckStatus::Ok,
            format!(
                "{installed} · loaded in {} ms · prompt {:.0} tokens/s · {:.1} generated \
                 tokens/s",
                loaded.map_or(0, |d| d.as_millis()),
                generation.prompt_rate(),
                generation.output_rate()
            ),
        ),
        Ok(Err(err)) => Check::new(NAME, CheckStatus::Fail, format!("{installed}: {err}")),
        Err(err) => Check::new(NAME, CheckStatus::Fail, format!("{installed}: {err}")),
    });
}

fn store_check(env: EnvLookup<'_>, checks: &mut Vec<Check>) {
    let opened = default_path(env).and_then(|path| ThreadStore::open(&path).map(|_| path));
    checks.push(match opened {
        Ok(path) => Check::new("threads", CheckStatus::Ok, path.display().to_string()),
        Err(err) => Check::new("threads", CheckStatus::Fail, err.to_string()),
    });
}

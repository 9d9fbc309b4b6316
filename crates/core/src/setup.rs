//! From configuration files to a toolset: the one path every front-end takes.

mod encoders;

use encoders::Encoders;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::layers::redact::Redact;
use crate::agent::subagent::{SubagentSlot, Task};
use crate::config::{
    AppConfig, ConfigError, ConfigPaths, EnvLookup, Found, Loaded, McpServerConfig, ModelConfig,
    Origin, Segment, app_config_candidates, extensions_candidates, locate, parse_app_config_with,
};
use crate::deferred::{
    DEFAULT_CONTEXT_WINDOW, DeferInputs, DeferredError, DeferredSetup, setup_deferred_for,
};
use crate::hooks::Hooks;
use crate::mcp::manifest::ManifestStore;
use crate::mcp::{ExtensionsError, McpCache, McpManager, StartSettings};
use crate::skills::{SkillRoots, SkillSet, Skills};
use crate::tools::builtin::{self, Clarifications};
use crate::tools::sandbox::{Protected, SkillReads, ThreadOutputs, Workspace};
use crate::tools::{
    ConfiguredToolError, Tool, Toolset, assemble_toolset, build_configured_tools,
    unknown_tool_settings,
};
use crate::trust::{ProjectFile, ProjectFileKind, ProjectTrust, UntrustedError};
use antler_search::semantic::SemanticModel;
use antler_search::{EmbedMode, SemanticSearch};

/// A setup problem that stops antler before it runs: exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A configuration file is missing, unreadable or invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A project file the user has not trusted.
    #[error(transparent)]
    Untrusted(#[from] UntrustedError),
    /// A catalog file cannot be used.
    #[error(transparent)]
    CatalogFile(#[from] crate::deferred::catalog_file::CatalogFileError),
    /// Deferral is on but cannot be set up safely.
    #[error(transparent)]
    Deferred(#[from] DeferredError),
    /// Tokens cannot be counted.
    #[error(transparent)]
    Tokenizer(#[from] crate::deferred::TokenizerError),
    /// The workspace of the built-in tools cannot be opened.
    #[error("the workspace cannot be opened: {0}")]
    Workspace(std::io::Error),
    /// A hook cannot be used.
    #[error(transparent)]
    Hooks(#[from] crate::hooks::HookConfigError),
    /// A configured tool cannot be built.
    #[error("{path}: {source}", path = path.as_ref().map_or(String::from("config.yaml"), |p| p.display().to_string()))]
    Tool {
        /// The config.yaml in use.
        path: Option<PathBuf>,
        /// What is wrong with the tool.
        source: ConfiguredToolError,
    },
}

/// The built-in tools of a run, with the handles their front-end needs.
pub struct Builtins {
    /// The tools, in order.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Where the `task` tool finds its subagents' environment, when it is offered: set
    /// once the agent is assembled.
    pub subagents: Option<SubagentSlot>,
}

/// Both configurations, found and loaded, ready to build toolsets from.
pub struct Setup {
    /// The loaded `config.yaml` (defaults when there is none).
    pub app: Loaded<AppConfig>,
    /// Where the project's files are looked for, and what `sandbox.workspace` is relative to.
    pub cwd: PathBuf,
    /// antler's own folders, kept out of the tools' reach.
    protected: Protected,
    /// Secret values of the environment (the fallback API key, secret-named variables).
    env_secrets: Vec<String>,
    mcp: McpCache,
    /// The sentence encoders for tool search (loaded at the first ranked search), unless
    /// `tool_search.semantic.enabled` is off.
    semantic: Option<Encoders>,
    /// The skills found at start (frontmatter only).
    skills: Skills,
    /// The loaded skills' folders the file tools may read, switched with the thread.
    skill_reads: SkillReads,
    hooks: Arc<Hooks>,
}

impl Setup {
    /// Finds and loads `config.yaml` and locates the extensions file (its servers start on
    /// the first [`Setup::mcp`]). A project file is used only if `trust` admits its exact
    /// content. Warnings are logged.
    pub fn load(
        paths: &ConfigPaths,
        cwd: &Path,
        env: EnvLookup<'_>,
        trust: &Arc<ProjectTrust>,
    ) -> Result<Self, SetupError> {
        let mut app = load_app(paths, cwd, env, trust)?;
        let extensions = first_admitted(
            extensions_candidates(paths.extensions.as_deref(), cwd, env)?,
            ProjectFileKind::Extensions,
            trust,
        )?;
        let skills = Arc::new(find_skills(&app, extensions.as_ref(), cwd, env, trust));
        let extensions = extensions.map(|(found, _)| found);
        let in_use = app
            .path
            .iter()
            .chain(extensions.as_ref().map(|found| &found.path));
        let mut protected = antlers_own(env, cwd, in_use.cloned().collect());
        let skill_reads = SkillReads::default();
        protected.skill_reads = skill_reads.clone();
        protected.skill_folders = skills.folders();
        let start_settings = StartSettings {
            manifests: ManifestStore::in_data_dir(env),
            cwd: cwd.to_path_buf(),
            max_age: std::time::Duration::from_secs(app.value.mcp.manifest_max_age_secs),
            accept_stale: false,
            progress: None,
            elicitations: crate::mcp::elicitation::Answerer::default(),
            tokens: crate::mcp::oauth::TokenStore::in_data_dir(env),
        };
        let hooks = Arc::new(find_hooks(&mut app, cwd, env, trust)?);
        let semantic = Encoders::find(&app, cwd, env);
        if let Some(warning) = shell_reaches_private(&app.value.sandbox, cwd, &protected) {
            tracing::warn!("{warning}");
            app.warnings.push(warning);
        }
        Ok(Self {
            app,
            cwd: cwd.to_path_buf(),
            protected,
            env_secrets: environment_secrets(env),
            mcp: McpCache::new(extensions, trust.clone(), start_settings),
            semantic,
            skills,
            skill_reads,
            hooks,
        })
    }

    /// The hooks: config.yaml's, and with `hooks.import_claude` Claude Code's.
    pub fn hooks(&self) -> &Arc<Hooks> {
        &self.hooks
    }

    /// The skills found at start.
    pub fn skills(&self) -> &Skills {
        &self.skills
    }

    /// The token budget of the skills' listing for `model`: `skills.listing_budget_tokens`,
    /// else the default share of its context window.
    pub fn skills_budget(&self, model: Option<&str>) -> usize {
        let window = self.context_window(model).unwrap_or(DEFAULT_CONTEXT_WINDOW);
        self.app
            .value
            .skills
            .listing_budget_tokens
            .unwrap_or_else(|| crate::skills::listing::default_budget(window))
    }

    /// The folders of the loaded skills the file tools may read.
    pub fn skill_reads(&self) -> &SkillReads {
        &self.skill_reads
    }

    /// The extensions file's server entries, nothing started.
    pub fn server_configs(
        &self,
        env: EnvLookup<'_>,
    ) -> Result<Vec<crate::config::McpServerConfig>, crate::mcp::ExtensionsError> {
        self.mcp.server_configs(env)
    }

    /// Where OAuth tokens are kept (none without a data folder).
    pub fn tokens(&self) -> Option<&crate::mcp::oauth::TokenStore> {
        self.mcp.settings.tokens.as_ref()
    }

    /// Where servers' manifests are kept (none without a data folder).
    pub fn manifests(&self) -> Option<&ManifestStore> {
        self.mcp.settings.manifests.as_ref()
    }

    /// The workspace as the file tools see it, for attaching files to a message (the
    /// same boundary, secret files and antler's own folders).
    pub fn workspace(&self, thread_outputs: &ThreadOutputs) -> Result<Workspace, SetupError> {
        Ok(Workspace::from_config(&self.app.value.sandbox, &self.cwd)
            .map_err(SetupError::Workspace)?
            .with_protected(&self.protected(thread_outputs)))
    }

    /// How the MCP servers' requests for input are answered where nobody can answer them
    /// (`-p --elicitation`; declined unless said otherwise). Before the first
    /// [`Setup::mcp`].
    pub fn answer_elicitations_unattended(&mut self, policy: crate::mcp::elicitation::Unattended) {
        self.mcp.settings.elicitations = crate::mcp::elicitation::Answerer::Unattended(policy);
    }

    /// Lets a front-end answer the MCP servers' requests for input (elicitation), through
    /// the broker returned; without it they are declined. Before the first
    /// [`Setup::mcp`].
    pub fn answer_elicitations(&mut self) -> crate::mcp::elicitation::Elicitations {
        let broker = crate::mcp::elicitation::Elicitations::default();
        self.mcp.settings.elicitations = crate::mcp::elicitation::Answerer::Front(broker.clone());
        broker
    }

    /// Lets servers stay idle on a manifest that is too old (the chat refreshes such
    /// manifests in the background once its screen is up). Before the first
    /// [`Setup::mcp`].
    pub fn accept_stale_manifests(&mut self) {
        self.mcp.settings.accept_stale = true;
    }

    /// Sends each server's status to `progress` as it becomes ready at start-up.
    pub fn report_server_progress(
        &mut self,
        progress: tokio::sync::mpsc::UnboundedSender<crate::protocol::ServerStatus>,
    ) {
        self.mcp.settings.progress = Some(progress);
    }

    /// The MCP servers of the extensions file as it is now (restarted if it changed).
    pub async fn mcp(&mut self, env: EnvLookup<'_>) -> Result<Arc<McpManager>, SetupError> {
        self.mcp.get(env).await.map_err(|err| match err {
            ExtensionsError::Config(err) => SetupError::Config(err),
            ExtensionsError::Untrusted(err) => SetupError::Untrusted(err),
        })
    }

    /// Every secret value antler loaded (config.yaml, `mcp`'s servers, the environment's
    /// API key), to be kept out of tool results.
    pub fn redact(&self, mcp: &McpManager) -> Redact {
        let tokens = self
            .mcp
            .settings
            .tokens
            .as_ref()
            .map(|t| t.secrets())
            .unwrap_or_default();
        Redact::new(
            self.app
                .secrets
                .iter()
                .chain(&self.env_secrets)
                .chain(mcp.secrets())
                .cloned()
                .chain(tokens),
        )
    }

    /// What the tools keep out of, with `thread_outputs` (the running thread's saved
    /// outputs, switchable) readable.
    pub fn protected(&self, thread_outputs: &ThreadOutputs) -> Protected {
        Protected {
            thread_outputs: thread_outputs.clone(),
            ..self.protected.clone()
        }
    }

    /// The built-in tools whose condition holds: `present_files` always; `view_image` when
    /// `model` supports vision; `task` when `subagents.enabled` (and its limits allow one);
    /// `ask_clarification` only when a front-end answers through `clarifications`.
    pub fn builtins(
        &self,
        model: Option<&str>,
        clarifications: Option<&Clarifications>,
        thread_outputs: &ThreadOutputs,
    ) -> Result<Builtins, SetupError> {
        let app = &self.app.value;
        let workspace = Workspace::from_config(&app.sandbox, &self.cwd)
            .map_err(SetupError::Workspace)?
            .with_protected(&self.protected(thread_outputs));
        let mut tools: Vec<Arc<dyn Tool>> =
            vec![Arc::new(builtin::PresentFiles::new(workspace.clone()))];
        if self.model_config(model).is_some_and(|m| m.supports_vision) {
            tools.push(Arc::new(builtin::ViewImage::new(workspace)));
        }
        let subagents = (app.subagents.enabled
            && app.subagents.max_total_per_run > 0
            && app.subagents.max_concurrent > 0)
            .then(SubagentSlot::default);
        if let Some(env) = &subagents {
            tools.push(Arc::new(Task::new(&app.subagents, env.clone())));
        }
        if let Some(clarifications) = clarifications {
            tools.push(Arc::new(builtin::AskClarification::new(
                clarifications.clone(),
            )));
        }
        Ok(Builtins { tools, subagents })
    }

    /// The configured tools (only those in `groups`, if given), sharing one sandbox; their
    /// file tools may read `thread_outputs`. Warnings are logged.
    pub fn configured_tools(
        &self,
        groups: Option<&[String]>,
        thread_outputs: &ThreadOutputs,
    ) -> Result<Vec<Arc<dyn Tool>>, SetupError> {
        let protected = self.protected(thread_outputs);
        let configured = build_configured_tools(&self.app.value, &self.cwd, &protected, groups)
            .map_err(|source| SetupError::Tool {
                path: self.app.path.clone(),
                source,
            })?;
        for warning in &configured.warnings {
            tracing::warn!("{warning}");
        }
        Ok(configured.tools)
    }

    /// Assembles the three tiers: configured tools (only those in `groups`, if given),
    /// `builtins`, then the MCP tools of `mcp`. Duplicate names are logged and dropped.
    pub async fn toolset(
        &self,
        mcp: &McpManager,
        groups: Option<&[String]>,
        builtins: Vec<Arc<dyn Tool>>,
        thread_outputs: &ThreadOutputs,
    ) -> Result<Toolset, SetupError> {
        let configured = self.configured_tools(groups, thread_outputs)?;
        Ok(assemble_tiers(configured, builtins, mcp.tools().await))
    }

    /// The configured model called `requested`, or the first one when none is requested.
    /// A requested id that is not configured (a raw model id) has no entry.
    pub fn model_config(&self, requested: Option<&str>) -> Option<&ModelConfig> {
        let models = &self.app.value.models;
        match requested {
            Some(name) => models.iter().find(|m| m.name == name),
            None => models.first(),
        }
    }

    /// The context window of the model in use, when configured.
    pub fn context_window(&self, model: Option<&str>) -> Option<u32> {
        use crate::provider::embedded::{EMBEDDED, engine::CONTEXT_WINDOW};
        match self.model_config(model) {
            Some(config) => config.context_window,
            // The embedded model runs in a window antler sets.
            None if model == Some(EMBEDDED) => u32::try_from(CONTEXT_WINDOW).ok(),
            None => None,
        }
    }

    /// Decides what of `toolset` is deferred, with the configured `tool_search`, the
    /// context window of `model` (see [`Setup::model_config`]) and the `defer` setting of
    /// each of `servers` (whose `description` the `servers` listing shows).
    pub fn deferred(
        &self,
        toolset: &Toolset,
        model: Option<&str>,
        servers: &[McpServerConfig],
    ) -> Result<DeferredSetup, SetupError> {
        let inputs = DeferInputs {
            context_window: self.context_window(model),
            servers,
            semantic: self.semantic_search(EmbedMode::Background),
        };
        let mut deferred = setup_deferred_for(toolset, &self.app.value.tool_search, inputs)?;
        let budget = self.skills_budget(model);
        crate::skills::bind(&mut deferred, &self.skills, &self.skill_reads, budget);
        Ok(deferred)
    }

    /// The sentence encoders of tool search, used the way `mode` says; `None` when they
    /// are turned off.
    pub fn semantic_search(&self, mode: EmbedMode) -> Option<SemanticSearch> {
        self.semantic.as_ref().map(|found| SemanticSearch {
            model: Arc::clone(&found.english),
            multilingual: found.multilingual.clone(),
            dictionary: found.dictionary.clone(),
            mode,
        })
    }

    /// The dictionary glossing Chinese queries (not read), unless the encoders are turned
    /// off.
    pub fn dictionary(&self) -> Option<&Arc<antler_search::gloss::Glossary>> {
        self.semantic.as_ref()?.dictionary.as_ref()
    }

    /// The sentence encoder's model (not loaded), unless it is turned off.
    pub fn semantic_model(&self) -> Option<&Arc<SemanticModel>> {
        self.semantic.as_ref().map(|found| &found.english)
    }

    /// The multilingual encoder's model (not loaded) when one is installed beside the
    /// English one, unless they are turned off.
    pub fn multilingual_model(&self) -> Option<&Arc<SemanticModel>> {
        self.semantic.as_ref()?.multilingual.as_ref()
    }
}

/// The skills of the project (trusted ones usable), the user's config folder and
/// `skills.paths`, with the names config.yaml's `skills.disabled` and the extensions
/// file's `skills` map turn off.
fn find_skills(
    app: &Loaded<AppConfig>,
    extensions: Option<&(Found, Option<ProjectFile>)>,
    cwd: &Path,
    env: EnvLookup<'_>,
    trust: &ProjectTrust,
) -> SkillSet {
    let config = &app.value.skills;
    let base = app
        .path
        .as_deref()
        .and_then(Path::parent)
        .map_or_else(|| cwd.to_path_buf(), |dir| cwd.join(dir));
    let mut paths: Vec<PathBuf> = config.paths.iter().map(|p| base.join(p)).collect();
    if let Some(deerflow) = &config.path {
        paths.extend(["public", "custom"].map(|sub| base.join(deerflow).join(sub)));
    }
    let roots = SkillRoots {
        project: crate::skills::project_roots(cwd),
        user: crate::config::dirs::config_dir(env).map(|dir| dir.join("skills")),
        paths,
    };
    // Read at the first skill asked about: a start without skills reads nothing more.
    let read_once = std::cell::OnceCell::new();
    let off_in_extensions = || {
        read_once.get_or_init(|| {
            extensions
                .and_then(|(found, file)| match file {
                    Some(file) => Some(file.text()),
                    None => crate::base::bounded_read::read_to_string(
                        &found.path,
                        crate::base::bounded_read::CONFIG_BYTES,
                        "a config file",
                    )
                    .ok(),
                })
                .map(|text| crate::config::disabled_skills(&text))
                .unwrap_or_default()
        })
    };
    let extensions_path = extensions.map(|(found, _)| found.path.display().to_string());
    let disabled = |name: &str| {
        if config.disabled.iter().any(|n| n == name) {
            return Some(String::from("skills.disabled in config.yaml"));
        }
        off_in_extensions().iter().any(|n| n == name).then(|| {
            format!(
                "`enabled: false` in {}",
                extensions_path
                    .as_deref()
                    .unwrap_or("extensions_config.json")
            )
        })
    };
    let trusted = |skill: &crate::skills::discover::ProjectSkill| {
        let file = ProjectFile::skill(skill).map_err(|e| e.to_string())?;
        let state = trust.state(&file);
        if state.is_trusted() {
            Ok(())
        } else {
            Err(state.describe())
        }
    };
    crate::skills::discover(&roots, &disabled, &trusted)
}

/// The hooks of config.yaml, and with `hooks.import_claude` those of the user's
/// `~/.claude/settings.json` and the project's trusted Claude Code settings (an untrusted
/// one is left out with a warning; `antler trust` shows its commands).
fn find_hooks(
    app: &mut Loaded<AppConfig>,
    cwd: &Path,
    env: EnvLookup<'_>,
    trust: &ProjectTrust,
) -> Result<Hooks, SetupError> {
    let mut hooks = Hooks::new(cwd);
    let origin = app
        .path
        .clone()
        .unwrap_or_else(|| PathBuf::from("config.yaml"));
    hooks.add(&app.value.hooks, &origin, false)?;
    if !app.value.hooks.import_claude {
        return Ok(hooks);
    }
    let home = env("HOME").map(PathBuf::from);
    let user = crate::hooks::claude::user_settings(home.as_deref()).filter(|p| p.is_file());
    let mut texts = Vec::new();
    if let Some(path) = user {
        let text = crate::base::bounded_read::read_to_string(
            &path,
            crate::base::bounded_read::CONFIG_BYTES,
            "a settings file",
        )
        .map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        texts.push((path, text));
    }
    for file in crate::trust::project_claude_settings(cwd) {
        let state = trust.state(&file);
        if state.is_trusted() {
            texts.push((file.path.clone(), file.text()));
        } else {
            let warning = format!(
                "{}: its hooks are not run: antler has not been told to trust it ({}); \
                 `antler trust` shows its commands and trusts it",
                file.path.display(),
                state.describe()
            );
            tracing::warn!("{warning}");
            app.warnings.push(warning);
        }
    }
    for (path, text) in texts {
        let (config, warnings) = crate::hooks::claude::parse(&text).map_err(|message| {
            crate::hooks::HookConfigError {
                file: path.display().to_string(),
                key: String::from("hooks"),
                message,
            }
        })?;
        for warning in warnings {
            let warning = format!("{}: {warning}", path.display());
            tracing::warn!("{warning}");
            app.warnings.push(warning);
        }
        hooks.add(&config, &path, true)?;
    }
    Ok(hooks)
}

/// The first candidate that may be used: a project file only if `trust` admits it (read
/// once; its content is returned so that exactly what was checked is what gets used).
fn first_admitted(
    candidates: Vec<Found>,
    kind: ProjectFileKind,
    trust: &ProjectTrust,
) -> Result<Option<(Found, Option<ProjectFile>)>, SetupError> {
    // Only the first project file is the project's (the one `antler trust` shows): once it
    // is left out, a later project candidate is not used in its place.
    let mut project_seen = false;
    for found in candidates {
        if found.origin != Origin::Project {
            return Ok(Some((found, None)));
        }
        if std::mem::replace(&mut project_seen, true) {
            continue;
        }
        let file = ProjectFile::read(kind, &found.path).map_err(|source| ConfigError::Read {
            path: found.path.clone(),
            source,
        })?;
        // A file left out is logged by `admit`.
        if trust.admit(&file)? {
            return Ok(Some((found, Some(file))));
        }
    }
    Ok(None)
}

/// `config.yaml` from the first usable candidate (defaults when there is none), with its
/// warnings logged, those of the configured tools' settings included.
fn load_app(
    paths: &ConfigPaths,
    cwd: &Path,
    env: EnvLookup<'_>,
    trust: &ProjectTrust,
) -> Result<Loaded<AppConfig>, SetupError> {
    let candidates = app_config_candidates(paths.config.as_deref(), cwd, env)?;
    let Some((found, file)) = first_admitted(candidates, ProjectFileKind::AppConfig, trust)? else {
        if paths.overrides.is_empty() {
            return Ok(Loaded::default());
        }
        let mut app = parse_app_config_with("", Path::new("--set"), env, &paths.overrides)?;
        app.path = None;
        return Ok(app);
    };
    let text = match file {
        Some(file) => file.text(),
        None => crate::config::read_config_file(&found.path)?,
    };
    let app = parse_app_config_with(&text, &found.path, env, &paths.overrides)?;
    for warning in &app.warnings {
        tracing::warn!("{warning}");
    }
    for unknown in unknown_tool_settings(&app.value) {
        let key = [
            Segment::Key(String::from("tools")),
            Segment::Index(unknown.index),
            Segment::Key(unknown.key.clone()),
        ];
        let at =
            locate(&text, &key).map_or_else(String::new, |p| format!(":{}:{}", p.line, p.column));
        tracing::warn!(
            "{}{at}: tools[{}].{}: `{}` has no such setting; it is ignored (its settings: {})",
            found.path.display(),
            unknown.index,
            unknown.key,
            unknown.use_id,
            if unknown.settings.is_empty() {
                String::from("none")
            } else {
                unknown.settings.join(", ")
            }
        );
    }
    Ok(app)
}

/// antler's own places: its data, config, state and cache folders and the log file (private),
/// and `config_files`, the configuration files in use (never written).
fn antlers_own(env: EnvLookup<'_>, cwd: &Path, config_files: Vec<PathBuf>) -> Protected {
    let log_file = env("ANTLER_LOG_FILE").filter(|v| !v.is_empty());
    Protected {
        private: [
            crate::config::dirs::data_dir(env),
            crate::config::dirs::config_dir(env),
            crate::config::dirs::state_dir(env),
            crate::config::dirs::cache_dir(env),
            log_file.map(PathBuf::from),
        ]
        .into_iter()
        .flatten()
        .map(|p| cwd.join(p))
        .collect(),
        thread_outputs: ThreadOutputs::default(),
        startup_dirs: Vec::new(),
        files: config_files,
        skill_reads: SkillReads::default(),
        skill_folders: Vec::new(),
    }
}

/// With `bash` on, a workspace that contains antler's own folders lets a shell command do
/// what the file tools may not (read threads, change the trust store): worth a warning.
fn shell_reaches_private(
    sandbox: &crate::config::SandboxConfig,
    cwd: &Path,
    protected: &Protected,
) -> Option<String> {
    if !sandbox.allow_host_bash {
        return None;
    }
    let root =
        std::fs::canonicalize(cwd.join(sandbox.workspace.as_deref().unwrap_or(Path::new("."))))
            .ok()?;
    let inside = protected.private.iter().find(|dir| {
        std::fs::canonicalize(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .starts_with(&root)
    })?;
    Some(format!(
        "sandbox.workspace ({}) contains antler's own folder {}: the file tools keep out of \
         it, but a `bash` command can read and change it (threads, the trust store); use a \
         workspace that does not contain it",
        root.display(),
        inside.display()
    ))
}

/// Secret values of the environment: `OPENAI_API_KEY` (the fallback key) and every variable
/// whose name says it is a secret (`*KEY*`, `*TOKEN*`, ...), whether a config names it or
/// not: none of them may reach the model.
fn environment_secrets(env: EnvLookup<'_>) -> Vec<String> {
    let named = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| crate::config::is_secret_name(name))
        .map(|(_, value)| value);
    env("OPENAI_API_KEY").into_iter().chain(named).collect()
}

/// The three tiers in order, first of each name kept; the dropped duplicates are logged.
pub fn assemble_tiers(
    configured: Vec<Arc<dyn Tool>>,
    builtins: Vec<Arc<dyn Tool>>,
    mcp: Vec<Arc<dyn Tool>>,
) -> Toolset {
    let (toolset, duplicates) = assemble_toolset(configured, builtins, mcp);
    for warning in &duplicates {
        tracing::warn!("{warning}");
    }
    toolset
}

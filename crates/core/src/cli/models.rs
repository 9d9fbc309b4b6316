//! `antler models fetch`: installs the sentence encoder's model where tool search looks,
//! or an embedded chat model where `-m embedded` looks.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use super::context::CommandContext;
use super::error::CliError;
use super::output::write_stdout;
use super::{Exit, ModelsCommand};
use crate::config::EnvLookup;
use antler_search::semantic::Encoder;
use antler_search::semantic::install::{self, FILES, InstallError, REVISION, Staging, UPSTREAM};

/// Runs `antler models ...`.
pub(super) async fn run(command: ModelsCommand, ctx: CommandContext<'_>) -> Exit {
    let CommandContext {
        paths: _,
        cwd,
        env,
        trust: _,
        ..
    } = ctx;
    let ModelsCommand::Fetch(args) = command;
    match args.name.as_str() {
        "encoder" | antler_search::semantic::MODEL_NAME => {}
        name => return fetch_chat(name, args.from.as_deref(), cwd, env).await,
    }
    let setup = match ctx.setup() {
        Ok(setup) => setup,
        Err(err) => return CliError::from(err).report(),
    };
    let Some(model) = setup.semantic_model() else {
        return CliError::usage(
            "the sentence encoder is turned off (tool_search.semantic.enabled: false) or there \
             is no home folder to install it in; set tool_search.semantic.model or \
             $ANTLER_SEMANTIC_MODEL",
        )
        .report();
    };
    let target = model.location().dir.clone();
    let installed = match &args.from {
        Some(from) => install::install_from(&cwd.join(from), &target),
        None => {
            let client = match download_client() {
                Ok(client) => client,
                Err(err) => return err.report(),
            };
            eprintln!(
                "downloading all-MiniLM-L6-v2 from {} (revision {})",
                install::UPSTREAM,
                install::REVISION
            );
            fetch_encoder(&client, &target, &|file| eprintln!("  {file}")).await
        }
    };
    let dir = match installed {
        Ok(dir) => dir,
        Err(err) => return CliError::usage(format!("models fetch: {err}")).report(),
    };
    // Installed files that do not load would only fail later, at a search.
    if let Err(err) = Encoder::load(&dir) {
        return CliError::usage(format!("the installed model does not load: {err}")).report();
    }
    let done = format!(
        "installed all-MiniLM-L6-v2 in {} ({}); tool search ranks with it\n",
        dir.display(),
        model.location().source
    );
    write_stdout(&done).map_or_else(CliError::report, |()| Exit::Success)
}

/// Downloads the sentence encoder's pinned model from [`UPSTREAM`] at [`REVISION`] into
/// `target`; `progress(file)` is told each file as it starts.
async fn fetch_encoder(
    client: &reqwest::Client,
    target: &Path,
    progress: &dyn Fn(&str),
) -> Result<PathBuf, InstallError> {
    let staging = Staging::new(target)?;
    for &(file, size, _) in FILES {
        progress(file);
        let url = format!("{UPSTREAM}/resolve/{REVISION}/{file}");
        let bytes = download(client, &url, size).await?;
        staging.add(file, &bytes, &url)?;
    }
    staging.commit()
}

/// The body at `url`, which must be exactly `size` bytes.
async fn download(client: &reqwest::Client, url: &str, size: u64) -> Result<Vec<u8>, InstallError> {
    let failed = |message: String| InstallError::Download {
        url: url.into(),
        message,
    };
    let mut response = client
        .get(url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| failed(e.to_string()))?;
    let mut body = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    while let Some(chunk) = response.chunk().await.map_err(|e| failed(e.to_string()))? {
        if (body.len() + chunk.len()) as u64 > size {
            return Err(failed(format!("more than the expected {size} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    if body.len() as u64 != size {
        return Err(failed(format!("{} bytes, expected {size}", body.len())));
    }
    Ok(body)
}

/// The client downloads use: a stalled download fails instead of hanging (a read that
/// waits 60 s; the chat model's download also gives up after 60 s without data).
fn download_client() -> Result<reqwest::Client, CliError> {
    crate::base::http::http_client_builder()
        .connect_timeout(std::time::Duration::from_secs(30))
        .read_timeout(std::time::Duration::from_secs(60))
        .build()
        .map_err(|err| CliError::usage(format!("HTTP client: {err}")))
}

/// Installs the chat model `name` into the models folder.
pub(super) async fn fetch_chat(
    name: &str,
    from: Option<&Path>,
    cwd: &Path,
    env: EnvLookup<'_>,
) -> Exit {
    use crate::provider::embedded::{catalog, engine::Engine, install as chat_install};
    let Some(model) = catalog::ChatModel::named(name) else {
        return CliError::usage(format!(
            "models fetch: unknown model `{}`; the models are encoder, chat and chat-small",
            crate::base::text::printable(name)
        ))
        .report();
    };
    let Some(dir) = crate::config::dirs::models_dir(env) else {
        return CliError::usage(format!(
            "models fetch: no home folder to install into; set ${}",
            crate::config::dirs::MODELS_DIR_ENV
        ))
        .report();
    };
    let target = model.path(&dir);
    let bar = ProgressBar::new(std::io::stderr().is_terminal());
    let installed = match from {
        Some(from) => {
            eprintln!("copying {} from {}", model.title, from.display());
            chat_install::install_from(&cwd.join(from), &target, &model, &|done, all| {
                bar.show(done, all)
            })
        }
        None => {
            let client = match download_client() {
                Ok(client) => client,
                Err(err) => return err.report(),
            };
            eprintln!(
                "downloading {} ({}) from {}",
                model.title,
                model.size_text(),
                model.url()
            );
            let url = model.url();
            chat_install::download(&client, &url, &target, &model, &|done, all| {
                bar.show(done, all)
            })
            .await
        }
    };
    bar.end();
    let path = match installed {
        Ok(path) => path,
        Err(err) => return CliError::usage(format!("models fetch: {err}")).report(),
    };
    // A file that does not load would only fail later, at the first message.
    let loaded = tokio::task::spawn_blocking({
        let path = path.clone();
        move || Engine::load(&path).map(|_| ())
    })
    .await;
    match loaded {
        Ok(Ok(())) => {}
        Ok(Err(err)) => {
            return CliError::usage(format!("the installed model does not load: {err}")).report();
        }
        Err(err) => return CliError::usage(format!("loading the model: {err}")).report(),
    }
    let done = format!(
        "installed {} in {}; `antler -m embedded` uses it (and so does antler when no model \
         endpoint is configured)\n",
        model.title,
        path.display()
    );
    write_stdout(&done).map_or_else(CliError::report, |()| Exit::Success)
}

/// A one-line progress bar on stderr when it is a terminal; nothing otherwise.
struct ProgressBar {
    on: bool,
    last: std::sync::Mutex<Option<std::time::Instant>>,
    started: std::time::Instant,
}

impl ProgressBar {
    fn new(on: bool) -> Self {
        Self {
            on,
            last: std::sync::Mutex::new(None),
            started: std::time::Instant::now(),
        }
    }

    fn show(&self, done: u64, all: u64) {
        if !self.on {
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = std::time::Instant::now();
        if last.is_some_and(|at| now - at < std::time::Duration::from_millis(100)) && done < all {
            return;
        }
        *last = Some(now);
        let fraction = if all == 0 {
            1.0
        } else {
            done as f64 / all as f64
        };
        let filled = (fraction * 30.0) as usize;
        let rate = done as f64 / 1e6 / self.started.elapsed().as_secs_f64().max(0.001);
        eprint!(
            "\r[{}{}] {:>5.1}%  {:.0}/{:.0} MB  {rate:.1} MB/s ",
            "#".repeat(filled),
            " ".repeat(30 - filled.min(30)),
            fraction * 100.0,
            done as f64 / 1e6,
            all as f64 / 1e6
        );
    }

    fn end(&self) {
        if self.on {
            eprintln!();
        }
    }
}

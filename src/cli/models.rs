//! `antler models fetch`: installs the sentence encoder's model where tool search looks.

use std::path::Path;
use std::sync::Arc;

use super::error::CliError;
use super::output::write_stdout;
use super::{Exit, ModelsCommand};
use crate::config::{ConfigPaths, EnvLookup};
use crate::semantic::{Encoder, install};
use crate::setup::Setup;
use crate::trust::ProjectTrust;

/// Runs `antler models ...`.
pub async fn run(
    command: ModelsCommand,
    paths: &ConfigPaths,
    cwd: &Path,
    env: EnvLookup<'_>,
    trust: &Arc<ProjectTrust>,
) -> Exit {
    let ModelsCommand::Fetch(args) = command;
    let setup = match Setup::load(paths, cwd, env, trust) {
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
            // A stalled download fails instead of hanging.
            let client = crate::http::http_client_builder()
                .connect_timeout(std::time::Duration::from_secs(30))
                .read_timeout(std::time::Duration::from_secs(60))
                .build();
            let client = match client {
                Ok(client) => client,
                Err(err) => return CliError::usage(format!("HTTP client: {err}")).report(),
            };
            eprintln!(
                "downloading all-MiniLM-L6-v2 from {} (revision {})",
                install::UPSTREAM,
                install::REVISION
            );
            install::fetch(&client, &target, &|file| eprintln!("  {file}")).await
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

//! `antler mcp login NAME` and `antler mcp logout NAME`.

use std::io::IsTerminal as _;

use super::Exit;
use super::McpLoginArgs;
use super::error::CliError;
use crate::config::{EnvLookup, McpServerConfig};
use crate::mcp::oauth;
use crate::setup::Setup;

/// The entry called `name`, or an error naming the ones there are.
fn server(setup: &Setup, env: EnvLookup<'_>, name: &str) -> Result<McpServerConfig, CliError> {
    let servers = setup
        .server_configs(env)
        .map_err(|err| CliError::usage(err.to_string()))?;
    let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
    servers
        .iter()
        .find(|s| s.name == name)
        .cloned()
        .ok_or_else(|| {
            CliError::usage(format!(
                "no MCP server `{}` in the extensions config (there are: {})",
                crate::base::text::quoted(name),
                crate::base::text::quoted_list(known)
            ))
        })
}

fn tokens(setup: &Setup) -> Result<&oauth::TokenStore, CliError> {
    setup
        .tokens()
        .ok_or_else(|| CliError::failure(oauth::OAuthError::NoDataFolder.to_string()))
}

/// Signs in; the URL to open goes to stderr, and the browser is opened where there is a
/// terminal to have started from (not with `--no-browser`, not in CI).
pub(super) async fn login(
    setup: &Setup,
    env: EnvLookup<'_>,
    args: &McpLoginArgs,
) -> Result<Exit, CliError> {
    let config = server(setup, env, &args.name)?;
    let tokens = tokens(setup)?;
    let interactive = std::io::stderr().is_terminal() && env("CI").is_none();
    let show = |url: &str| {
        eprintln!(
            "To sign in to MCP server `{}`, open this address in a browser:\n\n  {}\n",
            crate::base::text::quoted(&config.name),
            crate::base::text::printable(url)
        );
    };
    oauth::login(&config, tokens, &show, interactive && !args.no_browser)
        .await
        .map_err(|err| {
            let name = crate::base::text::quoted(&config.name);
            CliError::failure(format!("login to `{name}` failed: {err}"))
        })?;
    eprintln!(
        "Signed in to MCP server `{}`.",
        crate::base::text::quoted(&config.name)
    );
    Ok(Exit::Success)
}

/// Forgets the server's tokens.
pub(super) fn logout(setup: &Setup, env: EnvLookup<'_>, name: &str) -> Result<Exit, CliError> {
    let config = server(setup, env, name)?;
    let had =
        oauth::logout(&config, tokens(setup)?).map_err(|err| CliError::failure(err.to_string()))?;
    // What the server listed with the tokens goes with them: its tools are not offered
    // from a manifest until it is signed in to (and listed) again.
    if let Some(manifests) = setup.manifests() {
        let hash = crate::mcp::manifest::entry_hash(&config, &setup.cwd);
        if let Err(err) = manifests.forget(&hash) {
            tracing::warn!("the manifest of MCP server `{name}` was not removed: {err}");
        }
    }
    let name = crate::base::text::quoted(name);
    if had {
        eprintln!("Signed out of MCP server `{name}`: its tokens are forgotten.");
    } else {
        eprintln!("antler was not signed in to MCP server `{name}`.");
    }
    Ok(Exit::Success)
}

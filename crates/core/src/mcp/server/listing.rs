//! A server's tool list: from its manifest while it is idle, from the live server once it
//! is up; re-listed when it announces a change, and saved as the manifest.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{McpServer, RELIST_BACKOFF, close};
use crate::base::clock::now_secs as now;
use crate::mcp::McpError;
use crate::mcp::connect::{Connection, connect, list_all_tools};
use crate::mcp::manifest::{Manifest, ManifestView};
use crate::mcp::server_state::State;

/// What a re-list did.
enum Relisted {
    /// Nothing to do (no change announced, backing off, not connected).
    Skipped,
    /// Listed; whether the manifest was saved.
    Listed(Result<(), String>),
    /// The listing failed or timed out.
    Failed(String),
}

impl McpServer {
    /// The manifest that may stand in for starting the server now, if the plan is lazy.
    pub(super) fn usable_manifest(&self) -> Option<Manifest> {
        if !self.plan.lazy {
            return None;
        }
        let manifest = self.plan.manifests.as_ref()?.load(&self.plan.entry_hash)?;
        if manifest.is_from_the_future(now()) {
            tracing::warn!(server = %self.config.name, "the MCP manifest is dated in the future; starting the server");
            return None;
        }
        let fresh = manifest.is_fresh(now(), self.plan.max_age);
        if !fresh && !self.plan.accept_stale {
            tracing::debug!(server = %self.config.name, "the MCP manifest is too old; starting the server");
            return None;
        }
        Some(manifest)
    }

    /// Warns about `enabled_tools` / `disabled_tools` patterns that match none of `tools`.
    pub(super) fn warn_unmatched_filters(&self, tools: &[rmcp::model::Tool]) {
        if tools.is_empty() {
            return;
        }
        let names: Vec<String> = tools.iter().flat_map(|t| self.names_of(&t.name)).collect();
        for (list, pattern) in self.config.policy.tools.unmatched(&names) {
            tracing::warn!(server = %self.config.name, "`{list}` entry {pattern:?} matches none of the server's {} tools", tools.len());
        }
    }

    /// Saves what `connection` listed as the server's manifest; the manifest saved (only
    /// made when `owned`), or why it was not (no data folder, a write error).
    pub(super) fn save_manifest(
        &self,
        connection: &Connection,
        owned: bool,
    ) -> Result<Option<Manifest>, String> {
        let Some(store) = &self.plan.manifests else {
            return Err(String::from("there is no data folder to keep manifests in"));
        };
        let info = connection.service.peer_info();
        let view = ManifestView::listed(
            &self.plan.entry_hash,
            &self.config.name,
            connection,
            info.as_deref(),
        );
        store.save(&view).map_err(|err| err.to_string())?;
        Ok(owned.then(|| view.to_manifest()))
    }

    /// The tools of `all` that the entry's `enabled_tools` / `disabled_tools` keep.
    pub(super) fn kept<'a>(
        &'a self,
        all: &'a [rmcp::model::Tool],
    ) -> impl Iterator<Item = &'a rmcp::model::Tool> + 'a {
        all.iter().filter(|tool| {
            let names = self.names_of(&tool.name);
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            self.config.policy.tools.allows(&names)
        })
    }

    /// The names the server's tool `name` goes by: its own, sanitised, and as shown
    /// (before a cut or a disambiguating suffix, which keep its start).
    fn names_of(&self, name: &str) -> [String; 3] {
        [
            name.to_string(),
            crate::tools::naming::sanitize(name),
            crate::tools::naming::base_name(&self.config.name, name, self.config.tool_name_prefix),
        ]
    }

    /// The server's tools that its entry's filter keeps (an idle server's from its
    /// manifest), listed again first if the server announced a change (see
    /// [`McpServer::refresh_tools`]).
    pub async fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.refresh_tools().await;
        let state = self.state.lock().await;
        self.kept(state.tools()).cloned().collect()
    }

    /// Lists the tools again if the server announced a change since the last listing,
    /// and returns the version of the list held, which grows whenever it changes. The
    /// re-list runs outside the lock and within the start-up timeout; if it fails, the
    /// old list is kept and tried again after [`RELIST_BACKOFF`].
    pub async fn refresh_tools(&self) -> u64 {
        if let Relisted::Listed(Err(err)) = self.relist_if_changed().await {
            tracing::warn!(server = %self.config.name, "{err}");
        }
        self.list_version.load(Ordering::Relaxed)
    }

    /// The re-list behind [`McpServer::refresh_tools`], with its outcome.
    async fn relist_if_changed(&self) -> Relisted {
        let (peer, id, generation) = {
            let state = self.state.lock().await;
            let State::Connected(live) = &*state else {
                return Relisted::Skipped;
            };
            let generation = *self.changes.borrow();
            let waiting = live.relist_after.is_some_and(|at| Instant::now() < at);
            if generation == live.connection.listed_generation || waiting {
                return Relisted::Skipped;
            }
            (live.connection.service.peer().clone(), live.id, generation)
        };
        let listed = tokio::time::timeout(self.config.startup_timeout, list_all_tools(&peer)).await;
        let mut state = self.state.lock().await;
        let State::Connected(live) = &mut *state else {
            return Relisted::Skipped;
        };
        if live.id != id {
            return Relisted::Skipped;
        }
        let failed = match listed {
            Ok(Ok(listing)) => {
                tracing::info!(server = %self.config.name, count = listing.tools.len(), "tools re-listed after list_changed");
                if live.connection.tools != listing.tools {
                    self.list_version.fetch_add(1, Ordering::Relaxed);
                }
                live.connection.tools = listing.tools;
                live.connection.ttl_ms = listing.ttl_ms;
                live.connection.listed_generation = generation;
                live.relist_after = None;
                let saved = match self.plan.manifests {
                    Some(_) => self.save_manifest(&live.connection, false).map(drop),
                    None => Ok(()),
                };
                return Relisted::Listed(saved);
            }
            Ok(Err(err)) => format!("re-listing tools failed: {err}"),
            Err(_) => format!(
                "re-listing tools took longer than {:?}",
                self.config.startup_timeout
            ),
        };
        tracing::warn!(server = %self.config.name, "{failed}; keeping the old list for {RELIST_BACKOFF:?}");
        live.relist_after = Some(Instant::now() + RELIST_BACKOFF);
        Relisted::Failed(failed)
    }

    /// Lists the server's tools now and saves them as its manifest (`antler mcp refresh`,
    /// the chat's background refresh of old manifests). A connected server is listed
    /// again; any other is started on a connection of its own, outside the server's lock
    /// (calls, listings and statuses meanwhile see the old manifest), which is closed
    /// again after, leaving the server idle on the new manifest. Returns why it could not
    /// be listed or saved.
    pub async fn refresh_manifest(&self) -> Result<(), String> {
        let state = self.state.lock().await;
        match &*state {
            State::Disabled => return Err(McpError::Disabled.to_string()),
            State::Stopped => return Err(McpError::Stopped.to_string()),
            State::Connected(live) if live.usable() => {
                drop(state);
                return self.relist_now().await;
            }
            State::Idle(_) | State::Failed { .. } | State::Connected(_) => {}
        }
        drop(state);
        let connection = connect(
            &self.config,
            self.changes.clone(),
            self.plan.tokens.as_ref(),
        )
        .await
        .map_err(|err| err.to_string())?;
        let saved = self.save_manifest(&connection, true);
        close(&self.config.name, connection).await;
        let Some(manifest) = saved? else {
            return Ok(());
        };
        let mut state = self.state.lock().await;
        // A call that started the server meanwhile has its own, newer listing.
        if matches!(*state, State::Idle(_) | State::Failed { .. }) {
            self.replace(&mut state, State::Idle(Arc::new(manifest)));
        }
        Ok(())
    }

    /// Lists a connected server's tools again now and saves them.
    async fn relist_now(&self) -> Result<(), String> {
        self.changes.send_modify(|generation| *generation += 1);
        match self.relist_if_changed().await {
            Relisted::Listed(saved) => saved,
            Relisted::Failed(reason) => Err(reason),
            Relisted::Skipped => Err(String::from(
                "its tools were not listed again: a re-list failed less than 30 s ago, or it \
                 disconnected (see the log)",
            )),
        }
    }

    /// Whether the server is idle on a manifest older than its maximum age (the chat
    /// accepts one at start and refreshes it in the background).
    pub async fn has_stale_manifest(&self) -> bool {
        match &*self.state.lock().await {
            State::Idle(manifest) => !manifest.is_fresh(now(), self.plan.max_age),
            _ => false,
        }
    }
}

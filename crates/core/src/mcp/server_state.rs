//! What a server is at a moment: disabled, idle on its manifest, connected, failed or
//! stopped, and the tools and instructions each state stands for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::connect::Connection;
use super::manifest::{Manifest, ManifestStore};

pub(super) enum State {
    Disabled,
    /// Not started: its tools are those of a manifest, until the first call starts it.
    Idle(Arc<Manifest>),
    Stopped,
    Connected(Box<Live>),
    /// `manifest`: the tools of an idle server whose start failed stay, so its failure
    /// does not change the catalog (the calls say why they cannot run).
    Failed {
        reason: String,
        /// It answered 401: `antler mcp login` would let it start.
        login: bool,
        at: Instant,
        manifest: Option<Arc<Manifest>>,
    },
}

impl State {
    /// The tools the server is taken to have in this state.
    pub(super) fn tools(&self) -> &[rmcp::model::Tool] {
        match self {
            Self::Connected(live) => &live.connection.tools,
            Self::Idle(manifest)
            | Self::Failed {
                manifest: Some(manifest),
                ..
            } => &manifest.tools,
            Self::Disabled | Self::Stopped | Self::Failed { manifest: None, .. } => &[],
        }
    }

    /// The server's `instructions` in this state.
    pub(super) fn instructions(&self) -> Option<String> {
        match self {
            Self::Connected(live) => live
                .connection
                .service
                .peer_info()
                .and_then(|i| i.instructions.clone()),
            state => state.manifest().and_then(|m| m.instructions.clone()),
        }
    }

    /// The features the server announced, by name, as far as this state knows.
    pub(super) fn capabilities(&self) -> &[String] {
        match self {
            Self::Connected(live) => &live.connection.capabilities,
            state => state.manifest().map_or(&[], |m| &m.capabilities),
        }
    }

    /// How many resources the server listed when it was connected or last listed, if
    /// counted.
    pub(super) fn resource_count(&self) -> Option<usize> {
        match self {
            Self::Connected(live) => live.connection.resources,
            state => state.manifest().and_then(|m| m.resources),
        }
    }

    /// The server's prompts in this state.
    pub(super) fn prompts(&self) -> &[rmcp::model::Prompt] {
        match self {
            Self::Connected(live) => &live.connection.prompts,
            state => state.manifest().map_or(&[], |m| &m.prompts),
        }
    }

    pub(super) fn manifest(&self) -> Option<&Arc<Manifest>> {
        match self {
            Self::Idle(manifest)
            | Self::Failed {
                manifest: Some(manifest),
                ..
            } => Some(manifest),
            _ => None,
        }
    }
}

/// How a server is started, decided by the manager from its entry and the settings.
#[derive(Debug, Clone)]
pub struct StartPlan {
    /// Where its manifest is kept (none: no data folder, nothing cached).
    pub manifests: Option<ManifestStore>,
    /// The entry's hash ([`super::manifest::entry_hash`]).
    pub entry_hash: String,
    /// Start on first call when a manifest may stand in for a listing.
    pub lazy: bool,
    /// How old that manifest may be.
    pub max_age: Duration,
    /// Take a manifest that is too old too (it is refreshed in the background).
    pub accept_stale: bool,
    /// Who answers the server's requests for input.
    pub elicitations: super::elicitation::Answerer,
    /// Where OAuth tokens are kept (none: no data folder).
    pub tokens: Option<super::oauth::TokenStore>,
}

/// Whether the live server offers the called tool as the caller was shown it.
pub(super) enum Known {
    Same,
    Changed,
    Gone,
}

pub(super) struct Live {
    /// Tells connections apart, so a re-list or a failure never lands on a newer one.
    pub(super) id: u64,
    pub(super) connection: Connection,
    /// A call failed at the transport level (not an MCP error): reconnect before the next.
    pub(super) broken: bool,
    /// A re-list failed: not tried again before then.
    pub(super) relist_after: Option<Instant>,
}

impl Live {
    pub(super) fn usable(&self) -> bool {
        !self.broken && !self.connection.service.is_transport_closed()
    }
}

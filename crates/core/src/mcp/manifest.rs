//! A server's last successful listing, kept so that its tools exist before (and without)
//! its process: tools with full schemas, its instructions, name, version and protocol.
//!
//! One JSON file per server entry in `$DATA/mcp-manifests/`, named by the SHA-256 of
//! everything in the entry that decides what the server is (how it is started or reached,
//! its environment and headers, the naming of its tools), so an edited entry never meets
//! the manifest of its old self, and no name a config or server chose becomes a path.
//! Files are written whole to a temporary name and renamed, so a reader never sees half
//! of one; a file that does not parse or belongs to another entry is ignored.

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::connect::Connection;
use crate::config::{EnvLookup, McpServerConfig, TransportKind};

/// The folder's name inside the data folder.
const DIR: &str = "mcp-manifests";
/// The manifest format this build writes and reads.
/// 2: with the server's capabilities and prompts.
pub(super) const FORMAT: u32 = 2;
/// A larger file is not read: no listing antler keeps is near this size.
const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// A temporary file older than this was left by a writer that died.
const LEFTOVER_AGE: Duration = Duration::from_secs(3_600);
/// Clock skew tolerated before a manifest dated in the future counts as stale.
const FUTURE_SLACK_SECS: u64 = 60;

/// What a server said about itself the last time it was listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT`] when written: a manifest of another format is ignored.
    pub format: u32,
    /// The hash of the entry it was listed for ([`entry_hash`]).
    pub entry_hash: String,
    /// The entry's name in `mcpServers`, for people reading the folder.
    pub server: String,
    /// When it was listed (unix seconds).
    pub listed_at: u64,
    /// The server's `ttlMs` caching hint for the listing, if it gave one.
    pub ttl_ms: Option<u64>,
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// `serverInfo.name` and `.version`.
    pub server_name: String,
    /// See above.
    pub server_version: String,
    /// The server's `instructions` from `initialize`.
    pub instructions: Option<String>,
    /// Every tool it listed, unfiltered (a changed filter needs no new listing).
    pub tools: Vec<rmcp::model::Tool>,
    /// The features it announced (`resources`, `prompts`, ...), by name.
    pub capabilities: Vec<String>,
    /// Its prompts, for slash commands before it is started.
    pub prompts: Vec<rmcp::model::Prompt>,
    /// How many resources and templates it listed, when it announced resources (none in
    /// manifests written before antler counted them).
    #[serde(default)]
    pub resources: Option<usize>,
}

impl Manifest {
    /// The manifest as saved, borrowed.
    #[cfg(test)]
    pub fn view(&self) -> ManifestView<'_> {
        ManifestView {
            format: self.format,
            entry_hash: &self.entry_hash,
            server: &self.server,
            listed_at: self.listed_at,
            ttl_ms: self.ttl_ms,
            protocol_version: &self.protocol_version,
            server_name: &self.server_name,
            server_version: &self.server_version,
            instructions: self.instructions.as_deref(),
            tools: &self.tools,
            capabilities: &self.capabilities,
            prompts: &self.prompts,
            resources: self.resources,
        }
    }

    /// Whether it is dated (much) in the future: never used, whatever the front-end
    /// accepts, as no listing antler saved can be.
    pub fn is_from_the_future(&self, now: u64) -> bool {
        self.listed_at > now + FUTURE_SLACK_SECS
    }

    /// Its age at `now` (unix seconds); a date in the future counts as age zero.
    pub fn age(&self, now: u64) -> Duration {
        Duration::from_secs(now.saturating_sub(self.listed_at))
    }

    /// Whether it may stand in for a listing at `now`: younger than `max_age` and than the
    /// server's own `ttlMs`, and not dated (much) in the future.
    pub fn is_fresh(&self, now: u64, max_age: Duration) -> bool {
        if self.is_from_the_future(now) {
            return false;
        }
        let limit = match self.ttl_ms {
            Some(ttl) => max_age.min(Duration::from_millis(ttl)),
            None => max_age,
        };
        self.age(now) < limit
    }
}

/// A manifest's fields, borrowed: what is written, so that saving a listing copies neither
/// the tools nor the text (a large catalog's JSON is streamed to the file).
#[derive(Debug, Serialize)]
pub struct ManifestView<'a> {
    format: u32,
    entry_hash: &'a str,
    server: &'a str,
    listed_at: u64,
    ttl_ms: Option<u64>,
    protocol_version: &'a str,
    server_name: &'a str,
    server_version: &'a str,
    instructions: Option<&'a str>,
    tools: &'a [rmcp::model::Tool],
    capabilities: &'a [String],
    prompts: &'a [rmcp::model::Prompt],
    resources: Option<usize>,
}

impl<'a> ManifestView<'a> {
    /// What `connection` (with its peer's handshake `info`) listed, now, as the manifest
    /// of the entry with `entry_hash`.
    pub(super) fn listed(
        entry_hash: &'a str,
        server: &'a str,
        connection: &'a Connection,
        info: Option<&'a rmcp::model::ServerPeerInfo>,
    ) -> Self {
        let implementation = info.and_then(|i| i.server_info.as_ref());
        Self {
            format: FORMAT,
            entry_hash,
            server,
            listed_at: crate::base::clock::now_secs(),
            ttl_ms: connection.ttl_ms,
            protocol_version: &connection.protocol_version,
            server_name: implementation.map_or("", |i| i.name.as_str()),
            server_version: implementation.map_or("", |i| i.version.as_str()),
            instructions: info.and_then(|i| i.instructions.as_deref()),
            tools: &connection.tools,
            capabilities: &connection.capabilities,
            prompts: &connection.prompts,
            resources: connection.resources,
        }
    }

    /// The owned manifest.
    pub fn to_manifest(&self) -> Manifest {
        Manifest {
            format: self.format,
            entry_hash: self.entry_hash.to_string(),
            server: self.server.to_string(),
            listed_at: self.listed_at,
            ttl_ms: self.ttl_ms,
            protocol_version: self.protocol_version.to_string(),
            server_name: self.server_name.to_string(),
            server_version: self.server_version.to_string(),
            instructions: self.instructions.map(str::to_string),
            tools: self.tools.to_vec(),
            capabilities: self.capabilities.to_vec(),
            prompts: self.prompts.to_vec(),
            resources: self.resources,
        }
    }
}

/// Why a manifest could not be saved (logged; a run never fails on it).
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The folder or file could not be written.
    #[error("cannot write the MCP manifest {path}: {source}")]
    Write {
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// It could not be encoded.
    #[error("cannot encode the MCP manifest: {0}")]
    Encode(#[from] serde_json::Error),
    /// It is larger than a manifest may be (it would be ignored when read).
    #[error("the MCP manifest would take more than {MAX_FILE_BYTES} bytes; it is not kept")]
    TooLarge,
}

/// A writer that refuses to write more than `left` bytes in all.
struct Capped<W> {
    inner: W,
    left: u64,
}

impl<W: std::io::Write> std::io::Write for Capped<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() as u64 > self.left {
            return Err(std::io::ErrorKind::FileTooLarge.into());
        }
        let n = self.inner.write(buf)?;
        self.left -= n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The manifest folder: one file per server entry, named by the entry's hash.
#[derive(Debug, Clone)]
pub struct ManifestStore {
    dir: PathBuf,
}

impl ManifestStore {
    /// The folder under antler's data folder; `None` when there is no data folder.
    pub fn in_data_dir(env: EnvLookup<'_>) -> Option<Self> {
        crate::config::dirs::data_dir(env).map(|dir| Self::at(dir.join(DIR)))
    }

    /// The folder `dir`, created on the first save.
    pub fn at(dir: PathBuf) -> Self {
        Self { dir }
    }

    fn file(&self, hash: &str) -> PathBuf {
        self.dir.join(format!("{hash}.json"))
    }

    /// The manifest saved for the entry with `hash`, if there is a usable one.
    pub fn load(&self, hash: &str) -> Option<Manifest> {
        let path = self.file(hash);
        // Regular files of the user's only, opened without blocking or following a link:
        // a pipe planted here cannot hang the start, nor another user's forged description
        // reach the model.
        let bytes =
            match crate::base::private_file::read_private(&path, MAX_FILE_BYTES, "a manifest") {
                Ok(Some(bytes)) => bytes,
                Ok(None) => return None,
                Err(err) => {
                    tracing::warn!("ignoring the MCP manifest {}: {err}", path.display());
                    return None;
                }
            };
        match serde_json::from_slice::<Manifest>(&bytes) {
            Ok(manifest) if manifest.format == FORMAT && manifest.entry_hash == hash => {
                Some(manifest)
            }
            Ok(_) => {
                tracing::warn!(path = %path.display(), "ignoring an MCP manifest of another format or entry");
                None
            }
            Err(err) => {
                tracing::warn!(path = %path.display(), "ignoring an unreadable MCP manifest: {err}");
                None
            }
        }
    }

    /// Forgets the manifest of the entry with `hash`, if there is one (a server signed out
    /// of: what it listed for the tokens is not shown without them). The name is removed,
    /// never followed.
    pub fn forget(&self, hash: &str) -> std::io::Result<()> {
        match std::fs::remove_file(self.file(hash)) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// Saves `manifest` under its entry hash, replacing the previous one at once. The
    /// JSON is streamed to a temporary file (never held whole in memory) and stops at
    /// [`MAX_FILE_BYTES`]; the file is renamed into place only when complete. A small
    /// blocking write, done in place.
    pub fn save(&self, manifest: &ManifestView<'_>) -> Result<(), ManifestError> {
        let path = self.file(manifest.entry_hash);
        let write_error = |source| ManifestError::Write {
            path: path.clone(),
            source,
        };
        crate::base::private_file::create_dir(&self.dir).map_err(write_error)?;
        // A name of our own per writer: two antler processes saving at once never mix.
        let temporary = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            manifest.entry_hash,
            std::process::id(),
            fastrand::u64(..)
        ));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .map_err(write_error)
            .and_then(|file| {
                let mut out = std::io::BufWriter::new(Capped {
                    inner: file,
                    left: MAX_FILE_BYTES,
                });
                serde_json::to_writer(&mut out, manifest).map_err(|err| {
                    if err.io_error_kind() == Some(std::io::ErrorKind::FileTooLarge) {
                        ManifestError::TooLarge
                    } else if err.is_io() {
                        write_error(err.into())
                    } else {
                        ManifestError::Encode(err)
                    }
                })?;
                std::io::Write::flush(&mut out).map_err(write_error)
            })
            .and_then(|()| std::fs::rename(&temporary, &path).map_err(write_error));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        self.sweep_leftovers();
        written
    }

    /// Removes temporary files that a writer killed between writing and renaming left
    /// behind (older than [`LEFTOVER_AGE`], so no live writer loses its file).
    fn sweep_leftovers(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !(name.starts_with('.') && name.ends_with(".tmp")) {
                continue;
            }
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|at| at.elapsed().ok())
                .is_some_and(|age| age > LEFTOVER_AGE);
            if old {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The SHA-256 (hex) of what makes an entry the server it is: its name (which names its
/// tools), transport, command, arguments, environment (names and values), URL, headers,
/// the tool-name prefix setting, and for a stdio server the working directory it is
/// started in (a relative `./server.py` is another program in another folder). Settings
/// that only decide what antler does with the tools (filters, `defer`, timeouts) are left
/// out: changing them needs no new listing.
pub(crate) fn entry_hash(config: &McpServerConfig, cwd: &Path) -> String {
    #[derive(Serialize)]
    struct Identity<'a> {
        name: &'a str,
        transport: TransportKind,
        command: &'a Option<String>,
        args: &'a [String],
        env: &'a std::collections::BTreeMap<String, String>,
        url: &'a Option<String>,
        headers: &'a std::collections::BTreeMap<String, String>,
        tool_name_prefix: bool,
        /// Who signs in (not with which secret): another client may be shown other
        /// tools. Left out when unset, so entries without it keep their hashes.
        #[serde(skip_serializing_if = "Option::is_none")]
        oauth: Option<OAuthIdentity<'a>>,
    }
    #[derive(Serialize)]
    struct OAuthIdentity<'a> {
        client_id: &'a Option<String>,
        scopes: &'a [String],
        grant: &'static str,
        identity_provider: Option<&'a str>,
    }
    let oauth = config.oauth.as_ref().map(|o| OAuthIdentity {
        client_id: &o.client_id,
        scopes: &o.scopes,
        grant: o.grant.name(),
        identity_provider: match &o.grant {
            crate::config::Grant::CrossAppAccess(idp) => Some(&idp.issuer),
            _ => None,
        },
    });
    let identity = Identity {
        name: &config.name,
        transport: config.transport,
        command: &config.command,
        args: &config.args,
        env: &config.env,
        url: &config.url,
        headers: &config.headers,
        tool_name_prefix: config.tool_name_prefix,
        oauth,
    };
    let mut hasher = Sha256::new();
    // Strings, booleans and maps of strings always serialise; the folder goes in as its
    // bytes, which need not be UTF-8.
    match serde_json::to_vec(&identity) {
        Ok(json) => hasher.update(&json),
        Err(err) => {
            // Never a value shared by several entries: a hash of nothing but randomness.
            tracing::warn!(server = %config.name, "cannot hash the entry ({err}); its manifest is not kept");
            hasher.update(fastrand::u64(..).to_le_bytes());
        }
    }
    if config.transport == TransportKind::Stdio {
        hasher.update(b"\0cwd\0");
        hasher.update(std::os::unix::ffi::OsStrExt::as_bytes(cwd.as_os_str()));
    }
    crate::base::describe::hex(&hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_extensions_config;

    fn server(entry: &str) -> McpServerConfig {
        let text = format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#);
        parse_extensions_config(&text, Path::new("e.json"), &|_| None)
            .unwrap()
            .value
            .servers
            .remove(0)
    }

    fn manifest(hash: &str, listed_at: u64, ttl_ms: Option<u64>) -> Manifest {
        Manifest {
            format: FORMAT,
            entry_hash: hash.to_string(),
            server: String::from("s"),
            listed_at,
            ttl_ms,
            protocol_version: String::from("2025-11-25"),
            server_name: String::from("fixture"),
            server_version: String::from("1"),
            instructions: Some(String::from("use me")),
            tools: vec![rmcp::model::Tool::new(
                "echo",
                "echoes",
                std::sync::Arc::new(serde_json::Map::new()),
            )],
            capabilities: vec![String::from("tools"), String::from("prompts")],
            prompts: vec![rmcp::model::Prompt::new("greet", Some("says hello"), None)],
            resources: None,
        }
    }

    #[test]
    fn the_hash_follows_what_the_server_is_not_what_antler_does_with_it() {
        let cwd = Path::new("/p");
        let base = entry_hash(&server(r#"{"command": "node", "args": ["a"]}"#), cwd);
        assert_eq!(base.len(), 64);
        for other in [
            r#"{"command": "node", "args": ["b"]}"#,
            r#"{"command": "deno", "args": ["a"]}"#,
            r#"{"command": "node", "args": ["a"], "env": {"K": "v"}}"#,
            r#"{"command": "node", "args": ["a"], "tool_name_prefix": false}"#,
        ] {
            assert_ne!(entry_hash(&server(other), cwd), base, "{other}");
        }
        assert_ne!(
            entry_hash(
                &server(r#"{"command": "node", "args": ["a"]}"#),
                Path::new("/q")
            ),
            base,
            "a stdio server in another folder is another server"
        );
        let same = r#"{"command": "node", "args": ["a"], "disabled_tools": ["x"],
                       "defer": "never", "tool_timeout_secs": 5}"#;
        assert_eq!(entry_hash(&server(same), cwd), base);
        let http = |h: &str| {
            entry_hash(
                &server(&format!(
                    r#"{{"type": "http", "url": "http://h/mcp", "headers": {h}}}"#
                )),
                cwd,
            )
        };
        assert_ne!(http(r#"{"A": "1"}"#), http(r#"{"A": "2"}"#));
        assert_eq!(
            http("{}"),
            entry_hash(
                &server(r#"{"type": "http", "url": "http://h/mcp"}"#),
                Path::new("/elsewhere")
            )
        );
    }

    #[test]
    fn freshness_is_the_shorter_of_max_age_and_ttl() {
        let day = Duration::from_secs(86_400);
        let m = manifest("h", 1_000, None);
        assert!(m.is_fresh(1_000 + 86_399, day));
        assert!(!m.is_fresh(1_000 + 86_400, day));
        assert!(
            !manifest("h", 1_000, Some(0)).is_fresh(1_000, day),
            "ttlMs 0: stale at once"
        );
        assert!(manifest("h", 1_000, Some(10_000)).is_fresh(1_009, day));
        assert!(!manifest("h", 1_000, Some(10_000)).is_fresh(1_010, day));
        assert!(
            !manifest("h", 1_000, Some(u64::MAX)).is_fresh(1_000 + 86_400, day),
            "the server cannot extend max age"
        );
        assert!(!m.is_fresh(1_000, Duration::ZERO), "max age 0: never fresh");
        assert!(
            !manifest("h", 10_000, None).is_fresh(1_000, day),
            "dated in the future"
        );
        assert!(
            manifest("h", 1_030, None).is_fresh(1_000, day),
            "small skew is tolerated"
        );
    }

    #[test]
    fn the_capped_writer_stops_at_its_limit() {
        use std::io::Write;
        let mut out = Capped {
            inner: Vec::new(),
            left: 5,
        };
        out.write_all(b"abc").unwrap();
        let err = out.write_all(b"def").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::FileTooLarge);
        assert_eq!(out.inner, b"abc");
    }

    #[test]
    fn saved_manifests_load_and_bad_files_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let store = ManifestStore::at(dir.path().join("m"));
        let hash = "a".repeat(64);
        assert_eq!(store.load(&hash), None, "nothing saved yet");
        let saved = manifest(&hash, 5, Some(7));
        // A writer that died an hour ago left its temporary file; a fresh one is a live
        // writer's.
        std::fs::create_dir_all(store.dir()).unwrap();
        let dead = store.dir().join(".dead.1.2.tmp");
        let live = store.dir().join(".live.3.4.tmp");
        for file in [&dead, &live] {
            std::fs::write(file, "{").unwrap();
        }
        let hour_ago = std::time::SystemTime::now() - Duration::from_secs(3_700);
        std::fs::File::options()
            .write(true)
            .open(&dead)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        store.save(&saved.view()).unwrap();
        assert_eq!(store.load(&hash), Some(saved.clone()));
        assert!(!dead.exists() && live.exists());
        std::fs::remove_file(&live).unwrap();
        let leftovers: Vec<_> = std::fs::read_dir(store.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(
            leftovers,
            [format!("{hash}.json")],
            "no temporary file stays"
        );

        // Another entry's manifest under this name (a copied file) is not used.
        let other = "b".repeat(64);
        std::fs::copy(store.file(&hash), store.file(&other)).unwrap();
        assert_eq!(store.load(&other), None);
        // Garbage, another format, a folder: ignored, never a panic.
        std::fs::write(store.file(&hash), b"{not json").unwrap();
        assert_eq!(store.load(&hash), None);
        let mut newer = serde_json::to_value(&saved).unwrap();
        newer["format"] = serde_json::json!(99);
        std::fs::write(store.file(&hash), newer.to_string()).unwrap();
        assert_eq!(store.load(&hash), None);
        std::fs::remove_file(store.file(&hash)).unwrap();
        std::fs::create_dir(store.file(&hash)).unwrap();
        assert_eq!(store.load(&hash), None);
        // A named pipe nobody writes to is refused at once, not waited on.
        let pipe = "c".repeat(64);
        let made = std::process::Command::new("mkfifo")
            .arg(store.file(&pipe))
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(store.load(&pipe), None);
    }
}

//! The stdio transport: newline-delimited JSON-RPC over a child's stdin and stdout, each
//! line handed on whole to be judged (rmcp's own stdio transport drops lines it cannot
//! parse, so a broken answer hangs its call until the tool timeout). The child is started
//! here too: in its own process group, with only the environment a program needs.

use std::borrow::Cow;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::ClientJsonRpcMessage;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::Mutex;

use super::{Frame, RawTransport};
use crate::base::process::{BASE_ENV, PROXY_ENV};
use crate::config::McpServerConfig;
use crate::mcp::McpError;

/// The longest message accepted (as rmcp's transport); a longer one breaks the protocol.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// How long the server gets to exit after its stdin closes before SIGTERM: the spec's
/// first step, kept short because `antler -p` waits for it after the answer (a Python
/// server takes 100–500 ms to wind down by itself, and SIGTERM ends it at once; a server
/// with state to save handles SIGTERM, and gets [`TERM_GRACE`] for it).
const EXIT_GRACE: Duration = Duration::from_millis(100);
/// How long the server gets to exit after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(3);
/// After the server exited, how long a read may wait for what it wrote before exiting
/// (already in the pipe, so this is only the reactor noticing it).
const AFTER_EXIT_READ: Duration = Duration::from_millis(200);

/// A stdio server's connection. Closing it closes the server's stdin, waits for it to exit,
/// then sends SIGTERM and finally SIGKILL.
pub(crate) struct StdioTransport {
    child: Option<Box<dyn ChildWrapper>>,
    stdout: BufReader<ChildStdout>,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    line: Vec<u8>,
    server: String,
    /// The server process has exited.
    exited: bool,
}

impl StdioTransport {
    /// The transport over `child`'s piped stdin and stdout; `server` names it in logs.
    pub(crate) fn new(mut child: Box<dyn ChildWrapper>, server: &str) -> std::io::Result<Self> {
        let missing = |what| std::io::Error::other(format!("the server's {what} is not piped"));
        let stdin = child.stdin().take().ok_or_else(|| missing("stdin"))?;
        let stdout = child.stdout().take().ok_or_else(|| missing("stdout"))?;
        Ok(Self {
            child: Some(child),
            stdout: BufReader::new(stdout),
            stdin: Arc::new(Mutex::new(Some(stdin))),
            line: Vec::new(),
            server: server.to_string(),
            exited: false,
        })
    }

    /// The child's process id.
    pub(crate) fn id(&self) -> Option<u32> {
        self.child.as_ref().and_then(|c| c.id())
    }
}

/// Starts the child, as the leader of its own process group, with the configured
/// environment on top of ours; its stderr goes to the log (target `antler::mcp::stderr`),
/// never to the terminal.
pub(crate) fn spawn(config: &McpServerConfig) -> Result<StdioTransport, McpError> {
    let program = config.command.clone().unwrap_or_default();
    let spawn_error = |e: std::io::Error| McpError::Spawn {
        program: program.clone(),
        reason: e.to_string(),
    };
    let mut command = tokio::process::Command::new(&program);
    command
        .args(&config.args)
        .env_clear()
        .envs(inherited_env())
        .envs(&config.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut command = CommandWrap::from(command);
    command.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let mut child = command.spawn().map_err(spawn_error)?;
    let stderr = child.stderr().take();
    let transport = StdioTransport::new(child, &config.name).map_err(spawn_error)?;
    if let Some(stderr) = stderr {
        let server = config.name.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(target: "antler::mcp::stderr", server = %server, "{line}");
            }
        });
    }
    Ok(transport)
}

/// What a stdio server inherits of antler's environment, as the MCP SDKs do: what a
/// program needs to run and reach the network (the system's paths, locale, terminal,
/// temp and cache folders, proxies and CA bundles), never API keys or other secrets. More
/// goes in the server's `env`.
fn inherited_env() -> impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)> {
    /// Besides [`BASE_ENV`] and [`PROXY_ENV`]: the shell, and where CA bundles are.
    const MORE: &[&str] = &[
        "SHELL",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "NODE_EXTRA_CA_CERTS",
        "REQUESTS_CA_BUNDLE",
    ];
    std::env::vars_os().filter(|(name, _)| {
        name.to_str().is_some_and(|name| {
            let listed = [BASE_ENV, PROXY_ENV, MORE]
                .iter()
                .any(|l| l.contains(&name));
            (listed || name.starts_with("LC_") || name.starts_with("XDG_"))
                && !crate::config::is_secret_name(name)
        })
    })
}

/// Reads the next whole line into `line`. Cancel-safe: bytes read before a cancellation
/// stay in `line` for the next call. `Ok(false)` at the end of the stream.
async fn read_line(
    stdout: &mut BufReader<ChildStdout>,
    line: &mut Vec<u8>,
) -> Result<bool, String> {
    loop {
        if line.ends_with(b"\n") {
            return Ok(true);
        }
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        if room == 0 {
            return Err(format!(
                "it sent a message longer than {MAX_LINE_BYTES} bytes"
            ));
        }
        let read = (&mut *stdout)
            .take(room as u64)
            .read_until(b'\n', line)
            .await
            .map_err(|e| format!("reading its output failed: {e}"))?;
        if read == 0 {
            return Ok(false);
        }
    }
}

/// Resolves when the child has exited (never, once it has been taken for closing).
async fn exited(child: &mut Option<Box<dyn ChildWrapper>>) {
    match child {
        Some(child) => {
            let _ = child.wait().await;
        }
        None => std::future::pending().await,
    }
}

impl StdioTransport {
    /// The next line: read until the server's output ends or the server exits. After an
    /// exit only what it wrote before is read: a helper it left behind may hold the pipe
    /// open, and must not keep its calls waiting.
    async fn next_line(&mut self) -> Result<bool, String> {
        if !self.exited {
            tokio::select! {
                read = read_line(&mut self.stdout, &mut self.line) => return read,
                () = exited(&mut self.child) => self.exited = true,
            }
        }
        match tokio::time::timeout(AFTER_EXIT_READ, read_line(&mut self.stdout, &mut self.line))
            .await
        {
            Ok(read) => read,
            Err(_) => Ok(false),
        }
    }
}

impl RawTransport for StdioTransport {
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "StdioTransport".into()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let stdin = self.stdin.clone();
        let line = serde_json::to_vec(&item).map(|mut bytes| {
            bytes.push(b'\n');
            bytes
        });
        async move {
            let line = line.map_err(std::io::Error::other)?;
            let mut stdin = stdin.lock().await;
            let pipe = stdin.as_mut().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotConnected, "the transport is closed")
            })?;
            pipe.write_all(&line).await?;
            pipe.flush().await
        }
    }

    async fn receive(&mut self) -> Option<Frame> {
        loop {
            match self.next_line().await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(reason) => {
                    tracing::warn!(server = %self.server, "MCP server disconnected: {reason}");
                    self.line.clear();
                    return None;
                }
            }
            let mut line = std::mem::take(&mut self.line);
            if line.ends_with(b"\n") {
                line.pop();
            }
            if line.ends_with(b"\r") {
                line.pop();
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Some(Frame::Bytes(line));
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.stdin.lock().await.take());
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok() {
            return Ok(());
        }
        if child.signal(libc::SIGTERM).is_ok()
            && tokio::time::timeout(TERM_GRACE, child.wait()).await.is_ok()
        {
            return Ok(());
        }
        Box::into_pin(child.kill()).await
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        // Not closed: the process group guard of the connection kills the whole group;
        // this only makes sure the child is not left to run on its own.
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
    }
}

//! Shared helpers: the antler binary in a sandboxed directory, the fixture MCP server, and
//! the third-party interop servers.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

/// A scratch directory with its own HOME and XDG folders, so no user config leaks in.
pub(crate) struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn write(&self, name: &str, content: &str) -> PathBuf {
        let path = self.path().join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    pub(crate) fn log_file(&self) -> PathBuf {
        self.path().join("antler.log")
    }

    /// `antler` with the working directory and environment pointing into the sandbox. The
    /// test wrote the project files itself, so they are trusted (`--trust-project`), and
    /// it tests what the tools do, so every call runs (`--permission-mode allow-all`; the
    /// permission tests use [`Sandbox::antler_asking`]).
    pub(crate) fn antler(&self) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.command())
    }

    /// The same as [`Sandbox::antler`] as a plain `Command`, for tests that need the child.
    pub(crate) fn command(&self) -> Command {
        let mut cmd = self.command_for(env!("CARGO_BIN_EXE_antler"));
        cmd.args(["--trust-project", "--permission-mode", "allow-all"]);
        cmd
    }

    /// `antler` with trusted project files and the permission policy as configured.
    pub(crate) fn antler_asking(&self) -> assert_cmd::Command {
        let mut cmd = self.command_for(env!("CARGO_BIN_EXE_antler"));
        cmd.arg("--trust-project");
        assert_cmd::Command::from_std(cmd)
    }

    /// `antler` as a user starts it: project files count only once trusted.
    pub(crate) fn antler_untrusted(&self) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.command_for(env!("CARGO_BIN_EXE_antler")))
    }

    /// `program` with the sandbox's working directory and environment (e.g. a wrapper that
    /// starts antler in a pseudo-terminal).
    pub(crate) fn command_for(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(self.path())
            .env("HOME", self.path())
            .env("XDG_CONFIG_HOME", self.path().join("xdg-config"))
            .env("XDG_STATE_HOME", self.path().join("xdg-state"))
            .env("XDG_DATA_HOME", self.path().join("xdg-data"))
            .env("XDG_CACHE_HOME", self.path().join("xdg-cache"))
            .env_remove("ANTLER_SEMANTIC_MODEL")
            .env_remove("ANTLER_MODELS_DIR")
            .env("ANTLER_LOG_FILE", self.log_file())
            .env_remove("ANTLER_DATA_DIR")
            .env_remove("ANTLER_MODEL")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("ANTLER_CONFIG")
            .env_remove("ANTLER_EXTENSIONS_CONFIG")
            .env_remove("ANTLER_LOG")
            .env_remove("RUST_LOG");
        cmd
    }

    /// Runs `antler ARGS --json`-style commands and parses stdout as JSON.
    pub(crate) fn json(&self, args: &[&str]) -> (Value, i32, String) {
        let out = self.antler().args(args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}"));
        (
            value,
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// The fixture MCP server binary (an example target), built on first use if a filtered
/// test run did not build it.
pub(crate) fn fixture_bin() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = PathBuf::from(env!("CARGO_BIN_EXE_antler"));
        let path = exe.parent().unwrap().join("examples").join("fixture_mcp");
        if !path.exists() {
            let status = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--example", "fixture_mcp"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .unwrap();
            assert!(status.success(), "building the fixture MCP server failed");
        }
        path
    })
}

/// The fixture as an `mcpServers` entry (stdio) with extra arguments.
pub(crate) fn fixture_stdio(args: &[&str]) -> Value {
    serde_json::json!({"command": fixture_bin(), "args": args})
}

/// A background server process, killed on drop.
pub(crate) struct ServerProcess {
    child: Child,
    pub url: String,
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the fixture over `http` or `sse` and waits for its `LISTENING <url>` line.
pub(crate) fn fixture_network(transport: &str, args: &[&str]) -> ServerProcess {
    let mut child = Command::new(fixture_bin())
        .args(["--transport", transport])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = first_line_matching(stdout, |line| line.starts_with("LISTENING "))
        .unwrap_or_else(|| panic!("the fixture ({transport}) never said LISTENING"));
    let base = line.trim().trim_start_matches("LISTENING ");
    let url = match transport {
        "http" => format!("{base}/mcp"),
        _ => format!("{base}/sse"),
    };
    ServerProcess { child, url }
}

/// Reads lines on a thread until one matches, for at most 20 s; the rest of the stream is
/// drained so the writer never blocks. `None` on end of stream or time-out.
fn first_line_matching(
    stream: impl std::io::Read + Send + 'static,
    matches: impl Fn(&str) -> bool + Send + 'static,
) -> Option<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if !sent && matches(&line) {
                sent = tx.send(line).is_ok();
            }
        }
    });
    rx.recv_timeout(std::time::Duration::from_secs(20)).ok()
}

/// Writes `{"mcpServers": servers}` as extensions_config.json into the sandbox.
pub(crate) fn write_extensions(sandbox: &Sandbox, servers: Value) -> PathBuf {
    let text = serde_json::to_string_pretty(&serde_json::json!({"mcpServers": servers})).unwrap();
    sandbox.write("extensions_config.json", &text)
}

/// Where `.ci/interop-deps` installed the third-party servers.
pub(crate) fn interop_dir() -> PathBuf {
    let dir = std::env::var_os("ANTLER_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/interop"));
    let everything =
        dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        everything.exists() && dir.join("venv/bin/mcp-server-time").exists(),
        "the interop MCP servers are not installed in {}: run `bash .ci/interop-deps` first",
        dir.display()
    );
    dir
}

/// server-everything's entry point.
pub(crate) fn everything_js() -> PathBuf {
    interop_dir().join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// Starts server-everything in `mode` (`sse` or `streamableHttp`) on a free port and waits
/// until it says it is listening. The port is chosen by binding and releasing it, so another
/// process may take it first: then the start is retried on a new port.
pub(crate) fn everything_network(mode: &str) -> ServerProcess {
    for _ in 0..3 {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let mut child = Command::new("node")
            .arg(everything_js())
            .arg(mode)
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let needle = port.to_string();
        let said = first_line_matching(stderr, move |line| line.contains(&needle));
        if said.is_some_and(|line| !line.contains("already in use")) {
            let path = if mode == "sse" { "sse" } else { "mcp" };
            return ServerProcess {
                child,
                url: format!("http://127.0.0.1:{port}/{path}"),
            };
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("server-everything {mode} did not start on any of three ports");
}

/// The statuses of `antler mcp list --json`, by server name.
pub(crate) fn status_of<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no server {name} in {list}"))
}

/// The `name`s of a JSON array such as `antler tools list --json` prints.
/// The names in a `tools list --json`, built-in tools left out (they are always there).
pub(crate) fn names_of(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .filter(|t| t["tier"] != "built-in" || t["name"] == "tool_search")
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

/// The API key the agent tests give antler (and look for in logs, errors and the store).
pub(crate) const TEST_API_KEY: &str = "sk-test-secret-4242";

/// `antler -m mock-model` in `sandbox`, pointed at `mock` through the environment.
pub(crate) fn agent(
    sandbox: &Sandbox,
    mock: &crate::mock_openai::MockOpenAi,
) -> assert_cmd::Command {
    assert_cmd::Command::from_std(agent_command(sandbox, mock))
}

/// [`agent`] with the permission policy as configured (no `--permission-mode allow-all`).
pub(crate) fn agent_asking(
    sandbox: &Sandbox,
    mock: &crate::mock_openai::MockOpenAi,
) -> assert_cmd::Command {
    let mut cmd = sandbox.antler_asking();
    cmd.env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .args(["-m", "mock-model"]);
    cmd
}

/// The same as [`agent`] as a plain `Command`, for tests that need the child.
pub(crate) fn agent_command(sandbox: &Sandbox, mock: &crate::mock_openai::MockOpenAi) -> Command {
    let mut cmd = sandbox.command();
    cmd.env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", TEST_API_KEY)
        .args(["-m", "mock-model"]);
    cmd
}

/// Calls `tool` with `arguments` outside any run.
pub(crate) async fn call_tool(
    tool: &dyn antler::tools::Tool,
    arguments: Value,
) -> antler::tools::ToolOutput {
    tool.call(antler::tools::ToolContext::standalone("test"), arguments)
        .await
}

/// Asserts that a run exited 0, showing its stderr when it did not.
pub(crate) fn assert_success(out: &std::process::Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `stream-json` output, one event a line.
pub(crate) fn events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

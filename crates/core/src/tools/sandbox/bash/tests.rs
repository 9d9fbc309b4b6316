use std::path::Path;

use serde_json::Map;

use super::*;
use crate::config::SandboxConfig;
use crate::tools::CallStandalone;
use crate::tools::ToolSource;
use crate::tools::sandbox::testing::{landlock_available, tool};
use crate::tools::sandbox::{LandlockStatus, landlock_status};

const ON: &[&str] = &["allow_host_bash: true"];
const LANDLOCK: &[&str] = &["allow_host_bash: true", "mode: landlock"];

async fn run(dir: &Path, extra: &str, sandbox: &[&str], command: &str) -> ToolOutput {
    tool(dir, "bash", extra, sandbox)
        .call_standalone(json!({ "command": command }))
        .await
}

#[tokio::test]
async fn disabled_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let bash = tool(dir.path(), "bash", "", &[]);
    assert!(bash.info().description.contains("disabled"));
    let out = bash.call_standalone(json!({"command": "touch made"})).await;
    assert_eq!(out, ToolOutput::error(DISABLED));
    assert!(!dir.path().join("made").exists());
}

#[tokio::test]
async fn runs_in_the_workspace_root_and_reports_the_exit() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let out = run(dir.path(), "", ON, "pwd").await;
    assert_eq!(
        out,
        ToolOutput::ok(format!("{}\n[exit code 0]", root.display()))
    );
    let out = run(dir.path(), "", ON, "echo out; echo err >&2; exit 3").await;
    assert_eq!(out, ToolOutput::error("out\n[stderr]\nerr\n[exit code 3]"));
    let out = run(dir.path(), "", ON, "kill -9 $$").await;
    assert_eq!(out, ToolOutput::error("[killed by signal 9]"));
    let out = run(dir.path(), "", ON, "true").await;
    assert_eq!(out, ToolOutput::ok("[exit code 0]"));
}

#[tokio::test]
async fn caps_each_stream_keeping_the_head() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        ", max_output_chars: 100",
        ON,
        "seq 1 10000; seq 1 10 >&2",
    )
    .await;
    assert!(!out.is_error, "{out:?}");
    let expected_head: String = (1..=100).map(|n| format!("{n}\n")).collect();
    let head = &expected_head[..100];
    assert!(out.content.starts_with(head), "{}", out.content);
    assert!(
        out.content.contains(
            "\n... [output cut: 48894 bytes in all, the first 100 characters shown]\n[stderr]\n1\n2\n"
        ),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    // The background sleep holds the output pipes: the call returns with the output
    // closed only if the timeout killed it along with the shell.
    let out = run(
        dir.path(),
        ", timeout_seconds: 1",
        ON,
        "echo started; sleep 30 & sleep 30",
    )
    .await;
    assert!(out.is_error, "{out:?}");
    assert_eq!(
        out.content,
        "Error: timed out after 1 s; the command and every process it started were killed. \
         Run long jobs in the background with their output redirected to a file. Output so \
         far:\nstarted"
    );
}

#[tokio::test]
async fn the_environment_is_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = SandboxRuntime::new(
        &SandboxConfig::default(),
        dir.path(),
        &crate::tools::sandbox::Protected::default(),
    )
    .unwrap();
    let parent_env = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("LC_ALL", String::from("C")),
        ("OPENAI_API_KEY", String::from("sk-secret")),
        ("ANTLER_TEST_SECRET", String::from("hush")),
    ]
    .map(|(k, v)| (OsString::from(k), OsString::from(v)));
    let info = ToolInfo {
        name: String::from("bash"),
        description: String::new(),
        parameters: json!({}),
        source: ToolSource::BuiltIn,
        metadata: Map::new(),
        parallel: false,
    };
    let env = exec::allowed_env(parent_env);
    let bash = Bash::new(info, runtime, true, env, Duration::from_secs(10), 10_000);
    let out = bash.call_standalone(json!({"command": "env"})).await;
    assert!(out.content.contains("LC_ALL=C\n"), "{out:?}");
    assert!(out.content.contains("PATH="), "{out:?}");
    assert!(!out.content.contains("sk-secret"), "{out:?}");
    assert!(!out.content.contains("ANTLER_TEST_SECRET"), "{out:?}");

    // The real environment too: whatever the child sees is allowed or set by bash itself.
    let out = run(dir.path(), "", ON, "env").await;
    for line in out.content.lines().filter(|l| !l.starts_with('[')) {
        let name = line.split_once('=').map_or(line, |(name, _)| name);
        assert!(
            exec::is_allowed(name)
                || ["PWD", "SHLVL", "_", "OLDPWD", "GIT_TERMINAL_PROMPT"].contains(&name),
            "{name} was passed to the command"
        );
    }
}

#[tokio::test]
async fn landlock_confines_bash_to_the_workspace() {
    if !landlock_available("landlock_confines_bash_to_the_workspace") {
        return;
    }
    let outer = tempfile::tempdir().unwrap();
    let ws = outer.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(outer.path().join("outside")).unwrap();
    std::fs::write(outer.path().join("outside/secret"), "s3cret").unwrap();

    // Unconfined, the same commands reach outside the workspace.
    let out = run(
        &ws,
        "",
        ON,
        "echo x > ../outside/plain && cat ../outside/secret",
    )
    .await;
    assert_eq!(out, ToolOutput::ok("s3cret\n[exit code 0]"));
    assert!(outer.path().join("outside/plain").exists());
    let out = run(&ws, "", ON, "cat /proc/$PPID/environ > /dev/null").await;
    assert!(!out.is_error, "{out:?}");

    let bash = tool(&ws, "bash", "", LANDLOCK);
    assert!(bash.info().description.contains("Landlock"));
    let call = |command: &str| bash.call_standalone(json!({ "command": command }));
    let out = call("echo x > ../outside/confined").await;
    assert!(
        out.is_error && out.content.contains("Permission denied"),
        "{out:?}"
    );
    assert!(!outer.path().join("outside/confined").exists());
    let out = call("cat ../outside/secret").await;
    assert!(
        out.is_error && out.content.contains("Permission denied"),
        "{out:?}"
    );
    // antler's own environment (API keys) is out of reach: Landlock scopes ptrace, which
    // CAP_SYS_PTRACE overrides, so this holds for non-root users only.
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    if !root {
        let out = call("cat /proc/$PPID/environ > /dev/null").await;
        assert!(
            out.is_error && out.content.contains("Permission denied"),
            "{out:?}"
        );
    }
    // Nor can it signal antler (from Landlock ABI 6, which scopes signals).
    if matches!(landlock_status(), LandlockStatus::Available { abi } if abi >= 6) {
        let out = call("kill -0 $PPID").await;
        assert!(out.is_error, "{out:?}");
    }
    // Inside the workspace and the private TMPDIR everything works, and programs run.
    let out =
        call("echo in > inside && cat inside && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"").await;
    assert_eq!(out, ToolOutput::ok("in\nt\n[exit code 0]"));
    assert!(!std::env::temp_dir().join("t").exists());
}

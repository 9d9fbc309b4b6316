//! [`start_and_serve`] over a real session with no model calls: what the front-end is told
//! while the servers start, what waits, and how the start ends.

use std::path::Path;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::{Served, start_and_serve};
use crate::config::ConfigPaths;
use crate::protocol::{Command, Update};
use crate::session::{Session, SessionError, SessionOptions};
use crate::setup::Setup;
use crate::trust::ProjectTrust;

/// The environment of a session in `root`: its own data folder, a model endpoint that is
/// never called.
fn env_in(root: &Path) -> impl Fn(&str) -> Option<String> + Sync + use<> {
    let root = root.to_path_buf();
    move |name: &str| match name {
        "HOME" => Some(root.display().to_string()),
        "XDG_DATA_HOME" => Some(root.join("data").display().to_string()),
        "XDG_CONFIG_HOME" => Some(root.join("config").display().to_string()),
        "XDG_STATE_HOME" => Some(root.join("state").display().to_string()),
        "OPENAI_BASE_URL" => Some(String::from("http://127.0.0.1:9/v1")),
        "OPENAI_API_KEY" => Some(String::from("sk-test")),
        _ => None,
    }
}

/// Starts and serves a session in `root` with `extensions` as its extensions file while
/// `drive` plays the front-end; returns how it ended.
async fn chat<F: Future<Output = ()>>(
    root: &Path,
    extensions: &str,
    drive: impl FnOnce(tokio::sync::mpsc::UnboundedSender<Command>, UnboundedReceiver<Update>) -> F,
) -> Served {
    let file = root.join("ext.json");
    std::fs::write(&file, extensions).unwrap();
    let paths = ConfigPaths {
        config: None,
        extensions: Some(file),
        overrides: Vec::new(),
    };
    let env = env_in(root);
    let mut setup = Setup::load(&paths, root, &env, &ProjectTrust::everything()).unwrap();
    let (progress, progress_receiver) = unbounded_channel();
    setup.report_server_progress(progress);
    let options = SessionOptions {
        model: Some(String::from("m")),
        max_turns: 5,
        clarify: true,
        ..SessionOptions::default()
    };
    let starting = Session::prepare(setup, &env, root, options).unwrap();
    let (commands, command_receiver) = unbounded_channel();
    let (updates, update_receiver) = unbounded_channel();
    let serve = start_and_serve(starting, &env, progress_receiver, command_receiver, updates);
    let both = async { tokio::join!(serve, drive(commands, update_receiver)).0 };
    tokio::time::timeout(Duration::from_secs(20), both)
        .await
        .expect("the chat ended in time")
}

#[tokio::test]
async fn servers_are_reported_then_ready_then_the_commands_that_waited_are_answered() {
    let dir = tempfile::tempdir().unwrap();
    let extensions = r#"{"mcpServers": {
        "broken": {"command": "/nonexistent/antler-test-no-such-server"},
        "invalid": {"type": "http"}
    }}"#;
    let served = chat(dir.path(), extensions, |commands, mut updates| async move {
        // Sent before the session is ready: answered after Ready.
        commands.send(Command::ShowMcp).unwrap();
        let mut seen = Vec::new();
        while let Some(update) = updates.recv().await {
            let done = matches!(update, Update::Mcp(_));
            seen.push(update);
            if done {
                break;
            }
        }
        let reported: Vec<_> = seen
            .iter()
            .map(|u| match u {
                Update::ServerReady(s) => format!("{} {}", s.name, s.status.as_str()),
                Update::Ready(info) => format!("ready {}↑ {}↓", info.mcp_up, info.mcp_down),
                Update::Mcp(servers) => format!("mcp {}", servers.len()),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            reported,
            ["broken failed", "invalid failed", "ready 0↑ 2↓", "mcp 2"]
        );
        let Some(Update::ServerReady(invalid)) = seen.get(1) else {
            unreachable!("checked above")
        };
        assert!(
            invalid
                .error
                .as_deref()
                .unwrap_or("")
                .contains("invalid configuration"),
            "{invalid:?}"
        );
        commands.send(Command::Quit).unwrap();
    })
    .await;
    assert!(matches!(served, Served::Closed), "{served:?}");
}

#[tokio::test]
async fn quit_while_a_server_starts_ends_the_start() {
    let dir = tempfile::tempdir().unwrap();
    // A server that never answers `initialize`: the start waits for its time-out.
    let extensions = r#"{"mcpServers": {
        "silent": {"command": "sh", "args": ["-c", "exec sleep 60"], "startup_timeout_secs": 60}
    }}"#;
    let served = chat(dir.path(), extensions, |commands, mut updates| async move {
        commands.send(Command::ShowTools).unwrap();
        commands.send(Command::Quit).unwrap();
        // The session closes the updates without a word: it never was ready.
        assert_eq!(updates.recv().await, None);
    })
    .await;
    assert!(matches!(served, Served::QuitWhileStarting), "{served:?}");
}

#[tokio::test]
async fn an_unusable_extensions_file_fails_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let served = chat(
        dir.path(),
        "{ not json",
        |_commands, mut updates| async move {
            assert_eq!(updates.recv().await, None);
        },
    )
    .await;
    assert!(
        matches!(served, Served::Failed(SessionError::Setup(_))),
        "{served:?}"
    );
}

#[tokio::test]
async fn model_accepts_a_raw_model_id_as_m_does() {
    let dir = tempfile::tempdir().unwrap();
    let served = chat(
        dir.path(),
        r#"{"mcpServers": {}}"#,
        |commands, mut updates| async move {
            while let Some(update) = updates.recv().await {
                if matches!(update, Update::Ready(_)) {
                    break;
                }
            }
            commands
                .send(Command::SwitchModel(String::from("some-raw-model-id")))
                .unwrap();
            loop {
                match updates.recv().await {
                    Some(Update::Info(info)) => {
                        assert_eq!(info.model, "some-raw-model-id");
                        break;
                    }
                    Some(Update::Error(err)) => panic!("refused: {err}"),
                    Some(_) => {}
                    None => panic!("the session ended"),
                }
            }
            commands.send(Command::Quit).unwrap();
        },
    )
    .await;
    assert!(matches!(served, Served::Closed), "{served:?}");
}

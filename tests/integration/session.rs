//! The interactive session through its public API: commands in, updates out, against the
//! mock model server and the fixture MCP server (what the TUI drives).

use std::time::Duration;

use antler::config::ConfigPaths;
use antler::protocol::Message;
use antler::protocol::{Command, Update};
use antler::protocol::{Event, RunStatus};
use antler::session::controller::serve;
use antler::session::{PermissionOptions, Session, SessionOptions};
use antler::setup::Setup;
use serde_json::json;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::mock_openai::{MockOpenAi, Reply};
use crate::support::*;

/// A running session over `sandbox`, driven through its channels.
struct Driver {
    commands: UnboundedSender<Command>,
    updates: UnboundedReceiver<Update>,
    task: tokio::task::JoinHandle<()>,
}

impl Driver {
    async fn start(sandbox: &Sandbox, mock: &MockOpenAi, options: SessionOptions) -> Self {
        let root = sandbox.path().to_path_buf();
        let base = mock.base_url();
        let (commands, receiver) = unbounded_channel();
        let (sender, updates) = unbounded_channel();
        let env = move |name: &str| match name {
            "OPENAI_BASE_URL" => Some(base.clone()),
            "OPENAI_API_KEY" => Some(String::from("sk-test")),
            "XDG_DATA_HOME" => Some(root.join("xdg-data").display().to_string()),
            "HOME" => Some(root.display().to_string()),
            _ => None,
        };
        let root = sandbox.path();
        let setup = Setup::load(
            &ConfigPaths::default(),
            root,
            &env,
            &antler::trust::ProjectTrust::everything(),
        )
        .unwrap();
        let options = SessionOptions {
            model: Some(String::from("mock-model")),
            max_turns: 10,
            clarify: true,
            ..options
        };
        let (session, questions) = Session::start(setup, &env, root, options).await.unwrap();
        let task = tokio::spawn(serve(session, receiver, questions, sender));
        Self {
            commands,
            updates,
            task,
        }
    }

    fn send(&self, command: Command) {
        self.commands.send(command).unwrap();
    }

    /// The next update that `pick` accepts, skipping others (10 s at most).
    async fn next<T>(&mut self, mut pick: impl FnMut(Update) -> Option<T>) -> T {
        let wait = async {
            loop {
                let update = self.updates.recv().await.expect("the session ended");
                if let Some(found) = pick(update) {
                    return found;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("no such update within 10 s")
    }

    async fn finished(&mut self) -> antler::protocol::RunResult {
        self.next(|u| match u {
            Update::Event(Event::RunFinished(result)) => Some(result),
            _ => None,
        })
        .await
    }

    async fn quit(self) {
        self.send(Command::Quit);
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .unwrap()
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_resume_and_new_threads() {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![Reply::text("First."), Reply::text("Second.")]);
    let mut driver = Driver::start(&sandbox, &mock, SessionOptions::default()).await;
    let info = driver
        .next(|u| match u {
            Update::Info(info) => Some(info),
            _ => None,
        })
        .await;
    assert_eq!(
        (info.model.as_str(), info.thread_id.as_str()),
        ("mock-model", "")
    );

    driver.send(Command::Submit("hello".into()));
    let running = driver
        .next(|u| match u {
            Update::Info(info) if info.running => Some(info),
            _ => None,
        })
        .await;
    assert_eq!(
        running.thread_title, "hello",
        "the new thread shows while it runs"
    );
    let result = driver.finished().await;
    assert_eq!(
        (result.status, result.result.as_str()),
        (RunStatus::Success, "First.")
    );
    let info = driver
        .next(|u| match u {
            Update::Info(info) if !info.running => Some(info),
            _ => None,
        })
        .await;
    assert_eq!(info.thread_id, result.thread_id);
    assert_eq!(info.thread_title, "hello");
    assert!(info.usage.input_tokens > 0);

    driver.send(Command::NewThread);
    let history = driver
        .next(|u| match u {
            Update::History(h) => Some(h),
            _ => None,
        })
        .await;
    assert!(history.is_empty());
    driver.send(Command::Submit("other".into()));
    let second = driver.finished().await;
    assert_ne!(second.thread_id, result.thread_id);

    driver.send(Command::Resume(result.thread_id[..6].to_string()));
    let history = driver
        .next(|u| match u {
            Update::History(h) => Some(h),
            _ => None,
        })
        .await;
    assert_eq!(history.len(), 2);
    assert!(matches!(&history[1], Message::Assistant { content, .. } if content == "First."));

    driver.send(Command::ListThreads);
    let threads = driver
        .next(|u| match u {
            Update::Threads(t) => Some(t),
            _ => None,
        })
        .await;
    assert_eq!(threads.len(), 2);
    driver.send(Command::Resume("nope".into()));
    let error = driver
        .next(|u| match u {
            Update::Error(e) => Some(e),
            _ => None,
        })
        .await;
    assert!(error.contains("nope"), "{error}");
    driver.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clarification_is_asked_and_answered_and_cancel_stops_a_run() {
    let sandbox = Sandbox::new();
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[(
            "q",
            "ask_clarification",
            json!({"question": "Which one?", "options": ["left", "right"]}),
        )]),
        Reply::text("Going right."),
        Reply::Stall(Vec::new()),
    ]);
    let mut driver = Driver::start(&sandbox, &mock, SessionOptions::default()).await;
    driver.send(Command::Submit("pick one".into()));
    let question = driver
        .next(|u| match u {
            Update::Clarify(q) => Some(q),
            _ => None,
        })
        .await;
    assert_eq!(question.question, "Which one?");
    assert_eq!(question.options, ["left", "right"]);
    assert_eq!(question.call_id, "q");
    // An answer to a question nobody asked changes nothing; the real one resumes the run.
    driver.send(Command::Answer {
        call_id: "nobody-asked".into(),
        answer: Some("left".into()),
    });
    driver.send(Command::Answer {
        call_id: question.call_id.clone(),
        answer: Some("right".into()),
    });
    let result = driver.finished().await;
    assert_eq!(result.result, "Going right.");
    assert!(
        mock.requests()[1].messages().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("right")
    );

    driver.send(Command::Submit("wait".into()));
    mock.wait_for_requests(3, Duration::from_secs(10));
    driver.send(Command::Cancel);
    let result = driver.finished().await;
    assert_eq!(result.status, RunStatus::Interrupted);
    driver.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_view_shows_deferred_promoted_and_bound_tools() {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    sandbox.write("config.yaml", "tool_search:\n  enabled: true\n");
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("s", "tool_search", json!({"query": "select:fx_echo"}))]),
        Reply::text("ok"),
    ]);
    let mut driver = Driver::start(&sandbox, &mock, SessionOptions::default()).await;
    driver.send(Command::Submit("find echo".into()));
    driver.finished().await;
    driver.send(Command::ShowTools);
    let view = driver
        .next(|u| match u {
            Update::Tools(v) => Some(v),
            _ => None,
        })
        .await;
    assert_eq!(view.promoted, ["fx_echo"]);
    assert!(view.deferred.contains(&"fx_add".to_string()));
    assert!(view.bound.contains(&"tool_search".to_string()));
    assert!(view.bound.contains(&"ask_clarification".to_string()));
    assert_eq!(view.catalog_hash.as_ref().map(String::len), Some(16));
    driver.send(Command::ReconnectMcp(Some("fx".into())));
    let servers = driver
        .next(|u| match u {
            Update::Mcp(s) => Some(s),
            _ => None,
        })
        .await;
    assert_eq!(servers[0].status, antler::protocol::ServerState::Connected);
    driver.quit().await;
}

/// Under Landlock the sandbox's rules name the running thread's outputs folder, so a
/// session that switches threads confines `bash` anew: the new thread's shell reads its
/// own saved outputs and not the previous thread's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_landlock_a_new_thread_gets_a_sandbox_of_its_own() {
    use antler::tools::sandbox::{LandlockStatus, landlock_status};
    if !matches!(landlock_status(), LandlockStatus::Available { .. }) {
        eprintln!("skipped: Landlock is {}", landlock_status());
        return;
    }
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.path().join("ws")).unwrap();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    sandbox.write(
        "config.yaml",
        "tool_output:\n  max_chars: 250\nsandbox:\n  workspace: ws\n  mode: landlock\n  \
         allow_host_bash: true\ntools:\n  - {name: bash, use: antler.sandbox:bash}\n",
    );
    let outputs = sandbox.path().join("xdg-data/antler/outputs");
    let saved = |thread: &str| outputs.join(thread).join("fx_echo-e.txt");
    let cat = |path: std::path::PathBuf| json!({"command": format!("cat {}", path.display())});
    let long = "output-of-thread-one ".repeat(20);
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("e", "fx_echo", json!({"text": long}))]),
        Reply::text("saved"),
    ]);
    // The sandbox is under test: its calls run without asking.
    let allow_all = SessionOptions {
        permissions: PermissionOptions {
            allow_all: true,
            ..PermissionOptions::default()
        },
        ..SessionOptions::default()
    };
    let mut driver = Driver::start(&sandbox, &mock, allow_all).await;
    driver.send(Command::Submit("one".into()));
    let first = driver.finished().await.thread_id;
    assert!(saved(&first).is_file());
    mock.push(Reply::tool_calls(&[("r", "bash", cat(saved(&first)))]));
    mock.push(Reply::text("one done"));
    driver.send(Command::Submit("read it".into()));
    assert_eq!(driver.finished().await.status, RunStatus::Success);
    let own = mock.requests()[3].messages().last().unwrap()["content"].clone();
    assert!(
        own.as_str().unwrap().contains("output-of-thread-one"),
        "a thread's shell reads its own outputs: {own}"
    );

    driver.send(Command::NewThread);
    mock.push(Reply::tool_calls(&[("r", "bash", cat(saved(&first)))]));
    mock.push(Reply::text("two done"));
    driver.send(Command::Submit("two".into()));
    let second = driver.finished().await;
    assert_ne!(second.thread_id, first);
    let theirs = mock.requests()[5].messages().last().unwrap()["content"].clone();
    let theirs = theirs.as_str().unwrap();
    assert!(
        !theirs.contains("output-of-thread-one") && theirs.contains("Permission denied"),
        "another thread's outputs are out of reach: {theirs}"
    );
    driver.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_shows_the_first_call_then_the_threads_ledger() {
    let sandbox = Sandbox::new();
    write_extensions(&sandbox, json!({"fx": fixture_stdio(&[])}));
    sandbox.write("config.yaml", "tool_search:\n  enabled: true\n");
    let mock = MockOpenAi::start(vec![
        Reply::tool_calls(&[("c1", "fx_echo", json!({"text": "hi"}))]),
        Reply::text("done"),
    ]);
    let mut driver = Driver::start(&sandbox, &mock, SessionOptions::default()).await;
    let context = |u| match u {
        Update::Context(view) => Some(view),
        _ => None,
    };
    driver.send(Command::ShowContext);
    let before = driver.next(context).await;
    assert_eq!(before.thread.runs, 0);
    let first = before.next.expect("a first call");
    assert_eq!(first.calls.len(), 1);
    assert!(first.calls[0].system > first.listing_tokens && first.listing_tokens > 0);
    assert_eq!(first.servers[0].name, "fx");

    driver.send(Command::Submit("echo hi".into()));
    let result = driver.finished().await;
    let run = result.ledger.expect("the chat takes every ledger");
    assert_eq!(run.totals.calls, 2);
    driver.send(Command::ShowContext);
    let after = driver.next(context).await;
    assert_eq!(after.thread.runs, 1);
    assert_eq!(after.thread.totals, run.totals);
    let next = after.next.expect("the next call");
    // The next call is sent everything so far: the echo's call and result included.
    assert!(next.calls[0].results > 0 && next.calls[0].history > first.calls[0].history);
    driver.quit().await;
}

/// The next approval request of a run, or its end (`None`) when it asks nothing.
async fn approval_or_end(driver: &mut Driver) -> Option<antler::protocol::ApprovalRequest> {
    driver
        .next(|u| match u {
            Update::Event(Event::ApprovalRequested { request, .. }) => Some(Some(request)),
            Update::Event(Event::RunFinished(_)) => Some(None),
            _ => None,
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_always_approval_holds_until_the_tools_schema_changes() {
    use antler::protocol::ApprovalAnswer;
    let sandbox = Sandbox::new();
    sandbox.write("config.yaml", "tool_search:\n  enabled: false\n");
    let schema = |property: &str| {
        format!(
            r#"{{"s": [{{"name": "act", "description": "Acts.",
                "inputSchema": {{"type": "object", "properties": {{"{property}": {{"type": "string"}}}}}}}}]}}"#
        )
    };
    let catalog = sandbox.write("catalog.json", &schema("x"));
    let mut entry = fixture_stdio(&["--catalog", catalog.to_str().unwrap()]);
    // Listed at every start, so that a changed schema is seen at once.
    entry["start"] = json!("eager");
    write_extensions(&sandbox, json!({"fx": entry}));
    let call = |id: &str| Reply::tool_calls(&[(id, "fx_act", json!({"x": "1"}))]);
    let mock = MockOpenAi::start(vec![
        call("a"),
        Reply::text("one"),
        call("b"),
        Reply::text("two"),
    ]);

    let mut driver = Driver::start(&sandbox, &mock, SessionOptions::default()).await;
    driver.send(Command::Submit(String::from("first")));
    let request = approval_or_end(&mut driver)
        .await
        .expect("the MCP call asks");
    assert_eq!(
        (request.tool.as_str(), request.server.as_deref()),
        ("fx_act", Some("fx"))
    );
    let always = request.always.clone().expect("always is offered");
    assert!(always.contains("until its schema changes"), "{always}");
    driver.send(Command::Approve {
        id: request.id,
        answer: ApprovalAnswer::Always,
    });
    assert_eq!(approval_or_end(&mut driver).await, None);
    assert!(mock.requests()[1].tool_result("a").contains("called act"));

    // Kept for the project: the next call does not ask.
    driver.send(Command::Submit(String::from("second")));
    assert_eq!(approval_or_end(&mut driver).await, None, "asked again");
    assert!(mock.requests()[3].tool_result("b").contains("called act"));
    driver.quit().await;

    // The server changes the tool's schema: the approval lapses and the user is asked.
    sandbox.write("catalog.json", &schema("y"));
    mock.push(call("c"));
    mock.push(Reply::text("three"));
    let mut driver = Driver::start(&sandbox, &mock, SessionOptions::default()).await;
    driver.send(Command::Submit(String::from("third")));
    let request = approval_or_end(&mut driver)
        .await
        .expect("a changed schema asks again");
    driver.send(Command::Approve {
        id: request.id,
        answer: ApprovalAnswer::Deny {
            message: Some(String::from("not with the new schema")),
        },
    });
    assert_eq!(approval_or_end(&mut driver).await, None);
    let result = mock.requests()[5].tool_result("c");
    assert!(
        result.contains("the user declined") && result.contains("not with the new schema"),
        "{result}"
    );
    driver.quit().await;
}

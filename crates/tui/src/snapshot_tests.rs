//! Snapshots of the main views, rendered on a `TestBackend` (colours off) from scripted
//! updates. Review changes with `cargo insta review` (or `INSTA_UPDATE=always`).

use crossterm::event::{KeyCode, KeyModifiers, MouseEvent, MouseEventKind};
use insta::assert_snapshot;
use serde_json::json;

use super::test_support::*;
use antler_protocol::ServerState;
use antler_protocol::Update;
use antler_protocol::{ErrorKind, FinishReason};
use antler_protocol::{Event, RunStatus};
use antler_protocol::{Message, ToolCall};

const ANSWER: &str = "## Build plan\n\nThree steps:\n\n1. Run `cargo fmt`\n2. Fix the **warnings**\n   - unused imports\n3. Commit\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n| step | time |\n|------|-----:|\n| fmt | 1 s |\n| clippy | 40 s |\n";

fn asked(app: &mut super::app::App, text: &str) {
    type_text(app, text);
    app.key(key(KeyCode::Enter));
}

#[test]
fn welcome() {
    assert_snapshot!(render(&mut app(), 80, 12));
}

#[test]
fn start_up_with_one_server_ready_and_one_failed() {
    let mut app = starting_app();
    app.update(Update::ServerReady(server(
        "github",
        ServerState::Connected,
        None,
    )));
    app.update(Update::ServerReady(server(
        "jira",
        ServerState::Failed,
        Some("connection closed: initialize request (exit status: 127)"),
    )));
    asked(&mut app, "Summarise the open issues");
    for _ in 0..3 {
        app.tick();
    }
    assert_snapshot!(render(&mut app, 80, 12));
}

#[test]
fn streaming_answer_midway() {
    let mut app = app();
    asked(&mut app, "How do I tidy the build?");
    let half = &ANSWER[..ANSWER.find("fn main").unwrap() + 12];
    events(
        &mut app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            Event::ReasoningDelta {
                turn: 1,
                text: "The user wants a plan. ".into(),
            },
            Event::ReasoningDelta {
                turn: 1,
                text: "List the steps, then show code.".into(),
            },
            text(half),
        ],
    );
    for _ in 0..13 {
        app.tick();
    }
    assert_snapshot!(render(&mut app, 80, 24));
}

#[test]
fn reasoning_streams_dimmed_and_collapsed_to_its_tail() {
    let mut app = app();
    asked(&mut app, "Think");
    let thought =
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen";
    events(
        &mut app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            Event::ReasoningDelta {
                turn: 1,
                text: thought.into(),
            },
        ],
    );
    let screen = render(&mut app, 24, 14);
    assert!(screen.contains("▸ Thinking…"), "{screen}");
    assert!(
        screen.contains("thirteen fourteen") && !screen.contains("one two"),
        "{screen}"
    );
    app.key(chord(KeyCode::Char('o'), KeyModifiers::CONTROL));
    assert!(render(&mut app, 24, 14).contains("one two"));
}

#[test]
fn complete_answer_with_markdown() {
    let mut app = app();
    asked(&mut app, "How do I tidy the build?");
    events(
        &mut app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            Event::ReasoningDelta {
                turn: 1,
                text: "The user wants a plan.".into(),
            },
            text(ANSWER),
            Event::FilesPresented {
                turn: 1,
                files: vec!["docs/plan.md".into()],
            },
            turn_completed(1, FinishReason::Stop),
            run_finished(RunStatus::Success, vec![]),
        ],
    );
    assert_snapshot!(render(&mut app, 80, 34));
}

fn tool_run(app: &mut super::app::App) {
    asked(app, "Look around");
    events(
        app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            turn_completed(1, FinishReason::ToolCalls),
            tool_started(
                "c1",
                "read_file",
                json!({"path": "src/main.rs", "start_line": 1}),
            ),
            tool_started(
                "c2",
                "bash",
                json!({"command": "cargo test --lib 2>&1 | tail -n 40"}),
            ),
            tool_started(
                "c3",
                "github_list_issues",
                json!({"owner": "acme", "repo": "antler", "state": "open"}),
            ),
            tool_finished(
                "c1",
                "read_file",
                false,
                "     1\t//! antler\n     2\t\n     3\tfn main() {\n     4\t    run();\n     5\t}\n",
                12,
            ),
            tool_finished(
                "c3",
                "github_list_issues",
                true,
                "Error: 401 Unauthorized\nCheck the token.",
                1530,
            ),
        ],
    );
}

#[test]
fn tool_cards_running_ok_and_failed() {
    let mut app = app();
    tool_run(&mut app);
    app.tick();
    assert_snapshot!(render(&mut app, 80, 20));
}

#[test]
fn a_running_card_shows_its_latest_progress() {
    let mut app = app();
    asked(&mut app, "Index it");
    events(
        &mut app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            turn_completed(1, FinishReason::ToolCalls),
            tool_started("c1", "search_index_build", json!({"path": "docs"})),
            Event::ToolProgress {
                turn: 1,
                call_id: "c1".into(),
                progress: 1.0,
                total: Some(4.0),
                message: Some("reading files".into()),
            },
            Event::ToolProgress {
                turn: 1,
                call_id: "c1".into(),
                progress: 3.0,
                total: Some(4.0),
                message: Some("writing the index".into()),
            },
        ],
    );
    let running = render(&mut app, 80, 12);
    assert!(running.contains("3/4 · writing the index"), "{running}");
    assert!(
        !running.contains("reading files"),
        "only the latest: {running}"
    );
    assert_snapshot!(running);
    events(
        &mut app,
        vec![tool_finished(
            "c1",
            "search_index_build",
            false,
            "indexed 12 files",
            800,
        )],
    );
    assert!(
        !render(&mut app, 80, 12).contains("writing the index"),
        "gone once it returns"
    );
}

#[test]
fn tool_cards_expanded() {
    let mut app = app();
    tool_run(&mut app);
    app.key(chord(KeyCode::Char('o'), KeyModifiers::CONTROL));
    assert_snapshot!(render(&mut app, 80, 30));
}

#[test]
fn a_click_expands_one_card() {
    let mut app = app();
    tool_run(&mut app);
    let before = render(&mut app, 80, 30);
    let row = before
        .lines()
        .position(|l| l.contains("read_file"))
        .unwrap();
    let click = |kind| MouseEvent {
        kind,
        column: 4,
        row: u16::try_from(row).unwrap(),
        modifiers: KeyModifiers::NONE,
    };
    assert!(app.mouse(click(MouseEventKind::Down(
        crossterm::event::MouseButton::Left
    ))));
    let after = render(&mut app, 80, 30);
    assert!(after.contains("\"start_line\": 1"), "{after}");
    assert!(
        !after.contains("\"owner\": \"acme\""),
        "other cards stay collapsed:\n{after}"
    );
}

#[test]
fn tool_search_promotion() {
    let mut app = app();
    asked(&mut app, "File an issue about the flaky test");
    events(
        &mut app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            tool_started(
                "s1",
                "tool_search",
                json!({"query": "github issues create"}),
            ),
            tool_finished("s1", "tool_search", false, "<functions>…</functions>", 8),
            Event::ToolsPromoted {
                turn: 1,
                added: vec!["github_create_issue".into(), "github_list_issues".into()],
                removed: vec!["slack_post_message".into()],
                promoted: vec![
                    "github_create_issue".into(),
                    "github_list_issues".into(),
                    "time_now".into(),
                ],
                catalog_hash: Some("3f9a12c0deadbeef".into()),
            },
            Event::TurnStarted { turn: 2 },
            Event::ToolsPromoted {
                turn: 2,
                added: vec!["time_now".into()],
                removed: vec![],
                promoted: vec![
                    "github_create_issue".into(),
                    "github_list_issues".into(),
                    "time_now".into(),
                ],
                catalog_hash: Some("3f9a12c0deadbeef".into()),
            },
        ],
    );
    assert_snapshot!(render(&mut app, 80, 18));
}

#[test]
fn subagent_events_nest_under_their_task_card() {
    let mut app = app();
    asked(&mut app, "Research both crates");
    let sub = |event: Event| Event::Subagent {
        parent_call_id: "t1".into(),
        subagent: 1,
        description: "compare crates".into(),
        event: Box::new(event),
    };
    events(
        &mut app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            tool_started(
                "t1",
                "task",
                json!({"description": "compare crates", "prompt": "Compare ratatui and cursive"}),
            ),
            sub(Event::TurnStarted { turn: 1 }),
            sub(tool_started(
                "w1",
                "web_fetch",
                json!({"url": "https://docs.rs/ratatui"}),
            )),
            sub(tool_finished("w1", "web_fetch", false, "# ratatui", 420)),
            sub(tool_started(
                "w2",
                "web_fetch",
                json!({"url": "https://docs.rs/cursive"}),
            )),
            sub(text("ratatui is immediate-mode; cursive keeps a tree.")),
        ],
    );
    assert_snapshot!(render(&mut app, 80, 14));
}

#[test]
fn errors_notices_and_a_retry() {
    let mut app = app();
    asked(&mut app, "Summarise the log");
    events(
        &mut app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            text("The log shows"),
            Event::Retrying {
                turn: 1,
                attempt: 2,
                delay_ms: 1500,
                reason: "HTTP 503: overloaded".into(),
            },
            text("Half an answer that"),
            Event::Notice {
                turn: 1,
                message: "The answer was cut at the token limit.".into(),
            },
            Event::TurnFailed {
                turn: 1,
                kind: ErrorKind::Transport,
                error: "the stream ended early".into(),
            },
            run_finished(
                RunStatus::Failed,
                vec![
                    "the stream ended early".into(),
                    "turn limit (50) reached".into(),
                ],
            ),
        ],
    );
    app.update(Update::Error("No thread matches 'zz'.".into()));
    assert_snapshot!(render(&mut app, 80, 16));
}

#[test]
fn narrow_terminal() {
    let mut app = app();
    asked(
        &mut app,
        "Explain the table in sixty columns, please, and wrap this long question",
    );
    events(
        &mut app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            text(ANSWER),
            turn_completed(1, FinishReason::Stop),
            run_finished(RunStatus::Success, vec![]),
        ],
    );
    tool_run(&mut app);
    assert_snapshot!(render(&mut app, 60, 20));
}

#[test]
fn history_after_resume_and_scrolling() {
    let mut app = app();
    let mut messages = Vec::new();
    for i in 1..=6 {
        messages.push(Message::User {
            content: format!("Question {i}"),
        });
        messages.push(Message::Assistant {
            content: String::new(),
            reasoning: String::new(),
            tool_calls: vec![ToolCall {
                id: format!("c{i}"),
                name: "glob".into(),
                arguments: "{\"pattern\": \"**/*.rs\"}".into(),
            }],
        });
        messages.push(Message::Tool {
            call_id: format!("c{i}"),
            name: "glob".into(),
            content: "src/a.rs\nsrc/b.rs".into(),
            is_error: false,
        });
        messages.push(Message::Assistant {
            content: format!("Answer **{i}**."),
            reasoning: String::new(),
            tool_calls: vec![],
        });
    }
    app.update(Update::History(messages));
    let bottom = render(&mut app, 60, 20);
    assert!(bottom.contains("Answer 6."));
    app.mouse(MouseEvent {
        kind: MouseEventKind::ScrollUp,
        column: 0,
        row: 0,
        modifiers: KeyModifiers::NONE,
    });
    app.key(key(KeyCode::PageUp));
    assert_snapshot!(render(&mut app, 60, 20));
    // New output does not move a scrolled-up view; End follows again.
    events(
        &mut app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            text("new text"),
        ],
    );
    assert!(!render(&mut app, 60, 20).contains("new text"));
    app.key(key(KeyCode::End));
    assert!(render(&mut app, 60, 20).contains("new text"));
}

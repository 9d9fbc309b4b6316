//! Key handling: which keys produce which commands.

use crossterm::event::{KeyCode, KeyModifiers};

use super::test_support::*;
use super::transcript::Entry;
use antler_protocol::ClarificationRequest;
use antler_protocol::RunStatus;
use antler_protocol::SessionInfo;
use antler_protocol::ThreadMeta;
use antler_protocol::{Command, Update};
use antler_protocol::{ServerState, ServerStatus};

fn enter() -> crossterm::event::KeyEvent {
    key(KeyCode::Enter)
}

#[test]
fn enter_sends_and_shift_or_alt_enter_add_a_line() {
    let mut app = app();
    type_text(&mut app, "first");
    assert!(
        app.key(chord(KeyCode::Enter, KeyModifiers::SHIFT))
            .is_empty()
    );
    type_text(&mut app, "second");
    assert!(app.key(chord(KeyCode::Enter, KeyModifiers::ALT)).is_empty());
    type_text(&mut app, "third");
    assert!(
        app.key(chord(KeyCode::Char('j'), KeyModifiers::CONTROL))
            .is_empty()
    );
    type_text(&mut app, "fourth\\");
    assert!(
        app.key(enter()).is_empty(),
        "a trailing backslash continues the line"
    );
    type_text(&mut app, "fifth");
    assert_eq!(
        app.key(enter()),
        [Command::Submit(
            "first\nsecond\nthird\nfourth\nfifth".into()
        )]
    );
    assert!(app.key(enter()).is_empty(), "an empty box sends nothing");
}

#[test]
fn pasted_text_keeps_its_lines_until_enter() {
    let mut app = app();
    app.paste("line one\r\nline two\n");
    assert_eq!(
        app.key(enter()),
        [Command::Submit("line one\nline two".into())]
    );
}

#[test]
fn up_and_down_browse_the_history_and_keep_the_draft() {
    let mut app = app();
    type_text(&mut app, "one");
    app.key(enter());
    events(
        &mut app,
        vec![run_started(), run_finished(RunStatus::Success, vec![])],
    );
    type_text(&mut app, "two");
    app.key(enter());
    events(
        &mut app,
        vec![run_started(), run_finished(RunStatus::Success, vec![])],
    );
    type_text(&mut app, "draft");
    app.key(key(KeyCode::Up));
    app.key(key(KeyCode::Up));
    assert_eq!(app.key(enter()), [Command::Submit("one".into())]);
    events(
        &mut app,
        vec![run_started(), run_finished(RunStatus::Success, vec![])],
    );
    type_text(&mut app, "draft");
    app.key(key(KeyCode::Up));
    app.key(key(KeyCode::Down));
    assert_eq!(app.key(enter()), [Command::Submit("draft".into())]);
}

/// The chat with a message sent and its run started.
fn running() -> super::app::App {
    let mut app = app();
    type_text(&mut app, "go");
    app.key(enter());
    events(&mut app, vec![run_started()]);
    app
}

#[test]
fn ctrl_c_cancels_then_quits_when_pressed_again_soon() {
    let ctrl_c = chord(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let mut app = running();
    assert_eq!(app.key(ctrl_c), [Command::Cancel]);
    assert_eq!(app.key(ctrl_c), [Command::Quit]);

    // Later than the window, a second Ctrl-C cancels again.
    let mut app = super::test_support::app();
    events(&mut app, vec![run_started()]);
    assert_eq!(app.key(ctrl_c), [Command::Cancel]);
    for _ in 0..30 {
        app.tick();
    }
    assert_eq!(app.key(ctrl_c), [Command::Cancel]);

    // Idle: it clears the input first; on an empty line it quits.
    let mut app = super::test_support::app();
    type_text(&mut app, "half a thought");
    assert!(app.key(ctrl_c).is_empty());
    assert!(
        render(&mut app, 60, 10).contains("Ask anything"),
        "the input was cleared"
    );
    assert_eq!(app.key(ctrl_c), [Command::Quit]);
    assert_eq!(super::test_support::app().key(ctrl_c), [Command::Quit]);

    // Typing after a Ctrl-C starts afresh: the next one clears again, it does not quit.
    let mut app = super::test_support::app();
    type_text(&mut app, "one");
    assert!(app.key(ctrl_c).is_empty());
    type_text(&mut app, "two");
    assert!(app.key(ctrl_c).is_empty(), "cleared again, not quit");
    assert_eq!(app.key(ctrl_c), [Command::Quit]);
}

#[test]
fn esc_cancels_the_running_turn_only() {
    let mut app = app();
    assert!(app.key(key(KeyCode::Esc)).is_empty());
    type_text(&mut app, "go");
    app.key(enter());
    assert_eq!(app.key(key(KeyCode::Esc)), [Command::Cancel]);
}

#[test]
fn messages_typed_during_a_run_are_queued_and_sent_when_it_ends() {
    let mut app = app();
    type_text(&mut app, "first");
    app.key(enter());
    events(&mut app, vec![run_started()]);
    type_text(&mut app, "second");
    assert!(app.key(enter()).is_empty());
    assert!(render(&mut app, 60, 12).contains("queued  second"));
    let sent = events(&mut app, vec![run_finished(RunStatus::Success, vec![])]);
    assert_eq!(sent, [Command::Submit("second".into())]);

    // A cancelled run gives the queued text back instead.
    events(&mut app, vec![run_started()]);
    type_text(&mut app, "third");
    app.key(enter());
    app.key(key(KeyCode::Esc));
    assert!(events(&mut app, vec![run_finished(RunStatus::Interrupted, vec![])]).is_empty());
    events(&mut app, vec![]);
    assert_eq!(app.key(enter()), [Command::Submit("third".into())]);
}

#[test]
fn a_message_typed_while_the_session_starts_is_sent_once_it_is_ready() {
    let mut app = starting_app();
    type_text(&mut app, "first");
    assert!(
        app.key(enter()).is_empty(),
        "nothing is sent before the session is ready"
    );
    type_text(&mut app, "second");
    assert!(app.key(enter()).is_empty());
    let screen = render(&mut app, 60, 12);
    assert!(
        screen.contains("queued  first") && screen.contains("starting MCP servers"),
        "{screen}"
    );
    app.update(Update::ServerReady(server(
        "github",
        ServerState::Idle,
        None,
    )));
    assert!(render(&mut app, 60, 12).contains("starting MCP servers: 1 ready"));

    let ready = SessionInfo {
        model: "gpt-4.1".into(),
        mcp_up: 1,
        ..SessionInfo::default()
    };
    assert_eq!(
        app.update(Update::Ready(ready)),
        [Command::Submit("first".into())],
        "the first waiting message goes when the session is ready"
    );
    assert!(app.running(), "and runs");
    let screen = render(&mut app, 60, 12);
    assert!(!screen.contains("starting MCP servers"), "{screen}");
    assert!(
        screen.contains("› first") && screen.contains("queued  second"),
        "{screen}"
    );
    let sent = events(
        &mut app,
        vec![run_started(), run_finished(RunStatus::Success, vec![])],
    );
    assert_eq!(
        sent,
        [Command::Submit("second".into())],
        "the next after the run"
    );
}

#[test]
fn ctrl_c_while_starting_takes_waiting_messages_back_then_quits() {
    let ctrl_c = chord(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let mut app = starting_app();
    type_text(&mut app, "hello");
    app.key(enter());
    assert!(app.key(ctrl_c).is_empty(), "the first Ctrl-C does not quit");
    assert!(
        render(&mut app, 60, 10).contains("› hello"),
        "back in the box"
    );
    assert_eq!(app.key(ctrl_c), [Command::Quit], "the second one quits");
    assert!(app.interrupted, "the start was interrupted (exit 130)");
    // With nothing waiting, one Ctrl-C quits at once, as before the screen was up.
    let mut app = starting_app();
    assert_eq!(app.key(ctrl_c), [Command::Quit]);
    assert!(app.interrupted);
    // Once the session is ready, quitting is no interruption; nor is /quit before.
    let mut app = starting_app();
    assert!(app.update(Update::Ready(SessionInfo::default())).is_empty());
    assert_eq!(app.key(ctrl_c), [Command::Quit]);
    let mut quit = starting_app();
    type_text(&mut quit, "/quit");
    quit.key(key(KeyCode::Esc));
    assert_eq!(quit.key(enter()), [Command::Quit]);
    assert!(!app.interrupted && !quit.interrupted);
}

#[test]
fn a_server_that_fails_is_announced_and_background_notices_are_shown() {
    let mut app = starting_app();
    app.update(Update::ServerReady(server(
        "jira",
        ServerState::Failed,
        Some("spawn failed"),
    )));
    app.update(Update::Ready(SessionInfo::default()));
    app.update(Update::Notice("could not refresh `github`".into()));
    let entries: Vec<_> = app.transcript.entries().cloned().collect();
    assert_eq!(
        entries,
        [
            Entry::Notice(
                "MCP server `jira` failed to start: spawn failed · /mcp to reconnect".into()
            ),
            Entry::Notice("could not refresh `github`".into()),
        ]
    );
    assert!(!app.running(), "a notice does not touch the run");
    type_text(&mut app, "/mcp");
    assert_eq!(app.key(enter()), [Command::ShowMcp]);
    assert!(
        render(&mut app, 70, 14).contains("jira"),
        "/mcp shows what start-up reported"
    );
}

#[test]
fn slash_commands_complete_with_tab_and_run_from_the_popup() {
    let mut app = app();
    type_text(&mut app, "/mo");
    app.key(key(KeyCode::Tab));
    assert_eq!(
        app.key(enter()),
        Vec::<Command>::new(),
        "/model opens the picker"
    );
    app.key(key(KeyCode::Down));
    assert_eq!(app.key(enter()), [Command::SwitchModel("o4-mini".into())]);

    type_text(&mut app, "/re");
    assert_eq!(app.key(enter()), [Command::ListThreads]);
    let thread = |id: &str, title: &str| ThreadMeta {
        id: id.into(),
        title: title.into(),
        cwd: "/w".into(),
        model: "gpt-4.1".into(),
        created_at: 1_700_000_000,
        updated_at: 1_700_000_600,
        usage: Default::default(),
        message_count: 4,
    };
    app.update(Update::Threads(vec![
        thread("aaaa11112222", "Alpha"),
        thread("bbbb33334444", "Beta"),
    ]));
    type_text(&mut app, "bet");
    assert_eq!(app.key(enter()), [Command::Resume("bbbb33334444".into())]);

    for (typed, expected) in [
        ("/new", Command::NewThread),
        ("/resume 3f9a", Command::Resume("3f9a".into())),
        ("/model o4-mini", Command::SwitchModel("o4-mini".into())),
        ("/quit", Command::Quit),
    ] {
        type_text(&mut app, typed);
        app.key(key(KeyCode::Esc)); // hide the popup: Enter submits the typed line
        assert_eq!(app.key(enter()), [expected], "{typed}");
    }
    type_text(&mut app, "/nope");
    app.key(key(KeyCode::Esc));
    assert!(app.key(enter()).is_empty());
    assert!(render(&mut app, 80, 10).contains("Unknown command /nope"));
}

#[test]
fn tools_and_mcp_views_ask_the_core_and_mcp_reconnects() {
    let mut app = app();
    type_text(&mut app, "/tools");
    assert_eq!(app.key(enter()), [Command::ShowTools]);
    app.key(key(KeyCode::Esc));
    type_text(&mut app, "/mcp");
    assert_eq!(app.key(enter()), [Command::ShowMcp]);
    let server = |name: &str, status: ServerState| ServerStatus {
        name: name.into(),
        transport: "stdio".into(),
        status,
        error: None,
        tool_count: 3,
        protocol_version: None,
        manifest_age_secs: None,
        server_info: None,
        instructions_chars: None,
        capabilities: Vec::new(),
        needs_login: false,
        startup_ms: Some(120),
    };
    app.update(Update::Mcp(vec![
        server("github", ServerState::Connected),
        server("slack", ServerState::Failed),
    ]));
    app.key(key(KeyCode::Down));
    assert_eq!(
        app.key(key(KeyCode::Char('r'))),
        [Command::ReconnectMcp(Some("slack".into()))]
    );
    assert_eq!(
        app.key(key(KeyCode::Char('a'))),
        [Command::ReconnectMcp(None)]
    );
    app.key(key(KeyCode::Esc));
    assert_eq!(type_text(&mut app, "x"), Vec::<Command>::new());
}

fn question(id: &str, options: &[&str]) -> ClarificationRequest {
    ClarificationRequest {
        call_id: id.into(),
        question: "Which colour?".into(),
        options: options.iter().map(|o| o.to_string()).collect(),
    }
}

fn answered(id: &str, answer: Option<&str>) -> Vec<Command> {
    vec![Command::Answer {
        call_id: id.into(),
        answer: answer.map(String::from),
    }]
}

#[test]
fn a_question_is_answered_with_an_option_or_free_text_or_skipped() {
    let mut app = app();
    app.update(Update::Clarify(question("q1", &["red", "blue"])));
    app.key(key(KeyCode::Down));
    assert_eq!(app.key(enter()), answered("q1", Some("blue")));

    app.update(Update::Clarify(question("q2", &["red", "blue"])));
    type_text(&mut app, "green");
    assert_eq!(app.key(enter()), answered("q2", Some("green")));

    app.update(Update::Clarify(question("q3", &[])));
    assert_eq!(app.key(key(KeyCode::Esc)), answered("q3", None));
    assert!(render(&mut app, 60, 16).contains("(no answer)"));
}

#[test]
fn the_questions_of_a_finished_run_are_closed() {
    let mut app = app();
    app.update(Update::Event(run_started()));
    app.update(Update::Clarify(question("q1", &["a"])));
    app.update(Update::Clarify(question("q2", &["b"])));
    app.update(Update::Event(run_finished(
        RunStatus::Interrupted,
        Vec::new(),
    )));
    assert!(app.dialog.is_none() && app.questions.is_empty());
    assert!(
        app.key(enter())
            .iter()
            .all(|c| !matches!(c, Command::Answer { .. }))
    );
}

#[test]
fn a_model_switch_is_said_once_it_took_and_a_failure_is_only_the_error() {
    let mut app = app();
    type_text(&mut app, "/model nosuch");
    assert_eq!(app.key(enter()), [Command::SwitchModel("nosuch".into())]);
    app.update(Update::Error("no such model: set OPENAI_BASE_URL".into()));
    let screen = render(&mut app, 80, 12);
    assert!(screen.contains("no such model"), "{screen}");
    assert!(!screen.contains("Model: nosuch"), "{screen}");
    type_text(&mut app, "/model o4-mini");
    app.key(enter());
    app.update(Update::Info(antler_protocol::SessionInfo {
        model: "o4-mini".into(),
        ..Default::default()
    }));
    assert!(render(&mut app, 80, 12).contains("Model: o4-mini (from the next message on)"));
}

#[test]
fn the_status_line_stops_saying_cancelling_once_the_run_ended() {
    let ctrl_c = chord(KeyCode::Char('c'), KeyModifiers::CONTROL);
    let mut app = running();
    assert_eq!(app.key(ctrl_c), [Command::Cancel]);
    assert!(render(&mut app, 80, 10).contains("Cancelling"));
    events(
        &mut app,
        vec![run_finished(RunStatus::Interrupted, Vec::new())],
    );
    assert!(!render(&mut app, 80, 10).contains("Cancelling"));
}

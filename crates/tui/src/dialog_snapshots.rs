//! Snapshots of the dialogs and popups over the chat (colours off), and rendering at any
//! size and in every palette.

use crossterm::event::KeyCode;
use insta::assert_snapshot;

use super::test_support::*;
use antler_protocol::ClarificationRequest;
use antler_protocol::Event;
use antler_protocol::ThreadMeta;
use antler_protocol::{ServerState, ServerStatus};
use antler_protocol::{ToolsView, Update};

/// Lets a dialog that answers someone else take keys (it waits for a pause in typing).
fn arm(app: &mut super::app::App) {
    for _ in 0..super::dialogs::Arming::TICKS {
        app.tick();
    }
}

fn asked(app: &mut super::app::App, text: &str) {
    type_text(app, text);
    app.key(key(KeyCode::Enter));
}

#[test]
fn clarification_dialog() {
    let mut app = app();
    asked(&mut app, "Paint it");
    events(
        &mut app,
        vec![run_started(), Event::TurnStarted { turn: 1 }],
    );
    app.update(Update::Clarify(ClarificationRequest {
        call_id: "q".into(),
        question: "Which colour should the header be? The footer stays grey.".into(),
        options: vec![
            "red".into(),
            "blue".into(),
            "a long option that has to wrap onto a second line of the dialog box".into(),
        ],
    }));
    app.key(key(KeyCode::Down));
    assert_snapshot!(render(&mut app, 80, 24));
}

#[test]
fn tools_view() {
    let mut app = app();
    asked(&mut app, "/tools");
    app.update(Update::Tools(ToolsView {
        bound: [
            "read_file",
            "write_file",
            "str_replace",
            "glob",
            "grep",
            "bash",
            "task",
            "ask_clarification",
            "tool_search",
        ]
        .map(String::from)
        .to_vec(),
        promoted: vec!["github_create_issue".into(), "time_now".into()],
        deferred: (1..=40)
            .map(|i| format!("server{}_tool{i}", i % 4))
            .collect(),
        catalog_hash: Some("3f9a12c0deadbeef".into()),
    }));
    assert_snapshot!(render(&mut app, 80, 24));
}

#[test]
fn slash_popup() {
    let mut app = app();
    type_text(&mut app, "/");
    app.key(key(KeyCode::Down));
    assert_snapshot!(render(&mut app, 80, 16));
}

#[test]
fn mcp_view() {
    let mut app = app();
    asked(&mut app, "/mcp");
    let server =
        |name: &str, transport: &str, status: ServerState, error: Option<&str>| ServerStatus {
            name: name.into(),
            transport: transport.into(),
            status,
            error: error.map(String::from),
            tool_count: if status == ServerState::Connected {
                12
            } else {
                0
            },
            protocol_version: Some("2025-06-18".into()),
            manifest_age_secs: None,
            server_info: (status == ServerState::Connected).then(|| "github-mcp 1.4.0".into()),
            instructions_chars: (status == ServerState::Connected).then_some(1_250),
            capabilities: match status {
                ServerState::Connected => {
                    vec!["tools".into(), "resources".into(), "prompts".into()]
                }
                _ => Vec::new(),
            },
            startup_ms: (status == ServerState::Connected).then_some(340),
            needs_login: error.is_some_and(|e| e.contains("sign in")),
        };
    app.update(Update::Mcp(vec![
        server("github", "stdio", ServerState::Connected, None),
        server(
            "slack",
            "http",
            ServerState::Failed,
            Some("it needs you to sign in: run `antler mcp login slack`"),
        ),
        server("time", "stdio", ServerState::Disabled, None),
    ]));
    app.key(key(KeyCode::Down));
    assert_snapshot!(render(&mut app, 80, 16));
    // The selected server needs a login: `l` asks for one.
    assert_eq!(
        app.key(key(KeyCode::Char('l'))),
        [antler_protocol::Command::LoginMcp("slack".into())]
    );
}

#[test]
fn thread_picker() {
    let mut app = app();
    asked(&mut app, "/resume");
    let thread = |id: &str, title: &str, updated_at: i64| ThreadMeta {
        id: id.into(),
        title: title.into(),
        cwd: "/work".into(),
        model: "gpt-4.1".into(),
        created_at: updated_at - 600,
        updated_at,
        usage: Default::default(),
        message_count: if title.is_empty() { 1 } else { 12 },
    };
    assert!(render(&mut app, 80, 14).contains("Loading…"));
    app.update(Update::Threads(vec![
        thread("3f9a12c0ab12", "Tidy the build", 1_767_225_600),
        thread("77aa0011bb22", "", 1_767_139_200),
    ]));
    app.key(key(KeyCode::Down));
    assert_snapshot!(render(&mut app, 80, 14));
}

/// `/model`: each model's id and endpoint, the one in use marked and selected.
#[test]
fn model_picker() {
    let mut app = app();
    asked(&mut app, "/model");
    let shown = render(&mut app, 80, 12);
    assert!(
        shown.contains("o4-mini · https://api.openai.com/v1"),
        "{shown}"
    );
    assert_snapshot!(shown);
}

#[test]
fn help_at_sixty_columns() {
    let mut app = app();
    asked(&mut app, "/help");
    assert_snapshot!(render(&mut app, 60, 24));
}

#[test]
fn every_size_renders_without_panicking() {
    let mut app = app();
    asked(
        &mut app,
        "a question with a 日本語 word and a long tail of words to wrap",
    );
    events(
        &mut app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            text("# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```rust\nfn x() {}\n```"),
            tool_started("c", "bash", serde_json::json!({"command": "ls"})),
            tool_finished("c", "bash", false, &"x".repeat(500), 5),
        ],
    );
    app.key(chord(
        KeyCode::Char('o'),
        crossterm::event::KeyModifiers::CONTROL,
    ));
    let mut asked = false;
    for step in 0..3 {
        match step {
            1 => {
                type_text(&mut app, "/");
            }
            2 if !asked => {
                asked = true;
                app.update(Update::Clarify(ClarificationRequest {
                    call_id: "q".into(),
                    question: "Which?".into(),
                    options: vec!["a".into(), "b".into()],
                }));
            }
            _ => {}
        }
        for width in [1, 2, 5, 9, 20, 33, 60, 81, 200] {
            for height in [1, 2, 3, 4, 7, 12, 24, 61] {
                render(&mut app, width, height);
            }
        }
    }
}

#[test]
fn palettes_colour_the_screen_and_plain_uses_no_colour() {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::style::Color;

    use super::app::App;
    use super::theme::{Palette, Theme};

    for (palette, coloured) in [
        (Palette::Dark, true),
        (Palette::Light, true),
        (Palette::Plain, false),
    ] {
        let mut app = App::new(Default::default(), Theme::new(palette, false));
        asked(&mut app, "show code");
        events(
            &mut app,
            vec![run_started(), text("```rust\nfn main() {}\n```")],
        );
        let mut terminal = Terminal::new(TestBackend::new(40, 8)).unwrap();
        terminal.draw(|f| app.render(f)).unwrap();
        let buffer = terminal.backend().buffer();
        let indexed = buffer
            .content()
            .iter()
            .any(|c| matches!(c.fg, Color::Indexed(_)));
        let any = buffer
            .content()
            .iter()
            .any(|c| c.fg != Color::Reset || c.bg != Color::Reset);
        assert_eq!((indexed, any), (coloured, coloured), "{palette:?}");
    }
}

#[test]
fn context_dialog() {
    use antler_protocol::{CallTokens, CallTotals, ContextView, Ledger, ServerTokens, ToolTokens};
    let mut app = app();
    type_text(&mut app, "/context");
    assert_eq!(
        app.key(key(KeyCode::Enter)),
        [antler_protocol::Command::ShowContext]
    );
    assert!(render(&mut app, 80, 20).contains("Counting…"));
    let server = |name: &str, tools: u64, listed: u64| ServerTokens {
        name: name.into(),
        deferred_tools: tools,
        listed_tokens: listed,
        ..Default::default()
    };
    app.update(Update::Context(ContextView {
        thread: Ledger {
            runs: 2,
            totals: CallTotals {
                calls: 5,
                system: 6_100,
                tools: 2_400,
                history: 900,
                results: 3_300,
            },
            servers: vec![
                server("time", 2, 14),
                ServerTokens {
                    promoted: 2,
                    schema_tokens: 410,
                    calls: 3,
                    result_tokens: 2_950,
                    ..server("github", 26, 180)
                },
            ],
            tools: vec![ToolTokens {
                name: "github_get_file".into(),
                server: Some("github".into()),
                listed: true,
                listed_tokens: 5,
                promoted: 1,
                schema_tokens: 230,
                calls: 2,
                result_tokens: 2_700,
            }],
            ..Default::default()
        },
        next: Some(Ledger {
            calls: vec![CallTokens {
                turn: 0,
                system: 1_220,
                tools: 480,
                history: 190,
                results: 700,
            }],
            listing_tokens: 610,
            ..Default::default()
        }),
    }));
    assert_snapshot!(render(&mut app, 80, 20));
}

fn elicitation(form: antler_protocol::ElicitationForm) -> Event {
    Event::ElicitationRequested {
        turn: 1,
        call_id: "c1".into(),
        request: antler_protocol::ElicitationRequest {
            id: 9,
            server: "github".into(),
            message: "Which repository should the issue go to?".into(),
            form,
        },
    }
}

#[test]
fn elicitation_form() {
    use antler_protocol::{ElicitationForm, FieldKind, FormField};
    let mut app = app();
    asked(&mut app, "file an issue");
    let field =
        |name: &str, title: &str, description: &str, kind, required, default: Option<&str>| {
            FormField {
                name: name.into(),
                title: title.into(),
                description: description.into(),
                required,
                kind,
                default: default.map(String::from),
            }
        };
    events(
        &mut app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            elicitation(ElicitationForm::Form {
                fields: vec![
                    field(
                        "repo",
                        "Repository",
                        "owner/name",
                        FieldKind::Text {
                            min_chars: Some(3),
                            max_chars: None,
                            format: None,
                        },
                        true,
                        None,
                    ),
                    field(
                        "priority",
                        "Priority",
                        "",
                        FieldKind::Choice {
                            values: vec!["p1".into(), "p2".into()],
                            labels: vec!["Urgent".into(), "Later".into()],
                        },
                        false,
                        Some("p2"),
                    ),
                    field(
                        "private",
                        "Private",
                        "",
                        FieldKind::Boolean,
                        false,
                        Some("false"),
                    ),
                    field(
                        "count",
                        "Copies",
                        "",
                        FieldKind::Integer {
                            min: Some(1),
                            max: Some(5),
                        },
                        false,
                        None,
                    ),
                ],
            }),
        ],
    );
    // Typed before the form was seen: not taken.
    type_text(&mut app, "zz");
    arm(&mut app);
    type_text(&mut app, "ab");
    app.key(key(KeyCode::Enter));
    assert_snapshot!(render(&mut app, 80, 24));
    // Answered: the dialog closes and the answer is sent.
    type_text(&mut app, "c/d");
    let sent = app.key(key(KeyCode::Enter));
    assert!(
        matches!(&sent[..], [antler_protocol::Command::Elicit { id: 9, answer: antler_protocol::ElicitationAnswer::Accept(v) }] if v["repo"] == "abc/d" && v["priority"] == "p2"),
        "{sent:?}"
    );
    assert!(app.dialog.is_none());
}

#[test]
fn elicitation_url() {
    let mut app = app();
    asked(&mut app, "sign me in");
    events(
        &mut app,
        vec![
            run_started(),
            Event::TurnStarted { turn: 1 },
            elicitation(antler_protocol::ElicitationForm::Url {
                url: "https://github.com/login/device?code=ABCD-1234".into(),
            }),
        ],
    );
    arm(&mut app);
    assert_snapshot!(render(&mut app, 80, 20));
    // A question that comes meanwhile waits behind the form, and opens once it closes.
    app.update(Update::Clarify(ClarificationRequest {
        call_id: "q".into(),
        question: "Which one?".into(),
        options: Vec::new(),
    }));
    assert!(matches!(app.dialog, Some(super::dialogs::Dialog::Form(_))));
    let sent = app.key(key(KeyCode::Esc));
    assert!(
        matches!(
            &sent[..],
            [antler_protocol::Command::Elicit {
                id: 9,
                answer: antler_protocol::ElicitationAnswer::Cancel
            }]
        ),
        "{sent:?}"
    );
    assert!(matches!(
        app.dialog,
        Some(super::dialogs::Dialog::Clarify(_))
    ));
}

#[test]
fn prompt_arguments_form_and_popup() {
    use antler_protocol::{PromptArgumentInfo, PromptInfo};
    let mut app = app();
    let argument = |name: &str, description: &str, required| PromptArgumentInfo {
        name: name.into(),
        description: description.into(),
        required,
    };
    app.update(Update::Prompts(vec![PromptInfo {
        server: "github".into(),
        name: "review-pr".into(),
        description: "Review a pull request".into(),
        arguments: vec![
            argument("number", "The pull request's number", true),
            argument("focus", "What to look at", false),
        ],
    }]));
    type_text(&mut app, "/git");
    assert_snapshot!("prompt_popup", render(&mut app, 80, 12));
    app.key(key(KeyCode::Enter));
    assert_snapshot!("prompt_form", render(&mut app, 80, 16));
}

//! Helpers for the TUI's tests: an app with a plain theme, keys, events and rendering on
//! ratatui's `TestBackend`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::Value;

use super::app::App;
use super::theme::{Palette, Theme};
use antler_protocol::{Command, ModelChoice, SessionInfo, Update};
use antler_protocol::{Event, RunResult, RunStatus};
use antler_protocol::{FinishReason, Usage};
use antler_protocol::{ServerState, ServerStatus};

/// The two configured models, the first in use.
fn models() -> Vec<ModelChoice> {
    vec![
        ModelChoice {
            name: "gpt-4.1".into(),
            detail: "gpt-4.1 · https://api.openai.com/v1".into(),
            current: true,
        },
        ModelChoice {
            name: "o4-mini".into(),
            detail: "o4-mini · https://api.openai.com/v1".into(),
            current: false,
        },
    ]
}

/// An app for a session on `gpt-4.1` with two configured models, colours off.
pub(crate) fn app() -> App {
    let info = SessionInfo {
        model: "gpt-4.1".into(),
        models: models(),
        thread_id: "3f9a12c0ab12".into(),
        thread_title: "Tidy the build".into(),
        usage: Usage {
            input_tokens: 12_000,
            cached_input_tokens: 0,
            output_tokens: 345,
        },
        promoted: 0,
        mcp_up: 2,
        mcp_down: 1,
        running: false,
    };
    App::new(info, Theme::new(Palette::Plain, false))
}

/// The same chat drawn before its session is ready: only the model is known, no MCP
/// counts yet.
pub(crate) fn starting_app() -> App {
    let info = SessionInfo {
        model: "gpt-4.1".into(),
        models: models(),
        ..SessionInfo::default()
    };
    App::starting(info, Theme::new(Palette::Plain, false))
}

/// A stdio server's status, as start-up progress or `/mcp` reports it.
pub(crate) fn server(name: &str, status: ServerState, error: Option<&str>) -> ServerStatus {
    ServerStatus {
        name: name.into(),
        transport: "stdio".into(),
        status,
        error: error.map(String::from),
        tool_count: if status == ServerState::Connected {
            3
        } else {
            0
        },
        protocol_version: None,
        startup_ms: (status == ServerState::Connected).then_some(840),
        manifest_age_secs: None,
        server_info: None,
        instructions_chars: None,
        capabilities: Vec::new(),
        needs_login: false,
    }
}

/// A key press without modifiers.
pub(crate) fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// A key press with modifiers.
pub(crate) fn chord(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
    KeyEvent::new(code, modifiers)
}

/// Types `text` key by key; returns the commands the keys produced.
pub(crate) fn type_text(app: &mut App, text: &str) -> Vec<Command> {
    text.chars()
        .flat_map(|c| app.key(key(KeyCode::Char(c))))
        .collect()
}

/// Feeds core events.
pub(crate) fn events(app: &mut App, events: Vec<Event>) -> Vec<Command> {
    events
        .into_iter()
        .flat_map(|e| app.update(Update::Event(e)))
        .collect()
}

/// The screen as text.
pub(crate) fn render(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| app.render(f)).unwrap();
    terminal.backend().to_string()
}

/// `run_started` for the demo thread.
pub(crate) fn run_started() -> Event {
    Event::RunStarted {
        version: antler_protocol::STREAM_JSON_VERSION,
        thread_id: "3f9a12c0ab12".into(),
        model: "gpt-4.1".into(),
        resumed: true,
    }
}

/// `run_finished` with `status`.
pub(crate) fn run_finished(status: RunStatus, errors: Vec<String>) -> Event {
    Event::RunFinished(RunResult {
        is_error: status != RunStatus::Success,
        duration_ms: 1_200,
        model_usage: Default::default(),
        status,
        result: String::new(),
        thread_id: "3f9a12c0ab12".into(),
        model: "gpt-4.1".into(),
        turns: 1,
        usage: Usage::default(),
        thread_usage: Usage {
            input_tokens: 15_000,
            cached_input_tokens: 0,
            output_tokens: 800,
        },
        promoted_tools: Vec::new(),
        files: Vec::new(),
        notices: Vec::new(),
        errors,
        error_kind: None,
        ledger: None,
    })
}

/// `text_delta` in turn 1.
pub(crate) fn text(text: &str) -> Event {
    Event::TextDelta {
        turn: 1,
        text: text.into(),
    }
}

/// `turn_completed` for turn `turn`.
pub(crate) fn turn_completed(turn: u32, finish_reason: FinishReason) -> Event {
    Event::TurnCompleted {
        turn,
        finish_reason,
    }
}

/// The role the demo tools have: the reserved names, `*_*` MCP tools, else configured.
fn role_of(name: &str) -> antler_protocol::ToolRole {
    use antler_protocol::ToolRole;
    match ToolRole::of_stored_call(name) {
        ToolRole::Unknown if name.contains('_') => ToolRole::Mcp,
        ToolRole::Unknown => ToolRole::Configured,
        known => known,
    }
}

/// `tool_call_started`.
pub(crate) fn tool_started(id: &str, name: &str, arguments: Value) -> Event {
    Event::ToolCallStarted {
        turn: 1,
        call_id: id.into(),
        name: name.into(),
        role: role_of(name),
        arguments,
        from_text: false,
    }
}

/// `tool_call_finished`.
pub(crate) fn tool_finished(
    id: &str,
    name: &str,
    is_error: bool,
    content: &str,
    duration_ms: u64,
) -> Event {
    Event::ToolCallFinished {
        turn: 1,
        call_id: id.into(),
        name: name.into(),
        role: role_of(name),
        is_error,
        content: content.into(),
        duration_ms,
    }
}

//! The read-mostly dialogs' pages: `/help`, `/tools` and `/mcp`.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::cards::short_hash;
use super::dialog_view::View;
use super::slash::COMMANDS;
use super::theme::Theme;
use super::wrap::{self, wrap_text};
use antler_protocol::{ContextView, ToolsView};
use antler_protocol::{ServerState, ServerStatus};

fn heading(text: String) -> Line<'static> {
    Line::from(Span::styled(
        text,
        Style::new().add_modifier(Modifier::BOLD),
    ))
}

/// Keys and commands.
pub(super) fn help(width: usize, theme: &Theme) -> View {
    let keys = [
        ("Enter", "send the message"),
        (
            "Shift/Alt-Enter, Ctrl-J",
            "new line (or end a line with \\)",
        ),
        ("Up / Down", "earlier messages (on the first / last line)"),
        ("Esc", "cancel the running turn"),
        ("Ctrl-C", "cancel; twice (or on an empty line) quits"),
        ("PgUp / PgDn, wheel", "scroll; End follows new output"),
        (
            "Ctrl-O, click",
            "expand or collapse tool cards and reasoning",
        ),
        ("Tab", "complete a slash command"),
        ("Shift-drag", "select text (the mouse is captured)"),
    ];
    let mut body = vec![heading("Keys".to_string())];
    let row = |left: String, right: &str, body: &mut Vec<Line<'static>>| {
        let first = [
            Span::raw("  "),
            Span::styled(format!("{left:<24}"), theme.accent),
        ];
        let rest = [Span::raw(" ".repeat(26))];
        body.extend(wrap_text(right, Style::new(), width, &first, &rest));
    };
    for (key, what) in keys {
        row(key.to_string(), what, &mut body);
    }
    body.push(Line::default());
    body.push(heading("Commands".to_string()));
    for c in COMMANDS {
        row(
            format!("/{} {}", c.name(), c.argument()),
            c.help(),
            &mut body,
        );
    }
    View {
        title: "Help".into(),
        body,
        footer: "↑↓ scroll · Esc close",
        focus: None,
        cursor: None,
    }
}

/// What the model can see: bound, promoted (with the catalog hash) and deferred tools.
pub(super) fn tools(view: Option<&ToolsView>, loading: bool, width: usize, theme: &Theme) -> View {
    let mut body = Vec::new();
    match view {
        None if loading => body.push(Line::from(Span::styled("Loading…", theme.dim))),
        None => body.push(Line::from(Span::styled(
            "No tool information yet.",
            theme.dim,
        ))),
        Some(v) => {
            let indent = [Span::raw("  ")];
            body.push(heading(format!("Bound on every call ({})", v.bound.len())));
            body.extend(wrap_text(
                &v.bound.join(", "),
                Style::new(),
                width,
                &indent,
                &indent,
            ));
            let hash = v
                .catalog_hash
                .as_deref()
                .map(|h| format!(" · catalog {}", short_hash(h)))
                .unwrap_or_default();
            body.push(heading(format!(
                "Promoted working set ({}){hash}",
                v.promoted.len()
            )));
            if v.promoted.is_empty() {
                body.push(Line::from(Span::styled(
                    "  none yet: the model promotes tools with tool_search",
                    theme.dim,
                )));
            }
            for (i, name) in v.promoted.iter().enumerate() {
                body.extend(wrap_text(
                    name,
                    theme.accent,
                    width,
                    &[Span::styled(format!("  {}. ", i + 1), theme.dim)],
                    &indent,
                ));
            }
            body.push(heading(format!(
                "Deferred ({}), found through tool_search",
                v.deferred.len()
            )));
            if v.deferred.is_empty() {
                body.push(Line::from(Span::styled("  none", theme.dim)));
            } else {
                body.extend(wrap_text(
                    &v.deferred.join(", "),
                    theme.dim,
                    width,
                    &indent,
                    &indent,
                ));
            }
        }
    }
    View {
        title: "Tools".into(),
        body,
        footer: "↑↓ PgUp PgDn scroll · Esc close",
        focus: None,
        cursor: None,
    }
}

/// The context ledger: the next call, the thread's totals, the biggest consumers first.
/// Tables are not wrapped (they would lose their columns); a narrow screen cuts them.
pub(super) fn context(view: Option<&ContextView>, loading: bool, theme: &Theme) -> View {
    let body = match view {
        None if loading => vec![Line::from(Span::styled("Counting…", theme.dim))],
        None => vec![Line::from(Span::styled("No ledger yet.", theme.dim))],
        Some(v) => antler_protocol::ledger_text::ledger_lines(&v.thread, v.next.as_ref())
            .into_iter()
            .skip(1)
            .map(Line::from)
            .collect(),
    };
    View {
        title: "Context (tokens)".into(),
        body,
        footer: "↑↓ PgUp PgDn scroll · Esc close",
        focus: None,
        cursor: None,
    }
}

/// What a server says of itself: name and version, its instructions' length, what it
/// offers.
fn server_about(s: &ServerStatus) -> String {
    let mut parts: Vec<String> = s.server_info.iter().cloned().collect();
    if let Some(chars) = s.instructions_chars {
        parts.push(format!("instructions {chars} chars"));
    }
    if !s.capabilities.is_empty() {
        parts.push(s.capabilities.join(", "));
    }
    parts.join(" · ")
}

/// The MCP servers with their status, the selected one marked.
pub(super) fn mcp(
    servers: &[ServerStatus],
    selected: usize,
    loading: bool,
    width: usize,
    theme: &Theme,
) -> View {
    let mut body = Vec::new();
    if servers.is_empty() {
        let text = if loading {
            "Loading…"
        } else {
            "No MCP servers are configured."
        };
        body.push(Line::from(Span::styled(text, theme.dim)));
    }
    let name_width = servers
        .iter()
        .map(|s| wrap::width(&s.name))
        .max()
        .unwrap_or(0)
        .min(24);
    let mut focus = None;
    for (i, s) in servers.iter().enumerate() {
        let is_selected = i == selected;
        if is_selected {
            focus = Some(body.len());
        }
        let (icon, style) = match s.status {
            ServerState::Connected => ("●", theme.ok),
            ServerState::Idle => ("◌", theme.dim),
            ServerState::Failed => ("✗", theme.error),
            ServerState::Disabled => ("○", theme.dim),
        };
        let name = format!("{:<name_width$}", wrap::truncate(&s.name, name_width));
        let mut facts = format!("{:<5} {:<9}", s.transport, s.status.as_str());
        if s.status == ServerState::Connected {
            facts.push_str(&format!(" {} tools", s.tool_count));
            if let Some(ms) = s.startup_ms {
                facts.push_str(&format!(" · {ms} ms"));
            }
        }
        if s.status == ServerState::Idle {
            facts.push_str(&format!(" {} tools", s.tool_count));
            if let Some(age) = s.manifest_age_secs {
                facts.push_str(&format!(" · listed {}", antler_base::clock::age_words(age)));
            }
        }
        let (marker, name_style) = theme.row(is_selected);
        let spans = vec![
            Span::styled(marker, theme.accent),
            Span::styled(format!("{icon} "), style),
            Span::styled(name, name_style),
            Span::styled(format!("  {facts}"), theme.dim),
        ];
        body.push(Line::from(spans));
        let about = server_about(s);
        if !about.is_empty() {
            body.push(Line::from(Span::styled(
                format!("    {}", wrap::truncate(&about, width.saturating_sub(4))),
                theme.dim,
            )));
        }
        if let Some(error) = &s.error {
            body.extend(wrap_text(
                &wrap::one_line(error, 400),
                theme.error,
                width,
                &[Span::raw("    ")],
                &[Span::raw("    ")],
            ));
        }
        if s.needs_login {
            body.push(Line::from(Span::styled(
                "    l signs in (in the browser)",
                theme.accent,
            )));
        }
    }
    View {
        title: "MCP servers".into(),
        body,
        footer: "↑↓ select · r reconnect · a reconnect all · l log in · Esc close",
        focus,
        cursor: None,
    }
}

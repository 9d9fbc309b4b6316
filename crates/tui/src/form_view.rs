//! Drawing the form dialog: the server's message (or the prompt), one row per field with
//! its value, and the reason the last submit was refused.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::dialog_view::View;
use super::form::{FormDialog, Purpose};
use super::theme::Theme;
use super::wrap::wrap_text;
use antler_protocol::{ElicitationForm, FieldKind};

pub(super) fn form(d: &FormDialog, width: usize, theme: &Theme) -> View {
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let (title, heading, footer) = match &d.purpose {
        Purpose::Prompt(prompt) => (
            format!("/{}", prompt.command()),
            if prompt.description.is_empty() {
                String::from("The prompt's arguments")
            } else {
                prompt.description.clone()
            },
            "Tab next field · Enter run · Esc cancel",
        ),
        Purpose::Elicitation(request) => (
            format!("MCP server `{}` asks", request.server),
            request.message.clone(),
            if d.arming.ready() {
                "Tab next field · Enter send · Ctrl-D decline · Esc cancel"
            } else {
                "…"
            },
        ),
    };
    let mut body = wrap_text(&heading, bold, width, &[], &[]);
    if let Purpose::Elicitation(request) = &d.purpose
        && let ElicitationForm::Url { url } = &request.form
    {
        body.push(Line::default());
        body.push(Line::from(Span::styled(
            "Open this address in your browser, then press Enter:",
            theme.dim,
        )));
        body.extend(wrap_text(url, theme.accent, width, &[], &[]));
        return View {
            title,
            body,
            footer: if d.arming.ready() {
                "Enter opened · Ctrl-D decline · Esc cancel"
            } else {
                "…"
            },
            focus: None,
            cursor: None,
        };
    }
    body.push(Line::default());
    let mut focus = None;
    let mut cursor = None;
    for (index, field) in d.fields.iter().enumerate() {
        let selected = index == d.selected;
        if selected {
            focus = Some(body.len());
        }
        let (marker, style) = theme.row(selected);
        let required = if field.required { " *" } else { "" };
        let label = format!("{}{required}: ", field.title);
        let value = d
            .values
            .get(index)
            .map(|i| i.text().to_string())
            .unwrap_or_default();
        let shown = match &field.kind {
            FieldKind::Boolean => match value.as_str() {
                "true" | "yes" => String::from("[x] yes"),
                "false" | "no" => String::from("[ ] no"),
                _ => String::from("[ ] (space to choose)"),
            },
            FieldKind::Choice { values, labels } => values
                .iter()
                .position(|v| *v == value)
                .and_then(|i| labels.get(i))
                .map_or_else(|| String::from("(← → to choose)"), |l| format!("‹ {l} ›")),
            _ => value.clone(),
        };
        let typed = matches!(
            field.kind,
            FieldKind::Text { .. } | FieldKind::Integer { .. } | FieldKind::Number { .. }
        );
        if selected && typed {
            let before = d.values.get(index).map_or(0, |i| i.cursor_column());
            let column = 2 + label.chars().count() + before;
            cursor = Some((column.min(width.saturating_sub(1)), body.len()));
        }
        body.push(Line::from(vec![
            Span::styled(marker, theme.accent),
            Span::styled(label, style),
            Span::raw(shown),
        ]));
        if !field.description.is_empty() && field.description != field.title {
            body.extend(wrap_text(
                &field.description,
                theme.dim,
                width,
                &[Span::raw("    ")],
                &[Span::raw("    ")],
            ));
        }
    }
    if let Some(error) = &d.error {
        body.push(Line::default());
        body.extend(wrap_text(error, theme.error, width, &[], &[]));
    }
    View {
        title,
        body,
        footer,
        focus,
        cursor,
    }
}

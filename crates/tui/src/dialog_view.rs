//! Drawing the open dialog: a bordered box centred over the screen, its body scrolled so
//! that the selected row stays visible, and a footer with its keys.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear};

use super::dialog_pages::{context, help, mcp, tools};
use super::dialogs::{ClarifyDialog, Dialog, Picker};
use super::theme::Theme;
use super::wrap::{self, wrap_text};
use antler_protocol::ServerStatus;
use antler_protocol::{ContextView, ToolsView};

/// The widest a dialog gets.
const MAX_WIDTH: u16 = 84;

/// What the dialogs show besides their own state.
pub(crate) struct DialogData<'a> {
    /// The last `/tools` answer.
    pub tools: Option<&'a ToolsView>,
    /// The last `/context` answer.
    pub context: Option<&'a ContextView>,
    /// The last MCP statuses.
    pub mcp: &'a [ServerStatus],
}

/// A dialog's content, before it is boxed and scrolled.
pub(super) struct View {
    /// Shown in the border.
    pub title: String,
    /// Scrolled when taller than the box.
    pub body: Vec<Line<'static>>,
    /// The keys it takes.
    pub footer: &'static str,
    /// A body line to keep visible (the selection).
    pub focus: Option<usize>,
    /// The cursor in body coordinates (column, line).
    pub cursor: Option<(usize, usize)>,
}

/// Draws `dialog` over `area`.
pub(crate) fn render_dialog(
    dialog: &mut Dialog,
    data: &DialogData<'_>,
    area: Rect,
    frame: &mut Frame<'_>,
    theme: &Theme,
) {
    let width = area
        .width
        .saturating_sub(4)
        .clamp(area.width.min(20), MAX_WIDTH);
    let inner = usize::from(width.saturating_sub(4)).max(1);
    let view = match dialog {
        Dialog::Help { .. } => help(inner, theme),
        Dialog::Clarify(d) => clarify(d, inner, theme),
        Dialog::Form(form) => super::form_view::form(form, inner, theme),
        Dialog::Approval(approval) => approval.view(inner, theme),
        Dialog::Threads(p) => picker(p, "Resume a thread", "No stored threads.", inner, theme),
        Dialog::Models(p) => picker(p, "Switch model", "No models are configured.", inner, theme),
        Dialog::Attach(p) => picker(
            p,
            "Attach a file or an MCP resource",
            "Nothing to attach.",
            inner,
            theme,
        ),
        Dialog::Tools { loading, .. } => tools(data.tools, *loading, inner, theme),
        Dialog::Context { loading, .. } => context(data.context, *loading, theme),
        Dialog::Mcp { selected, loading } => mcp(data.mcp, *selected, *loading, inner, theme),
    };
    let wanted = u16::try_from(view.body.len() + 4).unwrap_or(u16::MAX);
    let height = wanted
        .min(area.height.saturating_sub(2))
        .max(area.height.min(5));
    let rect = Rect {
        x: area.x + (area.width.saturating_sub(width)) / 2,
        y: area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, rect);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme.dim)
        .title(Span::styled(
            format!(" {} ", view.title),
            theme.accent.add_modifier(Modifier::BOLD),
        ));
    frame.render_widget(block, rect);
    let body_rows = usize::from(height.saturating_sub(4));
    let scroll = match dialog {
        Dialog::Help { scroll } | Dialog::Tools { scroll, .. } | Dialog::Context { scroll, .. } => {
            *scroll = (*scroll).min(view.body.len().saturating_sub(body_rows));
            *scroll
        }
        _ => view.focus.map_or(0, |f| (f + 1).saturating_sub(body_rows)),
    };
    let x = rect.x + 2;
    let buf = frame.buffer_mut();
    for (row, line) in view.body.iter().skip(scroll).take(body_rows).enumerate() {
        let y = rect.y + 1 + u16::try_from(row).unwrap_or(0);
        buf.set_line(x, y, line, width.saturating_sub(4));
    }
    let more = view.body.len() > scroll + body_rows;
    let footer = if more {
        format!("{} · ↓ more", view.footer)
    } else {
        view.footer.to_string()
    };
    let footer = Line::from(Span::styled(wrap::truncate(&footer, inner), theme.dim));
    buf.set_line(
        x,
        rect.y + height.saturating_sub(2),
        &footer,
        width.saturating_sub(4),
    );
    if let Some((column, line)) = view.cursor
        && line >= scroll
        && line < scroll + body_rows
    {
        let cx = x + u16::try_from(column)
            .unwrap_or(0)
            .min(width.saturating_sub(5));
        let cy = rect.y + 1 + u16::try_from(line - scroll).unwrap_or(0);
        frame.set_cursor_position((cx, cy));
    }
}

fn clarify(d: &ClarifyDialog, width: usize, theme: &Theme) -> View {
    let mut body = wrap_text(
        &d.request.question,
        Style::new().add_modifier(Modifier::BOLD),
        width,
        &[],
        &[],
    );
    body.push(Line::default());
    let mut focus = None;
    for (i, option) in d.request.options.iter().enumerate() {
        let selected = i == d.selected;
        if selected {
            focus = Some(body.len());
        }
        body.extend(choice(option, selected, width, theme));
    }
    let typing = d.typing();
    let (marker, marker_style) = if typing {
        ("› ✎ ", theme.accent)
    } else {
        ("  ✎ ", theme.dim)
    };
    let text_row = body.len();
    let mut cursor = None;
    if d.text.is_empty() {
        let hint = if d.request.options.is_empty() {
            "type your answer"
        } else {
            "or type your own answer"
        };
        body.push(Line::from(vec![
            Span::styled(marker, marker_style),
            Span::styled(hint, theme.dim),
        ]));
        if typing {
            cursor = Some((4, text_row));
        }
    } else {
        let (lines, (cx, cy)) = d.text.layout(width.saturating_sub(4), Style::new());
        for (i, line) in lines.into_iter().enumerate() {
            let mut spans = vec![Span::styled(
                if i == 0 { marker } else { "    " },
                marker_style,
            )];
            spans.extend(line.spans);
            body.push(Line::from(spans));
        }
        if typing {
            cursor = Some((cx + 4, text_row + cy));
        }
    }
    if typing {
        focus = Some(text_row);
    }
    View {
        title: "Question".into(),
        body,
        footer: "↑↓ choose · Enter answer · Esc skip",
        focus,
        cursor,
    }
}

/// One selectable row (wrapped), marked and highlighted when selected.
fn choice(text: &str, selected: bool, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let (marker, style) = theme.row(selected);
    wrap_text(
        text,
        style,
        width,
        &[Span::styled(marker, theme.accent)],
        &[Span::raw("  ")],
    )
}

fn picker(p: &Picker, title: &str, empty: &'static str, width: usize, theme: &Theme) -> View {
    let mut body = Vec::new();
    if !p.filter.is_empty() {
        body.push(Line::from(vec![
            Span::styled("filter: ", theme.dim),
            Span::raw(p.filter.clone()),
        ]));
    }
    let visible = p.visible();
    if p.loading && p.items.is_empty() {
        body.push(Line::from(Span::styled("Loading…", theme.dim)));
    } else if visible.is_empty() {
        body.push(Line::from(Span::styled(
            if p.items.is_empty() {
                empty
            } else {
                "Nothing matches."
            },
            theme.dim,
        )));
    }
    let mut focus = None;
    for (i, item) in visible.iter().enumerate() {
        let selected = i == p.selected;
        if selected {
            focus = Some(body.len());
        }
        let (marker, style) = theme.row(selected);
        let mut spans = vec![
            Span::styled(marker, theme.accent),
            Span::styled(item.label.clone(), style),
        ];
        if item.current {
            spans.push(Span::styled(" (current)", theme.accent));
        }
        if !item.detail.is_empty() {
            spans.push(Span::styled(format!("  {}", item.detail), theme.dim));
        }
        let room = width.saturating_sub(wrap::spans_width(&spans[..1]));
        let text: String = spans[1..].iter().map(|s| s.content.as_ref()).collect();
        if wrap::width(&text) > room {
            spans.truncate(2);
            spans[1] = Span::styled(wrap::truncate(&item.label, room), style);
        }
        body.push(Line::from(spans));
    }
    View {
        title: title.into(),
        body,
        footer: "↑↓ select · Enter choose · type to filter · Esc close",
        focus,
        cursor: None,
    }
}

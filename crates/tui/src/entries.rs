//! One transcript entry as screen lines. Every entry has a two-column gutter: its marker
//! on the first line (`›` the user, `●` the answer, `▸` reasoning, `!` a notice, ...).

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::cards::{promotion_lines, render_card};
use super::markdown;
use super::theme::Theme;
use super::transcript::{Entry, Reasoning};
use super::wrap::{self, wrap_text};

/// How many lines of reasoning show while it streams, collapsed.
const REASONING_TAIL: usize = 3;

/// `entry` as lines of at most `width` columns; `frame` animates spinners.
pub(crate) fn render_entry(
    entry: &Entry,
    width: usize,
    theme: &Theme,
    frame: usize,
) -> Vec<Line<'static>> {
    let width = width.max(8);
    match entry {
        Entry::User(text) => marked(text, "› ", theme.accent, theme.user, width),
        Entry::Answer(answer) => {
            let mut lines = markdown::render(&answer.text, width - 2, theme);
            if lines.is_empty() {
                lines.push(Line::default());
            }
            for (i, line) in lines.iter_mut().enumerate() {
                let gutter = if i == 0 {
                    Span::styled("● ", theme.accent)
                } else {
                    Span::raw("  ")
                };
                line.spans.insert(0, gutter);
            }
            lines
        }
        Entry::Reasoning(r) => reasoning(r, width, theme),
        Entry::Tool(card) => render_card(card, width, theme, frame),
        Entry::Promotion(p) => {
            // Without a tool_search call in the turn, a routing hint promoted them, or the
            // working set was trimmed to its limit.
            let (mark, title) = if p.added.is_empty() {
                ("⇣ ", "working set trimmed")
            } else {
                ("⇡ ", "tools promoted by routing")
            };
            let mut lines = vec![Line::from(vec![
                Span::styled(mark, theme.accent),
                Span::styled(title, theme.dim),
            ])];
            lines.extend(promotion_lines(p, width, theme));
            lines
        }
        Entry::Notice(text) => marked(text, "! ", theme.warn, theme.warn, width),
        Entry::Error(text) => marked(text, "✗ ", theme.error, theme.error, width),
        Entry::Info(text) => marked(text, "· ", theme.dim, theme.dim, width),
        Entry::Files(files) => {
            let mut lines = vec![Line::from(vec![
                Span::styled("◆ ", theme.accent),
                Span::styled("Files", Style::new().add_modifier(Modifier::BOLD)),
            ])];
            for file in files {
                lines.extend(wrap_text(
                    file,
                    theme.accent,
                    width,
                    &[Span::raw("  ")],
                    &[Span::raw("  ")],
                ));
            }
            lines
        }
        Entry::Asked { question, answer } => {
            let mut lines = marked(question, "? ", theme.accent, Style::new(), width);
            let (text, style) = match answer {
                Some(a) => (a.as_str(), theme.user),
                None => ("(no answer)", theme.dim),
            };
            lines.extend(wrap_text(
                text,
                style,
                width,
                &[Span::styled("  → ", theme.dim)],
                &[Span::raw("    ")],
            ));
            lines
        }
    }
}

/// Text wrapped after a one-character marker and a space.
fn marked(
    text: &str,
    marker: &'static str,
    marker_style: Style,
    style: Style,
    width: usize,
) -> Vec<Line<'static>> {
    let text = text.trim_end();
    wrap_text(
        text,
        style,
        width,
        &[Span::styled(marker, marker_style)],
        &[Span::raw("  ")],
    )
}

fn reasoning(r: &Reasoning, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let style = theme.dim.add_modifier(Modifier::ITALIC);
    let words = r.text.split_whitespace().count();
    let title = if r.streaming {
        "Thinking…".to_string()
    } else {
        format!("Thought · {words} words")
    };
    let (arrow, hint) = if r.expanded {
        ("▾ ", "")
    } else {
        ("▸ ", " (ctrl-o)")
    };
    let mut lines = vec![Line::from(vec![
        Span::styled(arrow, theme.dim),
        Span::styled(title, theme.dim),
        Span::styled(if r.streaming { "" } else { hint }, theme.dim),
    ])];
    let body = wrap_text(
        r.text.trim(),
        style,
        width,
        &[Span::raw("  ")],
        &[Span::raw("  ")],
    );
    if r.expanded {
        lines.extend(body);
    } else if r.streaming {
        let skip = body.len().saturating_sub(REASONING_TAIL);
        lines.extend(body.into_iter().skip(skip));
    }
    lines
}

/// A line that says how much more there is.
pub(crate) fn more_line(hidden: usize, prefix: &[Span<'static>], theme: &Theme) -> Line<'static> {
    let mut spans = prefix.to_vec();
    let noun = if hidden == 1 { "line" } else { "lines" };
    spans.push(Span::styled(
        format!("… {hidden} more {noun} (ctrl-o)"),
        theme.dim,
    ));
    Line::from(spans)
}

/// `text`'s first lines, each cut to the width (collapsed previews).
pub(crate) fn preview(
    text: &str,
    lines: usize,
    width: usize,
    style: Style,
    prefix: &[Span<'static>],
    theme: &Theme,
) -> Vec<Line<'static>> {
    let clean = wrap::sanitize(text);
    let all: Vec<&str> = clean.trim_matches('\n').lines().collect();
    let room = width.saturating_sub(wrap::spans_width(prefix));
    let mut out: Vec<Line<'static>> = all
        .iter()
        .take(lines)
        .map(|l| {
            let mut spans = prefix.to_vec();
            spans.push(Span::styled(wrap::truncate(l.trim_end(), room), style));
            Line::from(spans)
        })
        .collect();
    if all.len() > lines {
        out.push(more_line(all.len() - lines, prefix, theme));
    }
    out
}

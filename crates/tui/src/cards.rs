//! Tool-call cards: one header line (status, name, short arguments, duration), then the
//! first lines of the result; expanded, the arguments and the whole result. `tool_search`
//! cards say what was searched for and promoted; `task` cards nest their subagent.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::entries::{more_line, preview, render_entry};
use super::theme::Theme;
use super::transcript::{Entry, Promotion, ToolCard, ToolStatus, format_duration};
use super::wrap::{self, wrap_text};
use antler_protocol::ToolRole;

/// Spinner frames (one per tick).
pub(crate) const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Result lines a collapsed card shows.
const PREVIEW_LINES: usize = 3;

/// Result lines an expanded card shows at most (the rest is counted).
const EXPANDED_LINES: usize = 500;

/// Subagent steps a collapsed `task` card shows while it runs.
const SUBAGENT_STEPS: usize = 5;

/// Argument keys that say the most about a call, in order of preference.
const PRIMARY_KEYS: [&str; 10] = [
    "command",
    "query",
    "path",
    "filepaths",
    "url",
    "pattern",
    "description",
    "question",
    "image_path",
    "name",
];

/// Its lines at `width`: the header, then a preview of the result, or the arguments and
/// more of the result once it is expanded.
pub(crate) fn render_card(
    card: &ToolCard,
    width: usize,
    theme: &Theme,
    frame: usize,
) -> Vec<Line<'static>> {
    let gutter = [Span::styled("  │ ", theme.dim)];
    let mut lines = vec![header(card, width, theme, frame)];
    if let Some(promotion) = &card.promotion {
        lines.extend(promotion_lines(promotion, width, theme));
    }
    if let Some((_, child)) = &card.subagent {
        let entries: Vec<&Entry> = child.entries().collect();
        if card.expanded {
            for entry in &entries {
                for line in render_entry(entry, width.saturating_sub(4), theme, frame) {
                    let mut spans = gutter.to_vec();
                    spans.extend(line.spans);
                    lines.push(Line::from(spans));
                }
            }
        } else {
            let steps: Vec<Line<'static>> = entries
                .iter()
                .filter_map(|e| step(e, width, theme, frame))
                .collect();
            let tools = entries
                .iter()
                .filter(|e| matches!(e, Entry::Tool(_)))
                .count();
            if card.status == ToolStatus::Running {
                let hidden = steps.len().saturating_sub(SUBAGENT_STEPS);
                if hidden > 0 {
                    lines.push(Line::from(vec![
                        gutter[0].clone(),
                        Span::styled(format!("… {hidden} earlier steps"), theme.dim),
                    ]));
                }
                lines.extend(steps.into_iter().skip(hidden));
            } else if tools > 0 {
                let noun = if tools == 1 {
                    "tool call"
                } else {
                    "tool calls"
                };
                lines.push(Line::from(vec![
                    gutter[0].clone(),
                    Span::styled(format!("{tools} {noun}"), theme.dim),
                ]));
            }
        }
    }
    if let Some(progress) = card
        .progress
        .as_ref()
        .filter(|_| card.status == ToolStatus::Running)
    {
        lines.extend(wrap_text(
            wrap::sanitize(progress).as_ref(),
            theme.dim,
            width,
            &gutter,
            &gutter,
        ));
    }
    let has_subagent_detail = card.expanded && card.subagent.is_some();
    if card.expanded {
        let args = pretty_arguments(&card.arguments);
        if !args.is_empty() {
            lines.extend(wrap_text(&args, theme.dim, width, &gutter, &gutter));
        }
    }
    if card.result.trim().is_empty() || has_subagent_detail {
        return lines;
    }
    let style = if card.status == ToolStatus::Failed {
        theme.error
    } else {
        Style::new()
    };
    if card.expanded {
        let body = wrap_text(
            wrap::sanitize(card.result.trim_matches('\n')).as_ref(),
            style,
            width,
            &gutter,
            &gutter,
        );
        let hidden = body.len().saturating_sub(EXPANDED_LINES);
        lines.extend(body.into_iter().take(EXPANDED_LINES));
        if hidden > 0 {
            lines.push(more_line(hidden, &gutter, theme));
        }
    } else if card.promotion.is_none() || card.status == ToolStatus::Failed {
        lines.extend(preview(
            &card.result,
            PREVIEW_LINES,
            width,
            style,
            &gutter,
            theme,
        ));
    }
    lines
}

/// `✓ name  arguments · 1.2 s`, cut to the width.
fn header(card: &ToolCard, width: usize, theme: &Theme, frame: usize) -> Line<'static> {
    let (icon, icon_style) = match card.status {
        ToolStatus::Running => (SPINNER[frame % SPINNER.len()], theme.accent),
        ToolStatus::Ok => ("✓", theme.ok),
        ToolStatus::Failed => ("✗", theme.error),
        ToolStatus::Unknown => ("·", theme.dim),
    };
    let name = if card.role == ToolRole::Subagent {
        match &card.subagent {
            Some((n, _)) => format!("task #{n}"),
            None => "task".to_string(),
        }
    } else {
        card.name.clone()
    };
    let duration = card
        .duration_ms
        .map(|ms| format!(" · {}", format_duration(ms)))
        .unwrap_or_default();
    let mut summary = summarize_arguments(card.role, &card.arguments);
    let fixed = 2 + wrap::width(&name) + wrap::width(&duration);
    let room = width.saturating_sub(fixed + 2);
    if !summary.is_empty() {
        summary = wrap::truncate(&summary, room);
    }
    let mut spans = vec![
        Span::styled(format!("{icon} "), icon_style),
        Span::styled(
            wrap::truncate(&name, width.saturating_sub(2)),
            Style::new().add_modifier(Modifier::BOLD),
        ),
    ];
    if !summary.is_empty() && room > 1 {
        spans.push(Span::raw("  "));
        spans.push(Span::styled(summary, theme.dim));
    }
    if wrap::spans_width(&spans) + wrap::width(&duration) <= width {
        spans.push(Span::styled(duration, theme.dim));
    }
    Line::from(spans)
}

/// One line for a subagent's step in a collapsed `task` card.
fn step(entry: &Entry, width: usize, theme: &Theme, frame: usize) -> Option<Line<'static>> {
    let mut spans = vec![Span::styled("  │ ", theme.dim)];
    match entry {
        Entry::Tool(card) => {
            let inner = header(card, width.saturating_sub(4), theme, frame);
            spans.extend(inner.spans);
        }
        Entry::Answer(a) if !a.text.trim().is_empty() => {
            spans.push(Span::styled(
                wrap::one_line(&a.text, width.saturating_sub(4)),
                theme.dim,
            ));
        }
        Entry::Error(e) => spans.push(Span::styled(
            wrap::one_line(e, width.saturating_sub(4)),
            theme.error,
        )),
        _ => return None,
    }
    Some(Line::from(spans))
}

/// What was promoted and what lapsed, and the working set.
pub(crate) fn promotion_lines(p: &Promotion, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let gutter = [Span::styled("  │ ", theme.dim)];
    let mut lines = Vec::new();
    if !p.added.is_empty() {
        let first = [gutter[0].clone(), Span::styled("⇡ promoted ", theme.ok)];
        lines.extend(wrap_text(
            &p.added.join(", "),
            theme.accent,
            width,
            &first,
            &[gutter[0].clone(), Span::raw("           ")],
        ));
    }
    if !p.removed.is_empty() {
        let first = [gutter[0].clone(), Span::styled("⇣ lapsed ", theme.dim)];
        lines.extend(wrap_text(
            &p.removed.join(", "),
            theme.dim,
            width,
            &first,
            &[gutter[0].clone(), Span::raw("         ")],
        ));
    }
    let mut facts: Vec<String> = p
        .working_set
        .map(|n| format!("working set {n}"))
        .into_iter()
        .collect();
    if let Some(hash) = &p.catalog_hash {
        facts.push(format!("catalog {}", short_hash(hash)));
    }
    if !facts.is_empty() {
        lines.extend(wrap_text(
            &facts.join(" · "),
            theme.dim,
            width,
            &gutter,
            &gutter,
        ));
    }
    lines
}

/// The first 8 characters of a catalog hash.
pub(crate) fn short_hash(hash: &str) -> String {
    hash.chars().take(8).collect()
}

/// The arguments in one line: the telling argument's value, or `key: value` pairs.
pub(crate) fn summarize_arguments(role: ToolRole, arguments: &Value) -> String {
    let scalar = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    };
    let text = match arguments {
        Value::Object(map) if role == ToolRole::Search => map
            .get("query")
            .map(|q| format!("“{}”", scalar(q)))
            .unwrap_or_default(),
        Value::Object(map) => match PRIMARY_KEYS.iter().find_map(|k| map.get(*k)) {
            Some(value) => scalar(value),
            None => map
                .iter()
                .map(|(k, v)| format!("{k}: {}", scalar(v)))
                .collect::<Vec<_>>()
                .join(", "),
        },
        Value::Null => String::new(),
        other => scalar(other),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The arguments pretty-printed (expanded cards).
fn pretty_arguments(arguments: &Value) -> String {
    match arguments {
        Value::Null => String::new(),
        Value::Object(map) if map.is_empty() => String::new(),
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_summarised_by_their_telling_key() {
        assert_eq!(
            summarize_arguments(ToolRole::Configured, &json!({"command": "ls  -la\n/tmp"})),
            "ls -la /tmp"
        );
        assert_eq!(
            summarize_arguments(ToolRole::Search, &json!({"query": "github issues"})),
            "“github issues”"
        );
        assert_eq!(
            summarize_arguments(ToolRole::Mcp, &json!({"owner": "me", "n": 3})),
            "owner: me, n: 3"
        );
        assert_eq!(
            summarize_arguments(ToolRole::BuiltIn, &json!({"filepaths": ["a", "b"]})),
            "a, b"
        );
        assert_eq!(
            summarize_arguments(ToolRole::Unknown, &json!("{not json")),
            "{not json"
        );
    }
}

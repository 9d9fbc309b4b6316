//! The status line: whether a run is going on, the model, the thread, its tokens, the
//! promoted count and the MCP servers; the least important facts go first when narrow.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::cards::SPINNER;
use super::theme::Theme;
use super::wrap;
use antler_protocol::SessionInfo;

/// What the status line shows besides the session's facts.
pub(crate) struct Status<'a> {
    /// The session's facts.
    pub info: &'a SessionInfo,
    /// A run is going on: seconds since it started.
    pub running: Option<u64>,
    /// Picks the spinner's glyph (any number: it wraps).
    pub frame: usize,
    /// A short message that replaces the hint (e.g. "Ctrl-C again to quit").
    pub flash: Option<&'a str>,
    /// The session is starting: how many MCP servers are ready and how many failed.
    pub starting: Option<(usize, usize)>,
}

/// The status line, at most `width` columns.
pub(crate) fn status_line(s: &Status<'_>, width: usize, theme: &Theme) -> Line<'static> {
    let info = s.info;
    // (priority: higher stays longer, text, style)
    let mut segments: Vec<(u8, String, Style)> = Vec::new();
    if let Some(seconds) = s.running {
        let spinner = SPINNER[s.frame % SPINNER.len()];
        segments.push((
            9,
            format!("{spinner} running {seconds}s · esc cancels"),
            theme.accent,
        ));
    }
    if let Some((ready, failed)) = s.starting {
        let spinner = SPINNER[s.frame % SPINNER.len()];
        let mut text = format!("{spinner} starting MCP servers");
        if ready + failed > 0 {
            text.push_str(&format!(": {ready} ready"));
        }
        if failed > 0 {
            text.push_str(&format!(", {failed} failed"));
        }
        let style = if failed > 0 { theme.warn } else { theme.accent };
        segments.push((9, text, style));
    }
    if !info.model.is_empty() {
        segments.push((
            8,
            info.model.clone(),
            Style::new().add_modifier(Modifier::BOLD),
        ));
    }
    let title = if info.thread_title.trim().is_empty() {
        if info.thread_id.is_empty() {
            "new thread".to_string()
        } else {
            info.thread_id.clone()
        }
    } else {
        wrap::truncate(&wrap::one_line(&info.thread_title, 200), 32)
    };
    segments.push((3, title, Style::new()));
    let tokens = info.usage.input_tokens + info.usage.output_tokens;
    segments.push((6, format!("{} tokens", compact(tokens)), theme.dim));
    if info.promoted > 0 {
        segments.push((4, format!("{} promoted", info.promoted), theme.dim));
    }
    if info.mcp_up + info.mcp_down > 0 {
        let style = if info.mcp_down > 0 {
            theme.warn
        } else {
            theme.dim
        };
        segments.push((5, format!("mcp {}↑ {}↓", info.mcp_up, info.mcp_down), style));
    }
    let right = match s.flash {
        Some(flash) => Span::styled(flash.to_string(), theme.warn),
        None if s.running.is_none() => Span::styled("/help".to_string(), theme.dim),
        None => Span::raw(""),
    };
    let separator = " · ";
    let total = |segs: &[(u8, String, Style)]| {
        segs.iter().map(|(_, t, _)| wrap::width(t)).sum::<usize>()
            + wrap::width(separator) * segs.len().saturating_sub(1)
    };
    let room = width.saturating_sub(wrap::width(&right.content) + 2);
    while segments.len() > 1 && total(&segments) > room {
        if let Some(lowest) = segments
            .iter()
            .enumerate()
            .min_by_key(|(_, (p, _, _))| *p)
            .map(|(i, _)| i)
        {
            segments.remove(lowest);
        }
    }
    let mut spans = Vec::new();
    for (i, (_, text, style)) in segments.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(separator, theme.dim));
        }
        spans.push(Span::styled(text, style));
    }
    let used = wrap::spans_width(&spans);
    if used > width {
        let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
        return Line::from(Span::styled(wrap::truncate(&text, width), theme.accent));
    }
    let gap = width.saturating_sub(used + wrap::width(&right.content));
    if gap >= 1 && !right.content.is_empty() {
        spans.push(Span::raw(" ".repeat(gap)));
        spans.push(right);
    }
    Line::from(spans)
}

/// A token count for a glance: 850, 12.3k, 1.2M.
pub(crate) fn compact(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::theme::Palette;

    #[test]
    fn facts_drop_by_priority_when_narrow() {
        let info = SessionInfo {
            model: "gpt-4.1".into(),
            thread_title: "Fix the flaky test".into(),
            promoted: 3,
            mcp_up: 2,
            mcp_down: 1,
            ..SessionInfo::default()
        };
        let theme = Theme::new(Palette::Plain, false);
        let line = |width| {
            let s = Status {
                info: &info,
                running: Some(3),
                frame: 0,
                flash: None,
                starting: None,
            };
            status_line(&s, width, &theme).to_string()
        };
        assert_eq!(
            line(120).trim_end(),
            "⠋ running 3s · esc cancels · gpt-4.1 · Fix the flaky test · 0 tokens · 3 promoted · mcp 2↑ 1↓"
        );
        assert_eq!(
            line(60).trim_end(),
            "⠋ running 3s · esc cancels · gpt-4.1 · 0 tokens"
        );
        assert_eq!(compact(12_345), "12.3k");
    }

    #[test]
    fn start_up_progress_leads_the_line() {
        let info = SessionInfo {
            model: "gpt-4.1".into(),
            ..SessionInfo::default()
        };
        let theme = Theme::new(Palette::Plain, false);
        let line = |starting| {
            let s = Status {
                info: &info,
                running: None,
                frame: 0,
                flash: None,
                starting: Some(starting),
            };
            status_line(&s, 60, &theme).to_string()
        };
        assert!(line((0, 0)).starts_with("⠋ starting MCP servers · gpt-4.1"));
        assert!(line((2, 1)).starts_with("⠋ starting MCP servers: 2 ready, 1 failed · gpt-4.1"));
    }
}

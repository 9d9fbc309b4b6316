//! Text to screen lines: control characters made harmless, words wrapped to a width by
//! display columns (wide characters count two), prefixes for gutters and list markers.
//! Every view wraps here, so the transcript knows its exact height at any width.

use std::borrow::Cow;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Columns a tab becomes.
const TAB: &str = "    ";

/// The display width of `text`.
pub(crate) fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// The display width of a line's spans.
pub(crate) fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| width(&s.content)).sum()
}

/// `text` safe to draw: terminal escape sequences and control characters removed, tabs
/// expanded, `\r\n` and lone `\r` made `\n` (tool output is full of them).
pub(crate) fn sanitize(text: &str) -> Cow<'_, str> {
    let clean = |c: char| c == '\n' || !(c.is_control() || c == '\u{7f}');
    if text.chars().all(clean) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            '\t' => out.push_str(TAB),
            '\r' if chars.peek() != Some(&'\n') => out.push('\n'),
            '\r' => {}
            c if clean(c) => out.push(c),
            _ => {}
        }
    }
    Cow::Owned(out)
}

/// Skips the rest of an escape sequence (CSI, OSC or a two-character one).
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
        Some(']') | Some('P') | Some('_') | Some('^') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                    break;
                }
            }
        }
        _ => {}
    }
}

/// Cuts `text` to `max` columns, ending with `…` when it was longer.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if width(text) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    if max > 0 {
        out.push('…');
    }
    out
}

/// The first line of `text`, cleaned and cut to `max` columns.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let text = sanitize(text);
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let more = text.lines().filter(|l| !l.trim().is_empty()).count() > 1;
    let first = first.trim();
    if more && width(first) < max {
        truncate(&format!("{first} …"), max)
    } else {
        truncate(first, max)
    }
}

/// Wraps styled `spans` (which may contain `\n` for hard breaks) into lines of at most
/// `width` columns, each starting with `first` (the first line) or `rest` (the others).
/// Words move to the next line whole unless longer than a line; whitespace at a break is
/// dropped, other whitespace kept (code keeps its indentation).
pub(crate) fn wrap(
    spans: &[Span<'_>],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let mut out = Wrapper {
        lines: Vec::new(),
        current: first.to_vec(),
        used: spans_width(first),
        room: width.saturating_sub(spans_width(first)).max(1),
        rest,
        width,
        fresh: true,
    };
    for span in spans {
        let text = sanitize(&span.content);
        for (i, segment) in text.split('\n').enumerate() {
            if i > 0 {
                out.break_line(false);
            }
            for piece in pieces(segment) {
                out.push(piece, span.style);
            }
        }
    }
    out.lines.push(Line::from(out.current));
    out.lines
}

/// Wraps plain text in one style.
pub(crate) fn wrap_text(
    text: &str,
    style: Style,
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    wrap(&[Span::styled(text.to_string(), style)], width, first, rest)
}

/// Words and runs of spaces, in order.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let space = first == ' ';
        let end = rest
            .char_indices()
            .find(|&(_, c)| (c == ' ') != space)
            .map_or(rest.len(), |(i, _)| i);
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

struct Wrapper<'r> {
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    used: usize,
    room: usize,
    rest: &'r [Span<'static>],
    width: usize,
    /// Nothing but the prefix is on the current line yet.
    fresh: bool,
}

impl Wrapper<'_> {
    fn break_line(&mut self, soft: bool) {
        if soft
            && !self.fresh
            && let Some(last) = self.current.last_mut()
        {
            let trimmed = last.content.trim_end_matches(' ').len();
            last.content.to_mut().truncate(trimmed);
        }
        let done = std::mem::replace(&mut self.current, self.rest.to_vec());
        self.lines.push(Line::from(done));
        self.used = spans_width(self.rest);
        self.room = self.width.saturating_sub(self.used).max(1);
        self.fresh = true;
    }

    fn push(&mut self, piece: &str, style: Style) {
        let w = width(piece);
        let is_space = piece.starts_with(' ');
        if w <= self.room {
            self.append(piece, style, w);
            return;
        }
        if is_space {
            // Spaces at a break vanish (the next word starts the next line), unless they
            // indent a fresh line.
            if self.fresh {
                let keep: String = piece.chars().take(self.room).collect();
                let kw = width(&keep);
                self.append(&keep, style, kw);
            }
            self.room = 0;
            return;
        }
        if !self.fresh && w <= self.width.saturating_sub(spans_width(self.rest)).max(1) {
            self.break_line(true);
            self.append(piece, style, w);
            return;
        }
        // A word longer than a line: split it by characters.
        let mut chunk = String::new();
        let mut chunk_w = 0;
        for c in piece.chars() {
            let cw = c.width().unwrap_or(0);
            if chunk_w + cw > self.room && (chunk_w > 0 || !self.fresh) {
                let taken = std::mem::take(&mut chunk);
                self.append(&taken, style, chunk_w);
                self.break_line(true);
                chunk_w = 0;
            }
            chunk.push(c);
            chunk_w += cw;
        }
        self.append(&chunk, style, chunk_w);
    }

    fn append(&mut self, piece: &str, style: Style, w: usize) {
        if piece.is_empty() {
            return;
        }
        match self.current.last_mut() {
            Some(last) if last.style == style && !self.fresh => {
                last.content.to_mut().push_str(piece);
            }
            _ => self.current.push(Span::styled(piece.to_string(), style)),
        }
        self.used += w;
        self.room = self.room.saturating_sub(w);
        self.fresh = false;
    }
}

/// Pads or cuts `line` to exactly `width` columns (for table cells).
pub(crate) fn fit(
    mut line: Line<'static>,
    width: usize,
    align_right: bool,
    center: bool,
) -> Line<'static> {
    let w = line.width();
    if w >= width {
        return line;
    }
    let gap = width - w;
    let (left, right) = if align_right {
        (gap, 0)
    } else if center {
        (gap / 2, gap - gap / 2)
    } else {
        (0, gap)
    };
    if left > 0 {
        line.spans.insert(0, Span::raw(" ".repeat(left)));
    }
    if right > 0 {
        line.spans.push(Span::raw(" ".repeat(right)));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn words_wrap_with_prefixes_and_long_words_split() {
        let lines = wrap_text(
            "the quick brown fox jumps",
            Style::new(),
            12,
            &[Span::raw("• ")],
            &[Span::raw("  ")],
        );
        assert_eq!(text(&lines), ["• the quick", "  brown fox", "  jumps"]);
        let lines = wrap_text("abcdefghijkl", Style::new(), 5, &[], &[]);
        assert_eq!(text(&lines), ["abcde", "fghij", "kl"]);
        let lines = wrap_text("  indented\nnext", Style::new(), 20, &[], &[]);
        assert_eq!(text(&lines), ["  indented", "next"]);
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let lines = wrap_text("日本語のテキスト", Style::new(), 6, &[], &[]);
        assert_eq!(text(&lines), ["日本語", "のテキ", "スト"]);
        assert_eq!(truncate("日本語", 5), "日本…");
    }

    #[test]
    fn escapes_and_controls_are_removed() {
        assert_eq!(
            sanitize("\u{1b}[31mred\u{1b}[0m\tx\r\ny\rz\u{7}"),
            "red    x\ny\nz"
        );
        assert_eq!(sanitize("\u{1b}]0;title\u{7}ok"), "ok");
        assert!(matches!(sanitize("plain"), Cow::Borrowed(_)));
    }
}

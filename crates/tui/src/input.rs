//! The input box: a multi-line text buffer with a cursor, the editing keys people expect
//! from a shell line, the history of sent messages, and its rendering (hard-wrapped by
//! columns, so the cursor's screen position is exact).

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

use super::wrap::sanitize;

/// A text buffer with a cursor (a byte offset on a character boundary).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Input {
    text: String,
    cursor: usize,
}

impl Input {
    /// What is typed so far, as one string (newlines included).
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The cursor, a byte offset into the text.
    pub(crate) fn cursor(&self) -> usize {
        self.cursor
    }

    /// The cursor's column on a one-line text (display width of what precedes it).
    pub(crate) fn cursor_column(&self) -> usize {
        self.text[..self.cursor]
            .chars()
            .map(|c| c.width().unwrap_or(0))
            .sum()
    }

    /// Whether nothing is typed.
    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the text; the cursor goes to its end.
    pub(crate) fn set(&mut self, text: impl Into<String>) {
        self.text = text.into();
        self.cursor = self.text.len();
    }

    /// Empties the box and returns what it held.
    pub(crate) fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    /// Types `c` at the cursor.
    pub(crate) fn insert(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    /// Inserts pasted text at the cursor (line endings normalised, controls removed).
    pub(crate) fn paste(&mut self, text: &str) {
        let clean = sanitize(text);
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
    }

    fn prev(&self) -> usize {
        self.text[..self.cursor]
            .char_indices()
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    fn next(&self) -> usize {
        self.text[self.cursor..]
            .chars()
            .next()
            .map_or(self.cursor, |c| self.cursor + c.len_utf8())
    }

    /// Deletes the character before the cursor.
    pub(crate) fn backspace(&mut self) {
        let start = self.prev();
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Deletes the character under the cursor.
    pub(crate) fn delete(&mut self) {
        let end = self.next();
        self.text.replace_range(self.cursor..end, "");
    }

    /// Moves one character left.
    pub(crate) fn left(&mut self) {
        self.cursor = self.prev();
    }

    /// Moves one character right.
    pub(crate) fn right(&mut self) {
        self.cursor = self.next();
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// Moves to the start of the line.
    pub(crate) fn home(&mut self) {
        self.cursor = self.line_start();
    }

    /// Moves to the end of the line.
    pub(crate) fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Whether the cursor is on the first line (Up recalls history there).
    pub(crate) fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    /// Whether the cursor is on the last line (Down goes forward in history there).
    pub(crate) fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Moves up a line, keeping the column where it can.
    pub(crate) fn up(&mut self) {
        let start = self.line_start();
        if start == 0 {
            return;
        }
        let column = self.text[start..self.cursor].chars().count();
        let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        self.cursor = advance(&self.text, prev_start, start - 1, column);
    }

    /// Moves down a line, keeping the column where it can.
    pub(crate) fn down(&mut self) {
        let end = self.line_end();
        if end == self.text.len() {
            return;
        }
        let column = self.text[self.line_start()..self.cursor].chars().count();
        let next_start = end + 1;
        let next_end = self.text[next_start..]
            .find('\n')
            .map_or(self.text.len(), |i| next_start + i);
        self.cursor = advance(&self.text, next_start, next_end, column);
    }

    /// Moves to the start of the previous word.
    pub(crate) fn word_left(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        self.cursor = trimmed.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    }

    /// Moves past the end of the next word.
    pub(crate) fn word_right(&mut self) {
        let after = &self.text[self.cursor..];
        let skip = after.len() - after.trim_start().len();
        let word = after[skip..]
            .find(char::is_whitespace)
            .unwrap_or(after.len() - skip);
        self.cursor += skip + word;
    }

    /// Deletes the word before the cursor.
    pub(crate) fn delete_word(&mut self) {
        let end = self.cursor;
        self.word_left();
        self.text.replace_range(self.cursor..end, "");
    }

    /// Deletes from the start of the line to the cursor.
    pub(crate) fn kill_to_start(&mut self) {
        let start = self.line_start();
        let start = if start == self.cursor {
            self.prev()
        } else {
            start
        };
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Deletes from the cursor to the end of the line.
    pub(crate) fn kill_to_end(&mut self) {
        let end = self.line_end();
        let end = if end == self.cursor { self.next() } else { end };
        self.text.replace_range(self.cursor..end, "");
    }

    /// The text hard-wrapped at `width` columns, and the cursor's (column, row) in it.
    pub(crate) fn layout(
        &self,
        width: usize,
        style: Style,
    ) -> (Vec<Line<'static>>, (usize, usize)) {
        let width = width.max(2);
        let mut lines = Vec::new();
        let mut current = String::new();
        let mut used = 0;
        let mut cursor = (0, 0);
        for (i, c) in self.text.char_indices() {
            if i == self.cursor {
                cursor = (used, lines.len());
            }
            if c == '\n' {
                lines.push(Line::from(Span::styled(
                    std::mem::take(&mut current),
                    style,
                )));
                used = 0;
                continue;
            }
            let w = c.width().unwrap_or(0);
            if used + w > width {
                lines.push(Line::from(Span::styled(
                    std::mem::take(&mut current),
                    style,
                )));
                used = 0;
                if i == self.cursor {
                    cursor = (0, lines.len());
                }
            }
            current.push(c);
            used += w;
        }
        if self.cursor >= self.text.len() {
            if used >= width {
                lines.push(Line::from(Span::styled(
                    std::mem::take(&mut current),
                    style,
                )));
                used = 0;
            }
            cursor = (used, lines.len());
        }
        lines.push(Line::from(Span::styled(current, style)));
        (lines, cursor)
    }
}

/// The byte offset `column` characters after `start`, at most `end`.
fn advance(text: &str, start: usize, end: usize, column: usize) -> usize {
    text[start..end]
        .char_indices()
        .nth(column)
        .map_or(end, |(i, _)| start + i)
}

/// Sent messages, for Up and Down; what was being typed is kept while browsing.
#[derive(Debug, Clone, Default)]
pub(crate) struct History {
    entries: Vec<String>,
    /// The entry shown, while browsing.
    position: Option<usize>,
    draft: String,
}

impl History {
    /// Remembers a sent message (not twice in a row).
    pub(crate) fn push(&mut self, text: &str) {
        if self.entries.last().map(String::as_str) != Some(text) {
            self.entries.push(text.to_string());
        }
        self.position = None;
    }

    /// The entry before the one shown (the newest first), keeping `current` as the draft.
    pub(crate) fn previous(&mut self, current: &str) -> Option<&str> {
        let next = match self.position {
            None if self.entries.is_empty() => return None,
            None => {
                self.draft = current.to_string();
                self.entries.len() - 1
            }
            Some(0) => return None,
            Some(p) => p - 1,
        };
        self.position = Some(next);
        self.entries.get(next).map(String::as_str)
    }

    /// The entry after the one shown, or the draft past the newest.
    pub(crate) fn next(&mut self) -> Option<&str> {
        let p = self.position?;
        if p + 1 < self.entries.len() {
            self.position = Some(p + 1);
            self.entries.get(p + 1).map(String::as_str)
        } else {
            self.position = None;
            Some(&self.draft)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_moves_by_characters_and_lines() {
        let mut input = Input::default();
        input.paste("héllo\r\nwörld");
        assert_eq!(input.text(), "héllo\nwörld");
        input.up();
        input.backspace();
        input.insert('X');
        assert_eq!(input.text(), "héllX\nwörld");
        input.down();
        input.end();
        input.delete_word();
        assert_eq!(input.text(), "héllX\n");
        input.kill_to_start();
        assert_eq!(input.text(), "héllX");
    }

    #[test]
    fn layout_wraps_and_places_the_cursor() {
        let mut input = Input::default();
        input.set("abcdef\ngh");
        let (lines, cursor) = input.layout(4, Style::new());
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(text, ["abcd", "ef", "gh"]);
        assert_eq!(cursor, (2, 2));
        input.set("abcd");
        assert_eq!(input.layout(4, Style::new()).1, (0, 1));
    }

    #[test]
    fn history_browses_back_and_restores_the_draft() {
        let mut h = History::default();
        h.push("one");
        h.push("two");
        assert_eq!(h.previous("draft"), Some("two"));
        assert_eq!(h.previous("ignored"), Some("one"));
        assert_eq!(h.previous("ignored"), None);
        assert_eq!(h.next(), Some("two"));
        assert_eq!(h.next(), Some("draft"));
        assert_eq!(h.next(), None);
    }
}

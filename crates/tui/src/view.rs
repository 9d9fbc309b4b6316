//! Drawing the chat: the transcript (only its visible lines), the queued messages, the
//! slash popup, the input box, the status line and the open dialog.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Clear;

use super::app::App;
use super::dialog_view::{DialogData, render_dialog};
use super::status::{Status, status_line};
use super::transcript::Entry;
use super::wrap;
use antler_protocol::ServerState;

/// The most rows the slash popup takes.
const POPUP_ROWS: usize = 8;

/// The most rows queued messages take.
const QUEUED_ROWS: usize = 3;

impl App {
    /// Draws the whole screen.
    pub(crate) fn render(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        if area.width == 0 || area.height == 0 {
            return;
        }
        let width = usize::from(area.width);
        let prompt_width = width.saturating_sub(2).max(1);
        let (input_lines, cursor) = self.input.layout(prompt_width, Style::new());
        let max_input = usize::from(area.height / 3).max(1);
        let input_rows = input_lines.len().clamp(1, max_input);
        let queued_rows = self.queued.len().min(QUEUED_ROWS);
        let fixed = input_rows + queued_rows + 2;
        let transcript_rows = usize::from(area.height).saturating_sub(fixed);
        let rows = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        let mut y = area.y;
        let transcript_area = Rect {
            x: area.x,
            y,
            width: area.width,
            height: rows(transcript_rows),
        };
        y += transcript_area.height;
        self.draw_transcript(transcript_area, frame.buffer_mut());
        let queued_area = Rect {
            x: area.x,
            y,
            width: area.width,
            height: rows(queued_rows).min(area.bottom() - y),
        };
        y += queued_area.height;
        self.draw_queued(queued_area, frame.buffer_mut());
        if y < area.bottom() {
            let rule = self.rule(width);
            frame.buffer_mut().set_line(area.x, y, &rule, area.width);
            y += 1;
        }
        let input_area = Rect {
            x: area.x,
            y,
            width: area.width,
            height: rows(input_rows).min(area.bottom().saturating_sub(y)),
        };
        let first = cursor.1.saturating_sub(input_rows - 1);
        self.draw_input(input_area, &input_lines, first, frame.buffer_mut());
        if self.dialog.is_none() && input_area.height > 0 {
            let cx = area.x + 2 + rows(cursor.0).min(area.width.saturating_sub(3));
            let cy = input_area.y + rows(cursor.1 - first);
            frame.set_cursor_position((cx, cy.min(input_area.bottom().saturating_sub(1))));
        }
        let status_y = area.bottom() - 1;
        if status_y >= input_area.bottom() {
            let status = Status {
                info: &self.info,
                running: self
                    .running()
                    .then(|| self.tick.saturating_sub(self.run.started) / 10),
                frame: self.frame(),
                flash: self.flash.as_ref().map(|(m, _)| m.as_str()),
                starting: self.start_progress(),
            };
            let line = status_line(&status, width, &self.theme);
            frame
                .buffer_mut()
                .set_line(area.x, status_y, &line, area.width);
        }
        let popup = self.popup();
        if !popup.is_empty() {
            let rule_y = queued_area.bottom();
            let shown = popup
                .len()
                .min(POPUP_ROWS)
                .min(usize::from(rule_y - area.y));
            let popup_area = Rect {
                x: area.x,
                y: rule_y - rows(shown),
                width: area.width,
                height: rows(shown),
            };
            frame.render_widget(Clear, popup_area);
            let selected = self.popup_selected.min(popup.len() - 1);
            let skip = (selected + 1).saturating_sub(shown);
            let name_width = popup
                .iter()
                .map(|c| c.name().chars().count() + c.argument().chars().count() + 2)
                .max()
                .unwrap_or(0);
            for (row, command) in popup.iter().enumerate().skip(skip).take(shown) {
                let is_selected = row == selected;
                let name = format!("/{} {}", command.name(), command.argument());
                let (marker, style) = self.theme.row(is_selected);
                let text = format!("{name:<name_width$}");
                let spans = vec![
                    Span::styled(marker, self.theme.accent),
                    Span::styled(text, style),
                    Span::styled(format!("  {}", command.help()), self.theme.dim),
                ];
                let line = Line::from(spans);
                frame.buffer_mut().set_line(
                    area.x,
                    popup_area.y + rows(row - skip),
                    &line,
                    area.width,
                );
            }
        }
        if let Some(dialog) = self.dialog.as_mut() {
            let data = DialogData {
                tools: self.tools.as_ref(),
                context: self.context.as_ref(),
                mcp: &self.mcp,
            };
            let over = Rect {
                height: area.height.saturating_sub(1),
                ..area
            };
            render_dialog(dialog, &data, over, frame, &self.theme);
        }
    }

    /// While the session starts: how many MCP servers are ready (connected or idle) and
    /// how many failed.
    fn start_progress(&self) -> Option<(usize, usize)> {
        let servers = self.starting.as_deref()?;
        let count = |f: fn(ServerState) -> bool| servers.iter().filter(|s| f(s.status)).count();
        Some((
            count(|s| matches!(s, ServerState::Connected | ServerState::Idle)),
            count(|s| s == ServerState::Failed),
        ))
    }

    /// The spinner frame (ticks drive it, never a clock).
    fn frame(&self) -> usize {
        usize::try_from(self.tick % 1000).unwrap_or(0)
    }

    fn draw_transcript(&mut self, area: Rect, buf: &mut Buffer) {
        let width = usize::from(area.width);
        let height = usize::from(area.height);
        let frame = self.frame();
        let tools: Vec<bool> = self
            .transcript
            .entries()
            .map(|e| matches!(e, Entry::Tool(_)))
            .collect();
        let mut spans = Vec::with_capacity(tools.len());
        let mut total = 0;
        for (i, is_tool) in tools.iter().enumerate() {
            if i > 0 && !(*is_tool && tools[i - 1]) {
                total += 1;
            }
            let rows = self.transcript.lines(i, width, &self.theme, frame).len();
            spans.push((total, rows));
            total += rows;
        }
        let bottom = total.saturating_sub(height);
        let top = match self.scroll {
            Some(top) if top < bottom => top,
            _ => {
                self.scroll = None;
                bottom
            }
        };
        self.view = super::app::ViewState {
            area,
            total,
            top,
            spans: spans.clone(),
        };
        if self.transcript.is_empty() {
            self.draw_welcome(area, buf);
            return;
        }
        for (i, (start, rows)) in spans.into_iter().enumerate() {
            if start + rows <= top || start >= top + height {
                continue;
            }
            let lines = self.transcript.lines(i, width, &self.theme, frame);
            for (j, line) in lines.iter().enumerate() {
                let at = start + j;
                if at >= top && at < top + height {
                    let y = area.y + u16::try_from(at - top).unwrap_or(0);
                    buf.set_line(area.x, y, line, area.width);
                }
            }
        }
    }

    fn draw_welcome(&self, area: Rect, buf: &mut Buffer) {
        let width = usize::from(area.width);
        let indent = [Span::raw("  ")];
        // The model in use and where its calls go: the first thing to check when the
        // first message fails.
        let model = self
            .info
            .models
            .iter()
            .find(|m| m.current && !m.detail.is_empty())
            .map_or(self.info.model.as_str(), |m| m.detail.as_str());
        let mut lines = vec![
            Line::default(),
            Line::from(vec![
                indent[0].clone(),
                Span::styled("antler", self.theme.heading),
                Span::styled(format!(" · {model}"), self.theme.dim),
            ]),
        ];
        let hint = "Ask anything. Enter sends, Shift-Enter adds a line, / lists the commands, /help the keys.";
        lines.extend(wrap::wrap_text(
            hint,
            self.theme.dim,
            width,
            &indent,
            &indent,
        ));
        for (i, line) in lines.iter().enumerate().take(usize::from(area.height)) {
            buf.set_line(
                area.x,
                area.y + u16::try_from(i).unwrap_or(0),
                line,
                area.width,
            );
        }
    }

    fn draw_queued(&self, area: Rect, buf: &mut Buffer) {
        let room = usize::from(area.width).saturating_sub(10);
        for (i, text) in self
            .queued
            .iter()
            .take(usize::from(area.height))
            .enumerate()
        {
            let line = Line::from(vec![
                Span::styled("queued  ", self.theme.dim),
                Span::styled(wrap::one_line(text, room), self.theme.dim),
            ]);
            buf.set_line(
                area.x + 2,
                area.y + u16::try_from(i).unwrap_or(0),
                &line,
                area.width.saturating_sub(2),
            );
        }
    }

    /// The rule above the input; says how much is below when scrolled up.
    fn rule(&self, width: usize) -> Line<'static> {
        let below = self
            .view
            .total
            .saturating_sub(self.view.top + usize::from(self.view.area.height));
        if self.scroll.is_some() && below > 0 {
            let note = format!(" ↓ {below} more lines · End follows ");
            let left = width.saturating_sub(wrap::width(&note) + 2);
            return Line::from(vec![
                Span::styled("─".repeat(left), self.theme.dim),
                Span::styled(note, self.theme.accent),
                Span::styled("──", self.theme.dim),
            ]);
        }
        Line::from(Span::styled("─".repeat(width), self.theme.dim))
    }

    fn draw_input(&self, area: Rect, lines: &[Line<'static>], first: usize, buf: &mut Buffer) {
        if area.height == 0 {
            return;
        }
        let prompt = Span::styled("› ", self.theme.accent);
        if self.input.is_empty() {
            let hint = if self.running() {
                "Type ahead; it is sent when the run ends"
            } else if self.starting.is_some() {
                "Type ahead; it is sent when the MCP servers are up"
            } else {
                "Ask anything · / for commands"
            };
            let line = Line::from(vec![prompt, Span::styled(hint, self.theme.dim)]);
            buf.set_line(area.x, area.y, &line, area.width);
            return;
        }
        for (row, line) in lines
            .iter()
            .skip(first)
            .take(usize::from(area.height))
            .enumerate()
        {
            let lead = if row + first == 0 {
                prompt.clone()
            } else {
                Span::raw("  ")
            };
            let mut spans = vec![lead];
            spans.extend(line.spans.iter().cloned());
            buf.set_line(
                area.x,
                area.y + u16::try_from(row).unwrap_or(0),
                &Line::from(spans),
                area.width,
            );
        }
    }
}

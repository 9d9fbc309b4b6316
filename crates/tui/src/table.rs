//! Markdown tables: columns sized to their content, shrunk to the width when needed (the
//! widest first), cells wrapped within their column and aligned as the table says.

use pulldown_cmark::Alignment;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use super::theme::Theme;
use super::wrap::{fit, spans_width, wrap};

/// The narrowest a column is shrunk to.
const MIN_COLUMN: usize = 4;

/// A table being collected from the parser's events.
pub(crate) struct Table {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<Vec<Span<'static>>>>,
    row: Vec<Vec<Span<'static>>>,
    in_cell: bool,
}

impl Table {
    /// An empty table with its columns' alignments.
    pub(crate) fn new(aligns: Vec<Alignment>) -> Self {
        Self {
            aligns,
            rows: Vec::new(),
            row: Vec::new(),
            in_cell: false,
        }
    }

    /// Whether text goes into a cell now.
    pub(crate) fn in_cell(&self) -> bool {
        self.in_cell
    }

    /// Adds text to the open cell.
    pub(crate) fn push(&mut self, span: Span<'static>) {
        if let Some(cell) = self.row.last_mut() {
            cell.push(span);
        }
    }

    /// Opens the row's next cell: `push` adds to it until `end_cell`.
    pub(crate) fn start_cell(&mut self) {
        self.row.push(Vec::new());
        self.in_cell = true;
    }

    /// Closes the open cell.
    pub(crate) fn end_cell(&mut self) {
        self.in_cell = false;
    }

    /// Closes a row (the head counts as the first).
    pub(crate) fn end_row(&mut self) {
        self.rows.push(std::mem::take(&mut self.row));
    }
}

/// `table` as lines of at most `width` columns where possible (a table with very many
/// columns may be wider; the screen cuts it).
pub(crate) fn render_table(table: Table, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
    if columns == 0 {
        return Vec::new();
    }
    let mut widths = vec![0; columns];
    for row in &table.rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(spans_width(cell));
        }
    }
    let room = width.saturating_sub(3 * (columns - 1));
    while widths.iter().sum::<usize>() > room {
        let Some((widest, w)) = widths.iter().copied().enumerate().max_by_key(|&(_, w)| w) else {
            break;
        };
        if w <= MIN_COLUMN {
            break;
        }
        widths[widest] = w - 1;
    }
    let separator = Span::styled(" │ ", theme.dim);
    let mut out = Vec::new();
    for (r, row) in table.rows.iter().enumerate() {
        let cells: Vec<Vec<Line<'static>>> = (0..columns)
            .map(|i| {
                let mut spans = row.get(i).cloned().unwrap_or_default();
                if r == 0 {
                    for s in &mut spans {
                        s.style = s.style.add_modifier(Modifier::BOLD);
                    }
                }
                wrap(&spans, widths[i].max(1), &[], &[])
            })
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for l in 0..height {
            let mut spans = Vec::new();
            for (i, cell) in cells.iter().enumerate() {
                if i > 0 {
                    spans.push(separator.clone());
                }
                let line = cell.get(l).cloned().unwrap_or_default();
                let align = table.aligns.get(i).copied().unwrap_or(Alignment::None);
                let line = fit(
                    line,
                    widths[i],
                    align == Alignment::Right,
                    align == Alignment::Center,
                );
                spans.extend(line.spans);
            }
            trim_end(&mut spans);
            out.push(Line::from(spans));
        }
        if r == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            out.push(Line::from(Span::styled(rule.join("─┼─"), theme.dim)));
        }
    }
    out
}

/// Drops trailing blanks (the last column's padding).
fn trim_end(spans: &mut Vec<Span<'static>>) {
    while let Some(last) = spans.last_mut() {
        let trimmed = last.content.trim_end().len();
        if trimmed == 0 {
            spans.pop();
        } else {
            last.content.to_mut().truncate(trimmed);
            break;
        }
    }
}

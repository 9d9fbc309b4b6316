//! The assistant's markdown as screen lines: headings, emphasis, links, lists (nested,
//! ordered, tasks), quotes, rules, fenced code with highlighting, and tables. Partial
//! markdown (mid-stream) renders as far as it goes; an open code fence runs to the end.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::code_lines;
use super::table::{Table, render_table};
use super::theme::Theme;
use super::wrap::{width as text_width, wrap};

/// `text` rendered to lines of at most `width` columns.
pub(crate) fn render(text: &str, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut r = Renderer {
        theme,
        width: width.max(1),
        out: Vec::new(),
        inline: Vec::new(),
        styles: Vec::new(),
        containers: Vec::new(),
        lists: Vec::new(),
        code: None,
        table: None,
        links: Vec::new(),
        gap: false,
    };
    for event in Parser::new_ext(text, options) {
        r.event(event);
    }
    if let Some((lang, code)) = r.code.take() {
        r.code_block(&lang, &code);
    }
    r.flush();
    r.out
}

enum Container {
    Quote,
    Item { marker: String, pending: bool },
}

struct Renderer<'t> {
    theme: &'t Theme,
    width: usize,
    out: Vec<Line<'static>>,
    /// The paragraph being collected.
    inline: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// Open lists: the next number of ordered ones.
    lists: Vec<Option<u64>>,
    /// An open code block: its language and text.
    code: Option<(String, String)>,
    table: Option<Table>,
    /// Open links: where their text starts in `inline`, and the target.
    links: Vec<(usize, String)>,
    /// A blank line is due before the next block.
    gap: bool,
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.iter().fold(Style::new(), |a, s| a.patch(*s))
    }

    fn push_text(&mut self, text: &str, style: Style) {
        if let Some(table) = self.table.as_mut().filter(|t| t.in_cell()) {
            table.push(Span::styled(text.to_string(), style));
        } else {
            self.inline.push(Span::styled(text.to_string(), style));
        }
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some((_, code)) = self.code.as_mut() {
            match event {
                Event::Text(t) => code.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    if let Some((lang, code)) = self.code.take() {
                        self.code_block(&lang, &code);
                    }
                    self.end_block();
                }
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.push_text(&t, self.style()),
            Event::Code(t) => self.push_text(&t, self.style().patch(self.theme.code)),
            Event::Html(t) | Event::InlineHtml(t) => {
                self.push_text(t.trim_end_matches('\n'), self.theme.dim);
            }
            Event::SoftBreak => self.push_text(" ", self.style()),
            Event::HardBreak => self.push_text("\n", self.style()),
            Event::Rule => {
                self.start_block();
                let (first, _) = self.prefix();
                let room = self.width.saturating_sub(super::wrap::spans_width(&first));
                let mut spans = first;
                spans.push(Span::styled("─".repeat(room), self.theme.dim));
                self.out.push(Line::from(spans));
                self.end_block();
            }
            Event::TaskListMarker(done) => {
                self.push_text(if done { "[x] " } else { "[ ] " }, self.theme.dim);
            }
            Event::FootnoteReference(label) => {
                self.push_text(&format!("[^{label}]"), self.theme.dim)
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => self.push_text(&t, self.theme.code),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph
            | Tag::HtmlBlock
            | Tag::FootnoteDefinition(_)
            | Tag::MetadataBlock(_) => {
                self.start_block();
            }
            Tag::DefinitionList | Tag::DefinitionListTitle | Tag::DefinitionListDefinition => {
                self.start_block()
            }
            Tag::Heading { level, .. } => self.start_heading(level),
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => self.start_code_block(kind),
            Tag::List(start) => self.start_list(start),
            Tag::Item => self.start_item(),
            Tag::Table(aligns) => {
                self.start_block();
                self.table = Some(Table::new(aligns));
            }
            Tag::TableHead | Tag::TableRow => {}
            Tag::TableCell => {
                if let Some(t) = self.table.as_mut() {
                    t.start_cell();
                }
            }
            Tag::Emphasis => self
                .styles
                .push(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self
                .styles
                .push(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Superscript | Tag::Subscript => self.styles.push(Style::new()),
            Tag::Link { dest_url, .. } => {
                self.links.push((self.inline.len(), dest_url.to_string()));
                self.styles.push(self.theme.link);
            }
            Tag::Image { dest_url, .. } => {
                self.push_text("[image: ", self.theme.dim);
                self.links.push((self.inline.len(), dest_url.to_string()));
                self.styles.push(self.theme.dim);
            }
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph
            | TagEnd::HtmlBlock
            | TagEnd::FootnoteDefinition
            | TagEnd::MetadataBlock(_)
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::CodeBlock => self.end_block(),
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.end_block();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.end_block();
                }
            }
            TagEnd::Item => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::Table => self.end_table(),
            TagEnd::TableHead | TagEnd::TableRow => {
                if let Some(t) = self.table.as_mut() {
                    t.end_row();
                }
            }
            TagEnd::TableCell => {
                if let Some(t) = self.table.as_mut() {
                    t.end_cell();
                }
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link => self.end_link(),
            TagEnd::Image => {
                self.styles.pop();
                self.links.pop();
                self.push_text("]", self.theme.dim);
            }
        }
    }

    fn start_heading(&mut self, level: HeadingLevel) {
        self.start_block();
        let style = match level {
            HeadingLevel::H1 => self.theme.heading.add_modifier(Modifier::UNDERLINED),
            HeadingLevel::H2 => self.theme.heading,
            _ => Style::new().add_modifier(Modifier::BOLD),
        };
        self.styles.push(style);
    }

    /// The block's text is collected until its end, where it is rendered whole.
    fn start_code_block(&mut self, kind: CodeBlockKind<'_>) {
        self.start_block();
        let lang = match kind {
            CodeBlockKind::Fenced(info) => info.split_whitespace().next().unwrap_or("").to_string(),
            CodeBlockKind::Indented => String::new(),
        };
        self.code = Some((lang, String::new()));
    }

    /// A nested list continues its parent item's block instead of opening a new one.
    fn start_list(&mut self, start: Option<u64>) {
        if self.lists.is_empty() {
            self.start_block();
        } else {
            self.flush();
        }
        self.lists.push(start);
    }

    /// Ordered items are numbered; unordered ones alternate bullets by depth.
    fn start_item(&mut self) {
        self.flush();
        let marker = match self.lists.last_mut() {
            Some(Some(n)) => {
                let marker = format!("{n}. ");
                *n += 1;
                marker
            }
            _ => if self.lists.len() % 2 == 1 {
                "• "
            } else {
                "◦ "
            }
            .to_string(),
        };
        self.containers.push(Container::Item {
            marker,
            pending: true,
        });
    }

    /// A table is laid out only when complete, since its columns' widths depend on every row.
    fn end_table(&mut self) {
        if let Some(table) = self.table.take() {
            let (first, rest) = self.prefix();
            let room = self.width.saturating_sub(super::wrap::spans_width(&rest));
            for (i, line) in render_table(table, room, self.theme)
                .into_iter()
                .enumerate()
            {
                let mut spans = if i == 0 { first.clone() } else { rest.clone() };
                spans.extend(line.spans);
                self.out.push(Line::from(spans));
            }
        }
        self.end_block();
    }

    /// A link's target follows its text, unless it adds nothing (the same text, a mail
    /// address, an anchor in the page).
    fn end_link(&mut self) {
        self.styles.pop();
        if let Some((start, url)) = self.links.pop() {
            let text: String = self
                .inline
                .get(start..)
                .unwrap_or_default()
                .iter()
                .map(|s| s.content.as_ref())
                .collect();
            if !url.is_empty()
                && !url.starts_with('#')
                && text != url
                && format!("mailto:{text}") != url
            {
                self.push_text(&format!(" ({url})"), self.theme.dim);
            }
        }
    }

    /// Before a block: the paragraph so far is emitted, and a blank line when one is due.
    fn start_block(&mut self) {
        self.flush();
        let at_item_start = self
            .containers
            .iter()
            .any(|c| matches!(c, Container::Item { pending: true, .. }));
        if self.gap && !self.out.is_empty() && !at_item_start {
            let quotes = self
                .containers
                .iter()
                .filter(|c| matches!(c, Container::Quote))
                .count();
            let spans: Vec<Span<'static>> = (0..quotes)
                .map(|_| Span::styled("│", self.theme.dim))
                .collect();
            self.out.push(Line::from(spans));
        }
        self.gap = false;
    }

    fn end_block(&mut self) {
        self.flush();
        self.gap = true;
    }

    /// The container prefixes for a block's first line and its other lines; pending list
    /// markers are used up.
    fn prefix(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = Vec::new();
        let mut rest = Vec::new();
        for c in &mut self.containers {
            match c {
                Container::Quote => {
                    first.push(Span::styled("│ ", self.theme.dim));
                    rest.push(Span::styled("│ ", self.theme.dim));
                }
                Container::Item { marker, pending } => {
                    let blank = " ".repeat(text_width(marker));
                    if *pending {
                        first.push(Span::styled(marker.clone(), self.theme.accent));
                        *pending = false;
                    } else {
                        first.push(Span::raw(blank.clone()));
                    }
                    rest.push(Span::raw(blank));
                }
            }
        }
        (first, rest)
    }

    /// Emits the paragraph collected so far.
    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.inline);
        if spans.iter().all(|s| s.content.trim().is_empty()) {
            return;
        }
        let (first, rest) = self.prefix();
        self.out.extend(wrap(&spans, self.width, &first, &rest));
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        let (first, rest) = self.prefix();
        let indent = |p: &[Span<'static>]| {
            let mut p = p.to_vec();
            p.push(Span::raw("  "));
            p
        };
        let mut first_code = indent(&first);
        if !lang.is_empty() {
            let mut label = first;
            label.push(Span::styled(lang.to_string(), self.theme.dim));
            self.out.push(Line::from(label));
            first_code = indent(&rest);
        }
        let rest_code = indent(&rest);
        let code = code.strip_suffix('\n').unwrap_or(code);
        let lines = code_lines(code, lang, self.theme);
        for (i, line) in lines.iter().enumerate() {
            let lead = if i == 0 { &first_code } else { &rest_code };
            self.out.extend(wrap(line, self.width, lead, &rest_code));
        }
    }
}

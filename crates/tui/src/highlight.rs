//! Syntax highlighting of fenced code blocks with syntect's bundled grammars and themes,
//! loaded once on first use. Blocks too large to highlight quickly stay plain.
//!
//! A streaming answer is rendered again on every delta, so highlighting is incremental:
//! each block's highlighted complete lines are kept with the parser's state after them,
//! and the next render of a block that starts with them only highlights what is new.

use std::cell::RefCell;
use std::sync::OnceLock;

use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, HighlightState, Theme as Colours, ThemeSet};
use syntect::parsing::{ParseState, SyntaxSet};

use super::theme::{Palette, Theme};

/// Code longer than this (in bytes) is shown without highlighting.
const MAX_HIGHLIGHT_BYTES: usize = 64 * 1024;

/// Blocks whose highlighting is kept (the least recently used goes first).
const KEPT_BLOCKS: usize = 32;

type Highlighted = Vec<Vec<Span<'static>>>;

/// One block's highlighting so far.
struct Memo {
    /// The palette, colour depth and language it was made for.
    key: (Palette, bool, String),
    /// The complete lines highlighted (each with its `\n`).
    done: String,
    lines: Highlighted,
    state: (HighlightState, ParseState),
}

thread_local! {
    static MEMOS: RefCell<Vec<Memo>> = const { RefCell::new(Vec::new()) };
}

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_nonewlines)
}

fn themes() -> &'static ThemeSet {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults)
}

/// `code` as lines of styled spans: highlighted when it can be, else in the code style.
pub(crate) fn code_lines(code: &str, lang: &str, theme: &Theme) -> Highlighted {
    highlight(code, lang, theme).unwrap_or_else(|| {
        code.split('\n')
            .map(|l| vec![Span::styled(l.to_string(), theme.code)])
            .collect()
    })
}

/// `code` split into lines of styled spans, highlighted for `lang` when colours are on and
/// the language is known; `None` means "show it plain".
fn highlight(code: &str, lang: &str, theme: &Theme) -> Option<Highlighted> {
    if !theme.colored() || lang.is_empty() || code.len() > MAX_HIGHLIGHT_BYTES {
        return None;
    }
    let set = syntaxes();
    let syntax = set.find_syntax_by_token(lang)?;
    let name = match theme.palette {
        Palette::Light => "InspiredGitHub",
        _ => "base16-ocean.dark",
    };
    let colours: &'static Colours = themes().themes.get(name)?;
    let key = (theme.palette, theme.truecolor, lang.to_string());
    MEMOS.with(|memos| {
        let mut memos = memos.borrow_mut();
        // The memo of this block: the longest highlighted start of `code`.
        let found = memos
            .iter()
            .enumerate()
            .filter(|(_, m)| m.key == key && code.starts_with(&m.done))
            .max_by_key(|(_, m)| m.done.len())
            .map(|(i, _)| i);
        let mut memo = match found {
            Some(i) => memos.remove(i),
            None => Memo {
                key,
                done: String::new(),
                lines: Vec::new(),
                state: HighlightLines::new(syntax, colours).state(),
            },
        };
        let result = extend(&mut memo, code, set, colours, theme);
        if result.is_some() {
            if memos.len() >= KEPT_BLOCKS {
                memos.remove(0);
            }
            memos.push(memo);
        }
        result
    })
}

/// Highlights what `code` has beyond `memo` (keeping its complete lines) and returns all
/// of its lines.
fn extend(
    memo: &mut Memo,
    code: &str,
    set: &SyntaxSet,
    colours: &'static Colours,
    theme: &Theme,
) -> Option<Highlighted> {
    let rest = &code[memo.done.len()..];
    let (complete, partial) = match rest.rfind('\n') {
        Some(i) => rest.split_at(i + 1),
        None => ("", rest),
    };
    let (highlight_state, parse_state) = memo.state.clone();
    let mut lines = HighlightLines::from_state(colours, highlight_state, parse_state);
    for line in complete.split_terminator('\n') {
        let spans = highlight_line(&mut lines, line, set, theme)?;
        memo.lines.push(spans);
    }
    memo.done.push_str(complete);
    memo.state = lines.state();
    let mut out = memo.lines.clone();
    if !partial.is_empty() || out.is_empty() {
        let (highlight_state, parse_state) = memo.state.clone();
        let mut lines = HighlightLines::from_state(colours, highlight_state, parse_state);
        out.push(highlight_line(&mut lines, partial, set, theme)?);
    }
    Some(out)
}

fn highlight_line(
    lines: &mut HighlightLines<'_>,
    line: &str,
    set: &SyntaxSet,
    theme: &Theme,
) -> Option<Vec<Span<'static>>> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let regions = match lines.highlight_line(line, set) {
        Ok(regions) => regions,
        Err(err) => {
            tracing::debug!(%err, "highlighting failed; showing the code plain");
            return None;
        }
    };
    let spans = regions
        .into_iter()
        .map(|(style, text)| {
            let fg = style.foreground;
            let mut s = Style::new().fg(theme.rgb(fg.r, fg.g, fg.b));
            if style.font_style.contains(FontStyle::BOLD) {
                s = s.add_modifier(Modifier::BOLD);
            }
            if style.font_style.contains(FontStyle::ITALIC) {
                s = s.add_modifier(Modifier::ITALIC);
            }
            Span::styled(text.to_string(), s)
        })
        .collect();
    Some(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &Highlighted) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn known_languages_are_coloured_and_plain_themes_skip_it() {
        let dark = Theme::new(Palette::Dark, true);
        let lines = highlight("fn main() {}\nlet x = 1;", "rust", &dark).unwrap();
        assert_eq!(text(&lines), ["fn main() {}", "let x = 1;"]);
        assert!(lines[0].iter().any(|s| s.style.fg.is_some()));
        assert!(highlight("x", "no-such-language", &dark).is_none());
        let plain = Theme::new(Palette::Plain, true);
        assert!(highlight("fn main() {}", "rust", &plain).is_none());
    }

    #[test]
    fn a_growing_block_highlights_like_the_whole_block() {
        let dark = Theme::new(Palette::Dark, false);
        let code = "/* a comment\nstill comment */\nfn f() -> &'static str {\n    \"s\"\n}";
        let mut last = Vec::new();
        for end in 1..=code.len() {
            if code.is_char_boundary(end) {
                last = highlight(&code[..end], "rust", &dark).unwrap();
            }
        }
        MEMOS.with(|m| m.borrow_mut().clear());
        assert_eq!(last, highlight(code, "rust", &dark).unwrap());
        assert_eq!(text(&last).len(), 5);
    }
}

//! Syntax highlighting of fenced code blocks with syntect's bundled grammars and themes,
//! loaded once on first use. Blocks too large to highlight quickly stay plain.

use std::sync::OnceLock;

use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, ThemeSet};
use syntect::parsing::SyntaxSet;

use super::theme::{Palette, Theme};

/// Code longer than this (in bytes) is shown without highlighting.
const MAX_HIGHLIGHT_BYTES: usize = 64 * 1024;

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_nonewlines)
}

fn themes() -> &'static ThemeSet {
    static SET: OnceLock<ThemeSet> = OnceLock::new();
    SET.get_or_init(ThemeSet::load_defaults)
}

/// `code` as lines of styled spans: highlighted when it can be, else in the code style.
pub fn code_lines(code: &str, lang: &str, theme: &Theme) -> Vec<Vec<Span<'static>>> {
    highlight(code, lang, theme).unwrap_or_else(|| {
        code.split('\n')
            .map(|l| vec![Span::styled(l.to_string(), theme.code)])
            .collect()
    })
}

/// `code` split into lines of styled spans, highlighted for `lang` when colours are on and
/// the language is known; `None` means "show it plain".
fn highlight(code: &str, lang: &str, theme: &Theme) -> Option<Vec<Vec<Span<'static>>>> {
    if !theme.colored() || lang.is_empty() || code.len() > MAX_HIGHLIGHT_BYTES {
        return None;
    }
    let set = syntaxes();
    let syntax = set.find_syntax_by_token(lang)?;
    let name = match theme.palette {
        Palette::Light => "InspiredGitHub",
        _ => "base16-ocean.dark",
    };
    let colours = themes().themes.get(name)?;
    let mut lines = HighlightLines::new(syntax, colours);
    let mut out = Vec::new();
    for line in code.lines() {
        let regions = match lines.highlight_line(line, set) {
            Ok(regions) => regions,
            Err(err) => {
                tracing::debug!(%err, lang, "highlighting failed; showing the code plain");
                return None;
            }
        };
        out.push(
            regions
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
                .collect(),
        );
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_are_coloured_and_plain_themes_skip_it() {
        let dark = Theme::new(Palette::Dark, true);
        let lines = highlight("fn main() {}\nlet x = 1;", "rust", &dark).unwrap();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].iter().any(|s| s.style.fg.is_some()));
        assert!(highlight("x", "no-such-language", &dark).is_none());
        assert!(highlight("fn main() {}", "rust", &Theme::new(Palette::Plain, true)).is_none());
    }
}

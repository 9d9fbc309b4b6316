//! Colours: one [`Theme`] for dark and one for light terminals, and a plain one for
//! `NO_COLOR` (modifiers only), chosen once from the environment.

use ratatui::style::{Color, Modifier, Style};

/// Which palette the terminal wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Palette {
    /// Light text on a dark background (the default).
    Dark,
    /// Dark text on a light background.
    Light,
    /// No colours at all (`NO_COLOR`): bold, dim, italic and reverse only.
    Plain,
}

/// The styles the views use, so that no view picks a colour itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Theme {
    /// The palette these styles come from (code highlighting follows it).
    pub palette: Palette,
    /// Whether the terminal shows 24-bit colours (else RGB is mapped to the 256 palette).
    pub truecolor: bool,
    /// Accents: the assistant's marker, spinners, headings, the prompt.
    pub accent: Style,
    /// The user's messages.
    pub user: Style,
    /// Secondary text: hints, reasoning, rules, gutters.
    pub dim: Style,
    /// Success marks.
    pub ok: Style,
    /// Failures and errors.
    pub error: Style,
    /// Notices and warnings.
    pub warn: Style,
    /// Inline code and code without highlighting.
    pub code: Style,
    /// The text of markdown links.
    pub link: Style,
    /// The selected row of a list.
    pub selected: Style,
    /// Markdown's first two heading levels, and the welcome's `antler`.
    pub heading: Style,
}

impl Theme {
    /// A list row's marker and style: `› ` and the selection's style when it is the
    /// selected row, else blanks and no style.
    pub(crate) fn row(&self, selected: bool) -> (&'static str, Style) {
        if selected {
            ("› ", self.selected)
        } else {
            ("  ", Style::new())
        }
    }

    /// The theme for this environment: `NO_COLOR` wins, then `ANTLER_THEME`
    /// (`dark`/`light`/`plain`), then the background from `COLORFGBG`; dark by default.
    pub(crate) fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok();
        let palette = detect(
            var("NO_COLOR").as_deref(),
            var("ANTLER_THEME").as_deref(),
            var("COLORFGBG").as_deref(),
        );
        let truecolor = matches!(
            var("COLORTERM").as_deref(),
            Some("truecolor") | Some("24bit")
        );
        Self::new(palette, truecolor)
    }

    /// The styles of `palette`.
    pub(crate) fn new(palette: Palette, truecolor: bool) -> Self {
        let bold = Style::new().add_modifier(Modifier::BOLD);
        match palette {
            Palette::Plain => Self {
                palette,
                truecolor,
                accent: bold,
                user: bold,
                dim: Style::new().add_modifier(Modifier::DIM),
                ok: Style::new(),
                error: bold,
                warn: bold,
                code: Style::new(),
                link: Style::new().add_modifier(Modifier::UNDERLINED),
                selected: Style::new().add_modifier(Modifier::REVERSED),
                heading: bold,
            },
            Palette::Dark | Palette::Light => {
                let light = palette == Palette::Light;
                let (accent, warn, code) = if light {
                    (Color::Blue, Color::Indexed(130), Color::Indexed(88))
                } else {
                    (Color::Cyan, Color::Yellow, Color::Indexed(216))
                };
                Self {
                    palette,
                    truecolor,
                    accent: Style::new().fg(accent),
                    user: bold.fg(if light { Color::Black } else { Color::White }),
                    dim: Style::new().fg(Color::DarkGray),
                    ok: Style::new().fg(Color::Green),
                    error: Style::new().fg(Color::Red),
                    warn: Style::new().fg(warn),
                    code: Style::new().fg(code),
                    link: Style::new().fg(accent).add_modifier(Modifier::UNDERLINED),
                    selected: Style::new()
                        .fg(if light { Color::White } else { Color::Black })
                        .bg(accent),
                    heading: bold.fg(accent),
                }
            }
        }
    }

    /// Whether colours are on (code highlighting is skipped when not).
    pub(crate) fn colored(&self) -> bool {
        self.palette != Palette::Plain
    }

    /// An RGB colour as this terminal can show it.
    pub(crate) fn rgb(&self, r: u8, g: u8, b: u8) -> Color {
        if self.truecolor {
            Color::Rgb(r, g, b)
        } else {
            Color::Indexed(ansi256(r, g, b))
        }
    }
}

/// The palette from the environment's values (pure, for tests).
pub(crate) fn detect(
    no_color: Option<&str>,
    forced: Option<&str>,
    colorfgbg: Option<&str>,
) -> Palette {
    if no_color.is_some_and(|v| !v.is_empty()) {
        return Palette::Plain;
    }
    match forced.map(str::to_ascii_lowercase).as_deref() {
        Some("light") => return Palette::Light,
        Some("dark") => return Palette::Dark,
        Some("plain") | Some("none") => return Palette::Plain,
        _ => {}
    }
    // COLORFGBG is "fg;bg" (sometimes "fg;default;bg"): backgrounds 7 and 9-15 are light.
    let background = colorfgbg
        .and_then(|v| v.rsplit(';').next())
        .and_then(|bg| bg.trim().parse::<u8>().ok());
    match background {
        Some(7) | Some(9..=15) => Palette::Light,
        _ => Palette::Dark,
    }
}

/// The nearest colour of xterm's 256-colour palette (its 6×6×6 cube or grey ramp).
fn ansi256(r: u8, g: u8, b: u8) -> u8 {
    let level = |c: u8| -> u8 {
        match c {
            0..=47 => 0,
            48..=114 => 1,
            _ => (c - 35) / 40,
        }
    };
    let (lr, lg, lb) = (level(r), level(g), level(b));
    let cube_value = |l: u8| if l == 0 { 0 } else { 55 + 40 * l };
    let cube = 16 + 36 * lr + 6 * lg + lb;
    let grey_level = ((u16::from(r) + u16::from(g) + u16::from(b)) / 3) as u8;
    let grey_index = if grey_level > 238 {
        23
    } else {
        grey_level.saturating_sub(3) / 10
    };
    let grey_value = 8 + 10 * grey_index;
    let distance = |cr: u8, cg: u8, cb: u8| {
        let d = |a: u8, b: u8| (i32::from(a) - i32::from(b)).pow(2);
        d(cr, r) + d(cg, g) + d(cb, b)
    };
    let cube_distance = distance(cube_value(lr), cube_value(lg), cube_value(lb));
    if distance(grey_value, grey_value, grey_value) < cube_distance {
        232 + grey_index
    } else {
        cube
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_wins_then_the_override_then_colorfgbg() {
        assert_eq!(detect(Some("1"), Some("light"), None), Palette::Plain);
        assert_eq!(detect(Some(""), None, None), Palette::Dark);
        assert_eq!(detect(None, Some("LIGHT"), Some("15;0")), Palette::Light);
        assert_eq!(detect(None, None, Some("0;15")), Palette::Light);
        assert_eq!(detect(None, None, Some("0;default;7")), Palette::Light);
        assert_eq!(detect(None, None, Some("15;0")), Palette::Dark);
        assert_eq!(detect(None, None, Some("garbage")), Palette::Dark);
    }

    #[test]
    fn rgb_maps_to_the_nearest_256_colour() {
        assert_eq!(ansi256(0, 0, 0), 16);
        assert_eq!(ansi256(255, 255, 255), 231);
        assert_eq!(ansi256(255, 0, 0), 196);
        assert_eq!(ansi256(128, 128, 128), 244);
    }
}

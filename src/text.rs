//! Character classes for showing untrusted text: what a reader (or a model) must not be
//! shown raw.

/// Characters that change how the text around them is shown without being seen: bidi
/// controls (which can reorder text on screen), zero-width characters, line and
/// paragraph separators, and tag characters (invisible letters a model still reads).
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}'
            | '\u{FEFF}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

/// `text` with control and invisible characters escaped, so that hostile text (a file, a
/// tool's name or result) cannot move the cursor or rewrite what it is shown in.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || is_invisible(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// [`printable`] for text of several lines: newlines and tabs are kept.
pub fn printable_lines(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            line.split('\t')
                .map(printable)
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separators_bidi_zero_width_and_tags_are_invisible() {
        for c in [
            '\u{2028}',
            '\u{2029}',
            '\u{202E}',
            '\u{200B}',
            '\u{FEFF}',
            '\u{E0041}',
        ] {
            assert!(is_invisible(c), "{c:?}");
        }
        for c in ['a', ' ', 'é', '知', '-'] {
            assert!(!is_invisible(c), "{c:?}");
        }
    }

    #[test]
    fn printable_text_keeps_its_lines_and_escapes_the_rest() {
        assert_eq!(
            printable_lines("a\tb\n\u{1b}[2Jc\r\u{202E}"),
            "a\tb\n\\u{1b}[2Jc\\u{d}\\u{202e}"
        );
    }
}

//! Character classes for showing untrusted text: what a reader (or a model) must not be
//! shown raw.

/// Characters that change how the text around them is shown without being seen: bidi
/// controls (which can reorder text on screen), zero-width characters, line and
/// paragraph separators, and tag characters (invisible letters a model still reads).
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E007F}'
            | '\u{E0100}'..='\u{E01EF}'
    )
}

/// `text` without invisible characters (a reviewer of a file cannot see them; a model can)
/// and without U+FFFD, what a lossy decoding left.
pub fn without_invisible(text: &str) -> String {
    text.chars()
        .filter(|c| !is_invisible(*c) && *c != '\u{fffd}')
        .collect()
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

/// The start of untrusted `text` as one short line for a user: whitespace runs become one
/// space, at most `max_chars` characters are kept (reading no further than that), and the
/// result is [`printable`]. Also says whether anything was left out.
pub fn short_line(text: &str, max_chars: usize) -> (String, bool) {
    let mut line = String::new();
    let mut kept = 0;
    let mut words = text.split_whitespace();
    for word in words.by_ref() {
        if kept > 0 {
            if kept == max_chars {
                return (printable(&line), true);
            }
            line.push(' ');
            kept += 1;
        }
        for c in word.chars() {
            if kept == max_chars {
                return (printable(&line), true);
            }
            line.push(c);
            kept += 1;
        }
    }
    (printable(&line), false)
}

/// [`short_line`] of 80 characters with `…` where it was cut: how a message quotes a name,
/// URL or value it was given, so hostile input of any size is shown as a short line.
pub fn quoted(text: &str) -> String {
    let (mut line, cut) = short_line(text, 80);
    if cut {
        line.push('…');
    }
    line
}

/// Names for a message, each [`quoted`], at most 20 of them and how many more: a list
/// taken from input (a file's servers, a server's prompts) can be of any length.
pub fn quoted_list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    const SHOWN: usize = 20;
    let mut shown = Vec::new();
    let mut more = 0;
    for name in names {
        if shown.len() < SHOWN {
            shown.push(quoted(name));
        } else {
            more += 1;
        }
    }
    let mut list = shown.join(", ");
    if more > 0 {
        list.push_str(&format!(" and {more} more"));
    }
    list
}

/// The most text from outside (stdin, an MCP server's prompt) that becomes one user turn.
pub const MAX_TURN_BYTES: usize = 512 * 1024;

/// `text` cut at [`MAX_TURN_BYTES`] on a character boundary, the cut marked for the model;
/// also says whether it was cut.
pub fn cap_turn(text: &str) -> (String, bool) {
    if text.len() <= MAX_TURN_BYTES {
        return (text.to_string(), false);
    }
    let mut end = MAX_TURN_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut kept = text[..end].trim_end().to_string();
    kept.push_str(&format!("\n... [cut at {MAX_TURN_BYTES} bytes]"));
    (kept, true)
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

/// A fence of backticks longer than any run of them in `content`, so it cannot close early.
pub fn fence_for(content: &str) -> String {
    let longest = content.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_values_are_one_short_escaped_line() {
        let long = "x".repeat(10_000);
        let shown = quoted(&long);
        assert_eq!(shown.chars().count(), 81);
        assert!(shown.ends_with('…'));
        assert_eq!(quoted("a\nb\u{1b}[2J"), "a b\\u{1b}[2J");
        let names: Vec<String> = (0..25).map(|n| n.to_string()).collect();
        let list = quoted_list(names.iter().map(String::as_str));
        assert!(
            list.starts_with("0, 1, 2") && list.ends_with("19 and 5 more"),
            "{list}"
        );
    }

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
    fn a_short_line_collapses_cuts_and_escapes() {
        assert_eq!(short_line("  a \n\t b  ", 10), ("a b".to_string(), false));
        assert_eq!(short_line("abcdef", 3), ("abc".to_string(), true));
        assert_eq!(short_line("ab cd", 2), ("ab".to_string(), true));
        assert_eq!(short_line("ab", 2), ("ab".to_string(), false));
        assert_eq!(short_line("x\u{1b}[2J", 10).0, "x\\u{1b}[2J");
    }

    #[test]
    fn printable_text_keeps_its_lines_and_escapes_the_rest() {
        assert_eq!(
            printable_lines("a\tb\n\u{1b}[2Jc\r\u{202E}"),
            "a\tb\n\\u{1b}[2Jc\\u{d}\\u{202e}"
        );
    }
}

//! Plain text for stored threads: the `threads list` table and a readable transcript.

use crate::base::clock::utc_datetime;
use crate::base::table::table;
use crate::base::text::printable_lines;
use crate::protocol::ThreadMeta;
use crate::protocol::{Message, ToolCall};
use crate::store::StoredThread;

/// How many lines of a tool result or of reasoning a transcript shows.
const PREVIEW_LINES: usize = 3;

/// The longest line a transcript shows of tool arguments and previews, in characters.
const PREVIEW_WIDTH: usize = 200;

/// Stored threads as a table, in the order given (the store lists newest first).
pub(crate) fn threads_table(threads: &[ThreadMeta]) -> String {
    if threads.is_empty() {
        return "No threads yet.\n".to_string();
    }
    let rows: Vec<Vec<String>> = threads
        .iter()
        .map(|t| {
            vec![
                t.id.clone(),
                utc_datetime(t.updated_at),
                t.message_count.to_string(),
                (t.usage.input_tokens + t.usage.output_tokens).to_string(),
                printable_lines(&t.model),
                collapsed(&t.title).map_or_else(|| "-".to_string(), |t| printable_lines(&t)),
            ]
        })
        .collect();
    table(
        &["ID", "UPDATED", "MESSAGES", "TOKENS", "MODEL", "TITLE"],
        &rows,
    )
}

/// A whole thread for reading in a terminal: a header with its metadata, usage and
/// promoted tools, then each message, with long tool output cut to its first lines.
pub(crate) fn thread_transcript(thread: &StoredThread) -> String {
    let meta = &thread.meta;
    let usage = &meta.usage;
    let promoted = &thread.state.promoted;
    let mut out = format!(
        "thread    {}\ntitle     {}\nmodel     {}\ncwd       {}\ncreated   {} UTC\nupdated   {} UTC\n",
        meta.id,
        collapsed(&meta.title).unwrap_or_else(|| "-".to_string()),
        meta.model,
        meta.cwd.display(),
        utc_datetime(meta.created_at),
        utc_datetime(meta.updated_at),
    );
    out.push_str(&format!(
        "usage     {} in ({} cached), {} out\n",
        usage.input_tokens, usage.cached_input_tokens, usage.output_tokens
    ));
    match (&promoted.catalog_hash, promoted.names.is_empty()) {
        (Some(hash), false) => out.push_str(&format!(
            "promoted  {} (catalog {hash})\n",
            promoted.names.join(", ")
        )),
        _ => out.push_str("promoted  -\n"),
    }
    for message in &thread.messages {
        out.push('\n');
        push_message(&mut out, message);
    }
    // Everything in it came from the user, the model or a tool: nothing may reach the
    // terminal as a control sequence.
    printable_lines(&out)
}

/// One message, ending with a newline.
fn push_message(out: &mut String, message: &Message) {
    match message {
        Message::User { content } => {
            for line in content.lines() {
                out.push_str(format!("> {line}").trim_end());
                out.push('\n');
            }
            if content.is_empty() {
                out.push_str(">\n");
            }
        }
        Message::Assistant {
            content,
            reasoning,
            tool_calls,
        } => {
            if !reasoning.trim().is_empty() {
                push_preview(out, "(reasoning) ", reasoning);
            }
            if !content.trim().is_empty() {
                out.push_str(content.trim_end());
                out.push('\n');
            }
            for call in tool_calls {
                out.push_str(&format!("→ {}({})\n", call.name, arguments(call)));
            }
        }
        Message::Tool {
            name,
            content,
            is_error,
            ..
        } => {
            let marker = if *is_error { " (error)" } else { "" };
            push_preview(out, &format!("← {name}{marker}: "), content);
        }
        Message::Images { content, images } => {
            let paths: Vec<&str> = images.iter().map(|i| i.path.as_str()).collect();
            out.push_str(&format!(
                "[images: {}] {}\n",
                paths.join(", "),
                content.trim_end()
            ));
        }
        Message::Summary { content } => {
            out.push_str("[summary of earlier messages]\n");
            out.push_str(content.trim_end());
            out.push('\n');
        }
    }
}

/// `label` and the first [`PREVIEW_LINES`] non-empty lines of `text` (later ones
/// indented), then how many lines were left out.
fn push_preview(out: &mut String, label: &str, text: &str) {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        out.push_str(&format!("{label}(empty)\n"));
        return;
    }
    for (i, line) in lines.iter().take(PREVIEW_LINES).enumerate() {
        let prefix = if i == 0 { label } else { "  " };
        out.push_str(&format!("{prefix}{}\n", cut(line.trim_end())));
    }
    if lines.len() > PREVIEW_LINES {
        out.push_str(&format!("  … {} more lines\n", lines.len() - PREVIEW_LINES));
    }
}

/// A call's arguments on one line: compact JSON when they parse, else the text as written.
fn arguments(call: &ToolCall) -> String {
    let text = serde_json::from_str::<serde_json::Value>(&call.arguments)
        .ok()
        .and_then(|value| serde_json::to_string(&value).ok())
        .unwrap_or_else(|| call.arguments.clone());
    cut(&collapsed(&text).unwrap_or_default())
}

/// `text` with its whitespace collapsed to single spaces; `None` when nothing is left.
fn collapsed(text: &str) -> Option<String> {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!line.is_empty()).then_some(line)
}

/// `text` cut to [`PREVIEW_WIDTH`] characters, the last one an ellipsis.
fn cut(text: &str) -> String {
    if text.chars().count() <= PREVIEW_WIDTH {
        return text.to_string();
    }
    let mut out: String = text.chars().take(PREVIEW_WIDTH - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::agent::state::ThreadState;
    use crate::protocol::Usage;
    use crate::tools::{PromotedUpdate, StateUpdate};

    fn meta(id: &str, title: &str) -> ThreadMeta {
        ThreadMeta {
            id: id.into(),
            title: title.into(),
            cwd: PathBuf::from("/home/me/project"),
            model: "gpt-test".into(),
            created_at: 1_700_000_000,
            updated_at: 1_700_000_600,
            usage: Usage {
                input_tokens: 1200,
                cached_input_tokens: 800,
                output_tokens: 34,
            },
            message_count: 5,
        }
    }

    #[test]
    fn an_empty_list_says_so() {
        assert_eq!(threads_table(&[]), "No threads yet.\n");
    }

    #[test]
    fn the_table_has_one_row_per_thread() {
        let table = threads_table(&[
            meta("0123456789ab", "Fix the\nbuild"),
            meta("ba9876543210", ""),
        ]);
        assert_eq!(
            table,
            "ID            UPDATED           MESSAGES  TOKENS  MODEL     TITLE\n\
             0123456789ab  2023-11-14 22:23  5         1234    gpt-test  Fix the build\n\
             ba9876543210  2023-11-14 22:23  5         1234    gpt-test  -\n"
        );
    }

    #[test]
    fn the_transcript_shows_header_and_every_kind_of_message() {
        let mut state = ThreadState::default();
        state.apply(Some(&StateUpdate {
            promoted: Some(PromotedUpdate {
                catalog_hash: "0123456789abcdef".into(),
                names: vec!["github_search".into(), "slack_post".into()],
            }),
            ..Default::default()
        }));
        let long_result: String = (1..=5).map(|i| format!("line {i}\n")).collect();
        let thread = StoredThread {
            meta: meta("0123456789ab", "Fix the build"),
            messages: vec![
                Message::User {
                    content: "fix it\n\nplease".into(),
                },
                Message::Assistant {
                    content: String::new(),
                    reasoning: "first I look".into(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "read_file".into(),
                        arguments: "{\"path\":  \"Cargo.toml\"}".into(),
                    }],
                },
                Message::Tool {
                    call_id: "c1".into(),
                    name: "read_file".into(),
                    content: long_result,
                    is_error: false,
                },
                Message::Tool {
                    call_id: "c2".into(),
                    name: "run".into(),
                    content: "exit 1".into(),
                    is_error: true,
                },
                Message::Summary {
                    content: "we read files".into(),
                },
                Message::Assistant {
                    content: "Fixed.".into(),
                    reasoning: String::new(),
                    tool_calls: Vec::new(),
                },
            ],
            state,
        };
        let text = thread_transcript(&thread);
        assert_eq!(
            text,
            "thread    0123456789ab\n\
             title     Fix the build\n\
             model     gpt-test\n\
             cwd       /home/me/project\n\
             created   2023-11-14 22:13 UTC\n\
             updated   2023-11-14 22:23 UTC\n\
             usage     1200 in (800 cached), 34 out\n\
             promoted  github_search, slack_post (catalog 0123456789abcdef)\n\
             \n\
             > fix it\n\
             >\n\
             > please\n\
             \n\
             (reasoning) first I look\n\
             → read_file({\"path\":\"Cargo.toml\"})\n\
             \n\
             ← read_file: line 1\n  line 2\n  line 3\n  … 2 more lines\n\
             \n\
             ← run (error): exit 1\n\
             \n\
             [summary of earlier messages]\n\
             we read files\n\
             \n\
             Fixed.\n"
        );
    }

    #[test]
    fn a_bare_thread_and_odd_arguments() {
        let mut thread = StoredThread {
            meta: meta("0123456789ab", ""),
            messages: vec![
                Message::Assistant {
                    content: String::new(),
                    reasoning: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "echo".into(),
                        arguments: format!("not json {}", "x".repeat(300)),
                    }],
                },
                Message::Tool {
                    call_id: "c1".into(),
                    name: "echo".into(),
                    content: String::new(),
                    is_error: false,
                },
            ],
            state: ThreadState::default(),
        };
        thread.meta.message_count = 2;
        let text = thread_transcript(&thread);
        assert!(text.contains("title     -\n"), "{text}");
        assert!(text.contains("promoted  -\n"), "{text}");
        assert!(text.contains("← echo: (empty)\n"), "{text}");
        let call = text.lines().find(|l| l.starts_with("→ echo(")).unwrap();
        assert!(call.ends_with("…)"), "{call}");
        assert_eq!(
            call.chars().count(),
            "→ echo()".chars().count() + PREVIEW_WIDTH
        );
    }

    #[test]
    fn hostile_text_never_reaches_the_terminal_raw() {
        let thread = StoredThread {
            meta: meta("0123456789ab", "title \u{1b}]0;pwned\u{7}"),
            messages: vec![Message::Tool {
                call_id: "c".into(),
                name: "evil\u{1b}[2J".into(),
                content: "ok\u{1b}[31m red\r\u{202E}txt".into(),
                is_error: false,
            }],
            state: ThreadState::default(),
        };
        let text = thread_transcript(&thread) + &threads_table(std::slice::from_ref(&thread.meta));
        assert!(
            !text
                .chars()
                .any(|c| (c.is_control() && c != '\n') || c == '\u{202E}'),
            "{text:?}"
        );
        assert!(text.contains("evil\\u{1b}[2J"), "{text}");
    }
}

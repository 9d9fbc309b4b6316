//! Markdown rendering: blocks, lists, code, links and tables, as plain text.

use super::markdown::render;
use super::theme::{Palette, Theme};

fn plain(text: &str, width: usize) -> Vec<String> {
    render(text, width, &Theme::new(Palette::Plain, false))
        .iter()
        .map(|l| l.to_string().trim_end().to_string())
        .collect()
}

#[test]
fn blocks_are_separated_and_lists_nest() {
    let md = "# Title\n\nSome *text* here.\n\n- one\n- two\n  1. a\n  2. b\n- three\n\n> quoted\n\n---\n";
    assert_eq!(
        plain(md, 30),
        [
            "Title",
            "",
            "Some text here.",
            "",
            "• one",
            "• two",
            "  1. a",
            "  2. b",
            "• three",
            "",
            "│ quoted",
            "",
            "─".repeat(30).as_str()
        ]
    );
}

#[test]
fn code_blocks_keep_indentation_and_links_show_targets() {
    let md = "See [docs](https://x.io).\n\n```rust\nfn f() {\n    1\n}\n```\n";
    assert_eq!(
        plain(md, 40),
        [
            "See docs (https://x.io).",
            "",
            "rust",
            "  fn f() {",
            "      1",
            "  }"
        ]
    );
}

#[test]
fn an_unclosed_fence_renders_as_code() {
    assert_eq!(plain("text\n\n```\nlet a", 20), ["text", "", "  let a"]);
}

#[test]
fn list_items_wrap_under_their_text() {
    assert_eq!(
        plain("1. alpha beta gamma", 12),
        ["1. alpha", "   beta", "   gamma"]
    );
}

#[test]
fn columns_fit_their_content_and_align() {
    let md = "| name | n |\n|---|--:|\n| alpha | 1 |\n| b | 22 |\n";
    assert_eq!(
        plain(md, 40),
        ["name  │  n", "──────┼───", "alpha │  1", "b     │ 22"]
    );
}

#[test]
fn wide_tables_shrink_and_wrap_cells() {
    let md = "| key | description |\n|---|---|\n| a | a long description that wraps |\n";
    assert_eq!(
        plain(md, 20),
        [
            "key │ description",
            "────┼───────────────",
            "a   │ a long",
            "    │ description",
            "    │ that wraps"
        ]
    );
}

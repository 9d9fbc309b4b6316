//! The entry model: how events and stored messages become entries.

use serde_json::json;

use super::test_support::{run_finished, text, tool_finished, tool_started};
use super::transcript::{Entry, ToolStatus, Transcript};
use antler_protocol::{Event, RunStatus};
use antler_protocol::{Message, ToolCall};

fn apply(events: Vec<Event>) -> Transcript {
    let mut t = Transcript::default();
    for e in events {
        t.apply(e);
    }
    t
}

#[test]
fn a_retry_voids_only_the_text_of_its_turn() {
    let t = apply(vec![
        Event::TurnStarted { turn: 1 },
        text("kept"),
        Event::TurnCompleted {
            turn: 1,
            finish_reason: Default::default(),
        },
        Event::TurnStarted { turn: 2 },
        Event::ReasoningDelta {
            turn: 2,
            text: "void".into(),
        },
        Event::TextDelta {
            turn: 2,
            text: "void too".into(),
        },
        Event::Retrying {
            turn: 2,
            attempt: 2,
            delay_ms: 500,
            reason: "HTTP 429".into(),
        },
        Event::TextDelta {
            turn: 2,
            text: "fresh".into(),
        },
    ]);
    let texts: Vec<String> = t
        .entries()
        .map(|e| match e {
            Entry::Answer(a) => a.text.clone(),
            Entry::Reasoning(r) => r.text.clone(),
            Entry::Notice(n) => n.clone(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        texts,
        ["kept", "Retrying (attempt 2, in 500 ms): HTTP 429", "fresh"]
    );
}

#[test]
fn subagents_find_their_task_card_by_the_parent_call_id() {
    let sub = |parent: &str, n: u64, e: Event| Event::Subagent {
        parent_call_id: parent.into(),
        subagent: n,
        description: String::from("same label"),
        event: Box::new(e),
    };
    let t = apply(vec![
        tool_started("a", "task", json!({"description": "same label"})),
        tool_started("b", "task", json!({"description": "same label"})),
        sub("b", 7, text("from two")),
        sub("a", 3, text("from one")),
        sub("b", 7, text(" more")),
        sub("gone", 9, text("orphan")),
    ]);
    let children: Vec<(String, Option<u64>, usize)> = t
        .entries()
        .filter_map(|e| match e {
            Entry::Tool(c) => Some((
                c.call_id.clone(),
                c.subagent.as_ref().map(|(n, _)| *n),
                c.subagent.as_ref().map_or(0, |(_, t)| t.entries().count()),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        children,
        [
            ("a".into(), Some(3), 1),
            ("b".into(), Some(7), 1),
            ("gone".into(), Some(9), 1)
        ]
    );
}

#[test]
fn promotions_attach_to_the_turns_tool_search_and_runs_end_cleanly() {
    let t = apply(vec![
        Event::TurnStarted { turn: 1 },
        tool_started("s", "tool_search", json!({"query": "x"})),
        tool_started("r", "bash", json!({"command": "sleep 9"})),
        tool_finished("s", "tool_search", false, "found", 3),
        Event::ToolsPromoted {
            turn: 1,
            added: vec!["x_y".into()],
            removed: vec![],
            promoted: vec!["x_y".into()],
            catalog_hash: None,
        },
        run_finished(RunStatus::Interrupted, vec!["interrupted".into()]),
    ]);
    let entries: Vec<&Entry> = t.entries().collect();
    assert!(
        matches!(entries[0], Entry::Tool(c) if c.promotion.as_ref().is_some_and(|p| p.added == ["x_y"]))
    );
    assert!(matches!(entries[1], Entry::Tool(c) if c.status == ToolStatus::Failed));
    assert_eq!(entries[2], &Entry::Notice("Interrupted.".into()));
}

#[test]
fn stored_messages_pair_results_with_their_calls() {
    let t = Transcript::from_messages(&[
        Message::User {
            content: "hi".into(),
        },
        Message::Assistant {
            content: "Looking.".into(),
            reasoning: "think".into(),
            tool_calls: vec![ToolCall {
                id: "c".into(),
                name: "glob".into(),
                arguments: "not json".into(),
            }],
        },
        Message::Tool {
            call_id: "c".into(),
            name: "glob".into(),
            content: "a.rs".into(),
            is_error: true,
        },
        Message::Summary {
            content: "earlier".into(),
        },
    ]);
    let entries: Vec<&Entry> = t.entries().collect();
    assert_eq!(entries.len(), 5);
    assert!(matches!(entries[1], Entry::Reasoning(r) if !r.expanded && !r.streaming));
    assert!(matches!(entries[3], Entry::Tool(c)
        if c.status == ToolStatus::Failed && c.result == "a.rs" && c.arguments == json!("not json")));
}

#[test]
fn a_stored_tool_search_card_shows_what_it_loaded_not_its_json() {
    let t = Transcript::from_messages(&[
        Message::Assistant {
            content: String::new(),
            reasoning: String::new(),
            tool_calls: vec![ToolCall {
                id: "s".into(),
                name: "tool_search".into(),
                arguments: r#"{"query":"echo"}"#.into(),
            }],
        },
        Message::Tool {
            call_id: "s".into(),
            name: "tool_search".into(),
            content: r#"[{"name":"fx_echo","parameters":{}},{"name":"fx_add"}]

Also matched, not loaded (load one with select:NAME): fx_sleep"#
                .into(),
            is_error: false,
        },
    ]);
    let entries: Vec<&Entry> = t.entries().collect();
    let Entry::Tool(card) = entries[0] else {
        panic!("a card: {entries:?}");
    };
    let promotion = card.promotion.as_ref().expect("a summary");
    assert_eq!(promotion.added, ["fx_echo", "fx_add"]);
    assert_eq!(promotion.working_set, None);
}

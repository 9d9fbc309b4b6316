use super::*;
use crate::protocol::ToolCall;
use crate::tools::{PromotedUpdate, StateUpdate};

fn store() -> (tempfile::TempDir, ThreadStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = ThreadStore::open(&dir.path().join("data/threads.db")).unwrap();
    (dir, store)
}

fn user(text: &str) -> Message {
    Message::User {
        content: text.into(),
    }
}

fn promoted_state() -> ThreadState {
    let mut state = ThreadState::default();
    state.apply(Some(&StateUpdate {
        promoted: Some(PromotedUpdate {
            catalog_hash: "cafe".into(),
            names: vec!["github_search".into(), "slack_post".into()],
        }),
        ..Default::default()
    }));
    state.touch("github_search");
    state
}

fn every_variant() -> Vec<Message> {
    vec![
        user("hello\nworld"),
        Message::Assistant {
            content: String::new(),
            reasoning: "let me think".into(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "read_file".into(),
                arguments: r#"{"path": "a.txt"}"#.into(),
            }],
        },
        Message::Tool {
            call_id: "call_1".into(),
            name: "read_file".into(),
            content: "contents".into(),
            is_error: false,
        },
        Message::Tool {
            call_id: "call_2".into(),
            name: "bad".into(),
            content: "no such tool".into(),
            is_error: true,
        },
        Message::Summary {
            content: "earlier, we talked".into(),
        },
        Message::Assistant {
            content: "done ✓".into(),
            reasoning: String::new(),
            tool_calls: Vec::new(),
        },
    ]
}

fn usage(input: u64, cached: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        cached_input_tokens: cached,
        output_tokens: output,
    }
}

/// Sets a thread's `updated_at`, since real timestamps within one test share a second.
fn set_updated(store: &ThreadStore, id: &str, at: i64) {
    store
        .conn()
        .execute(
            "UPDATE threads SET updated_at = ?2 WHERE id = ?1",
            params![id, at],
        )
        .unwrap();
}

/// Inserts a thread with a chosen id.
fn insert_with_id(store: &ThreadStore, id: &str) {
    let state = serde_json::to_string(&ThreadState::default()).unwrap();
    store
        .conn()
        .execute(
            "INSERT INTO threads (id, cwd, model, created_at, updated_at, state_json) \
             VALUES (?1, '/', 'm', 0, 0, ?2)",
            [id, &state],
        )
        .unwrap();
}

#[test]
fn every_message_variant_and_the_state_round_trip() {
    let (_dir, store) = store();
    let cwd = Path::new("/home/me/project");
    let meta = store.create(cwd, "gpt-test").unwrap();
    assert_eq!(meta.id.len(), 12);
    assert_eq!(meta.title, "");
    assert_eq!(meta.message_count, 0);
    let state = promoted_state();
    store
        .append(&meta.id, 0, &every_variant(), &state, &usage(100, 40, 7))
        .unwrap();
    store.set_title(&meta.id, "Greetings").unwrap();

    let thread = store.load(&meta.id).unwrap();
    assert_eq!(thread.messages, every_variant());
    assert_eq!(thread.state, state, "private fields included");
    assert_eq!(thread.meta.usage, usage(100, 40, 7));
    assert_eq!(thread.meta.message_count, 6);
    assert_eq!(thread.meta.title, "Greetings");
    assert_eq!(thread.meta.cwd, cwd);
    assert_eq!(thread.meta.model, "gpt-test");
    assert_eq!(thread.meta.created_at, meta.created_at);
    assert!(thread.meta.updated_at >= meta.created_at);
}

#[test]
fn append_in_two_batches() {
    let (_dir, store) = store();
    let id = store.create(Path::new("/p"), "m").unwrap().id;
    let all = every_variant();
    store
        .append(&id, 0, &all[..2], &ThreadState::default(), &usage(10, 0, 1))
        .unwrap();
    store
        .append(&id, 2, &all[2..], &promoted_state(), &usage(30, 5, 3))
        .unwrap();
    let thread = store.load(&id).unwrap();
    assert_eq!(thread.messages, all);
    assert_eq!(thread.state, promoted_state(), "the state is replaced");
    assert_eq!(thread.meta.usage, usage(30, 5, 3), "usage is the new total");
}

#[test]
fn a_seq_conflict_writes_nothing() {
    let (_dir, store) = store();
    let id = store.create(Path::new("/p"), "m").unwrap().id;
    store
        .append(
            &id,
            0,
            &[user("a"), user("b")],
            &ThreadState::default(),
            &usage(1, 0, 1),
        )
        .unwrap();
    store
        .append(
            &id,
            2,
            &[user("c")],
            &ThreadState::default(),
            &usage(2, 0, 2),
        )
        .unwrap();
    let err = store
        .append(
            &id,
            2,
            &[user("x"), user("y")],
            &promoted_state(),
            &usage(9, 9, 9),
        )
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::SeqConflict { seq: 2, .. }),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("threads.db") && message.contains(&id),
        "{message}"
    );
    let thread = store.load(&id).unwrap();
    assert_eq!(thread.messages, [user("a"), user("b"), user("c")]);
    assert_eq!(thread.state, ThreadState::default(), "state untouched");
    assert_eq!(thread.meta.usage, usage(2, 0, 2), "usage untouched");
}

#[test]
fn replace_messages_rewrites_the_list() {
    let (_dir, store) = store();
    let id = store.create(Path::new("/p"), "m").unwrap().id;
    store
        .append(
            &id,
            0,
            &every_variant(),
            &ThreadState::default(),
            &usage(5, 0, 5),
        )
        .unwrap();
    let summarised = [
        Message::Summary {
            content: "all of it".into(),
        },
        user("next"),
    ];
    store
        .replace_messages(&id, &summarised, &promoted_state(), &usage(50, 0, 50))
        .unwrap();
    let thread = store.load(&id).unwrap();
    assert_eq!(thread.messages, summarised);
    assert_eq!(thread.meta.message_count, 2);
    assert_eq!(thread.state, promoted_state());
    assert_eq!(thread.meta.usage, usage(50, 0, 50));
    store
        .append(
            &id,
            2,
            &[user("more")],
            &promoted_state(),
            &usage(60, 0, 60),
        )
        .unwrap();
    assert_eq!(store.load(&id).unwrap().messages.len(), 3);
}

#[test]
fn unknown_threads_are_not_found() {
    let (_dir, store) = store();
    let state = ThreadState::default();
    let none = Usage::default();
    for result in [
        store.append("abcdef012345", 0, &[user("a")], &state, &none),
        store.replace_messages("abcdef012345", &[], &state, &none),
        store.set_title("abcdef012345", "t"),
    ] {
        assert!(
            matches!(&result, Err(StoreError::NotFound(id)) if id == "abcdef012345"),
            "{result:?}"
        );
    }
    assert!(store.list(None).unwrap().is_empty());
}

#[test]
fn ids_resolve_from_unique_prefixes() {
    let (_dir, store) = store();
    insert_with_id(&store, "abcd11111111");
    insert_with_id(&store, "abcd22222222");
    insert_with_id(&store, "ffff00000000");

    assert_eq!(store.load("ffff").unwrap().meta.id, "ffff00000000");
    assert_eq!(store.load("ABCD1").unwrap().meta.id, "abcd11111111");
    assert_eq!(store.resolve("abcd22222222").unwrap(), "abcd22222222");

    let err = store.load("abcd").unwrap_err();
    match &err {
        StoreError::Ambiguous { candidates, .. } => {
            assert_eq!(candidates, &["abcd11111111", "abcd22222222"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string().contains("abcd11111111, abcd22222222"),
        "{err}"
    );

    let err = store.load("ffe").unwrap_err();
    assert!(matches!(err, StoreError::PrefixTooShort(_)), "{err:?}");
    assert!(err.to_string().contains("at least 4"), "{err}");

    let err = store.load("0123").unwrap_err();
    assert!(
        matches!(&err, StoreError::NotFound(id) if id == "0123"),
        "{err:?}"
    );
    assert!(matches!(store.load("abcd%"), Err(StoreError::NotFound(_))));
}

#[test]
fn latest_in_picks_the_newest_in_that_cwd_only() {
    let (_dir, store) = store();
    let old = store.create(Path::new("/a"), "m").unwrap().id;
    let new = store.create(Path::new("/a"), "m").unwrap().id;
    let elsewhere = store.create(Path::new("/a/sub"), "m").unwrap().id;
    set_updated(&store, &old, 300);
    set_updated(&store, &new, 200);
    set_updated(&store, &elsewhere, 900);
    assert_eq!(store.latest_in(Path::new("/a")).unwrap().unwrap().id, old);
    set_updated(&store, &new, 400);
    assert_eq!(store.latest_in(Path::new("/a")).unwrap().unwrap().id, new);
    assert_eq!(
        store.latest_in(Path::new("/a/sub")).unwrap().unwrap().id,
        elsewhere
    );
    assert_eq!(store.latest_in(Path::new("/b")).unwrap(), None);
}

#[test]
fn list_is_newest_first_and_limited() {
    let (_dir, store) = store();
    let ids: Vec<String> = (0..4)
        .map(|_| store.create(Path::new("/p"), "m").unwrap().id)
        .collect();
    for (at, id) in [30, 10, 40, 20].into_iter().zip(&ids) {
        set_updated(&store, id, at);
    }
    store
        .append(
            &ids[1],
            0,
            &[user("x")],
            &ThreadState::default(),
            &usage(1, 0, 1),
        )
        .unwrap();
    let listed: Vec<String> = store
        .list(None)
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(
        listed,
        [&*ids[1], &ids[2], &ids[0], &ids[3]],
        "appending bumps"
    );
    let two = store.list(Some(2)).unwrap();
    assert_eq!(two.len(), 2);
    assert_eq!(two[0].message_count, 1);
    assert_eq!(two[1].message_count, 0);
}

#[test]
fn only_a_thread_without_messages_is_forgotten() {
    let (_dir, store) = store();
    let kept = store.create(Path::new("/p"), "m").unwrap().id;
    // Another handle (another process) writes to the thread this one thinks is empty.
    let other = ThreadStore::open(store.path()).unwrap();
    other
        .append(
            &kept,
            0,
            &every_variant(),
            &ThreadState::default(),
            &Usage::default(),
        )
        .unwrap();
    assert!(!store.forget_empty(&kept).unwrap());
    assert_eq!(
        store.load(&kept).unwrap().messages.len(),
        every_variant().len()
    );
    let empty = store.create(Path::new("/p"), "m").unwrap().id;
    assert!(store.forget_empty(&empty).unwrap());
    assert!(matches!(store.load(&empty), Err(StoreError::NotFound(_))));
    assert!(!store.forget_empty(&empty).unwrap(), "gone already");
}

#[test]
fn a_corrupt_row_is_an_error_naming_thread_and_seq() {
    let (_dir, store) = store();
    let id = store.create(Path::new("/p"), "m").unwrap().id;
    store
        .append(
            &id,
            0,
            &[user("a"), user("b")],
            &ThreadState::default(),
            &Usage::default(),
        )
        .unwrap();
    store
        .conn()
        .execute(
            "UPDATE messages SET json = '{\"role\":\"robot\"}' WHERE seq = 1",
            [],
        )
        .unwrap();
    let err = store.load(&id).unwrap_err().to_string();
    assert!(err.contains(&id) && err.contains("message 1"), "{err}");
    assert!(err.contains("threads.db"), "{err}");

    store
        .conn()
        .execute("UPDATE threads SET state_json = 'nope'", [])
        .unwrap();
    let err = store.load(&id).unwrap_err().to_string();
    assert!(err.contains("state"), "{err}");
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    {
        let store = ThreadStore::open(&path).unwrap();
        store.conn().pragma_update(None, "user_version", 7).unwrap();
    }
    let err = ThreadStore::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooNew {
                found: 7,
                supported: 1,
                ..
            }
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(
        message.contains("version 7") && message.contains("version 1"),
        "{message}"
    );
}

#[test]
fn a_file_that_is_not_a_database_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    std::fs::write(&path, "these are my notes, not a database\n".repeat(50)).unwrap();
    let err = ThreadStore::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NotADatabase { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn two_handles_share_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    let first = ThreadStore::open(&path).unwrap();
    let second = ThreadStore::open(&path).unwrap();
    let a = first.create(Path::new("/p"), "m").unwrap().id;
    let b = second.create(Path::new("/p"), "m").unwrap().id;
    first
        .append(
            &b,
            0,
            &[user("from first")],
            &ThreadState::default(),
            &Usage::default(),
        )
        .unwrap();
    second
        .append(
            &a,
            0,
            &[user("from second")],
            &ThreadState::default(),
            &Usage::default(),
        )
        .unwrap();
    assert_eq!(second.load(&b).unwrap().messages, [user("from first")]);
    assert_eq!(first.load(&a).unwrap().messages, [user("from second")]);
    assert_eq!(first.list(None).unwrap().len(), 2);
    let mode: String = first
        .conn()
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn the_default_path_follows_the_environment() {
    let path = |vars: &[(&str, &str)]| {
        let lookup = |name: &str| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.to_string())
        };
        default_path(&lookup)
    };
    assert_eq!(
        path(&[
            ("ANTLER_DATA_DIR", "/d"),
            ("XDG_DATA_HOME", "/x"),
            ("HOME", "/h")
        ])
        .unwrap(),
        Path::new("/d/threads.db")
    );
    assert_eq!(
        path(&[("XDG_DATA_HOME", "/x"), ("HOME", "/h")]).unwrap(),
        Path::new("/x/antler/threads.db")
    );
    assert_eq!(
        path(&[("XDG_DATA_HOME", "relative"), ("HOME", "/h")]).unwrap(),
        Path::new("/h/.local/share/antler/threads.db"),
        "a relative XDG_DATA_HOME is ignored"
    );
    assert_eq!(
        path(&[("ANTLER_DATA_DIR", ""), ("HOME", "/h")]).unwrap(),
        Path::new("/h/.local/share/antler/threads.db")
    );
    assert!(matches!(path(&[]), Err(StoreError::NoDataDir)));
}

#[test]
fn titles_come_from_the_first_non_empty_line() {
    assert_eq!(
        title_from("\n  \n  Fix   the\tbuild \nplease"),
        "Fix the build"
    );
    assert_eq!(title_from(""), "");
    let exactly = "x".repeat(60);
    assert_eq!(title_from(&exactly), exactly);
    let long = format!("{} end", "é".repeat(70));
    let title = title_from(&long);
    assert_eq!(title.chars().count(), 60);
    assert!(title.ends_with("é…"), "{title}");
    let spaced = format!("{} {}", "a".repeat(58), "b".repeat(10));
    assert_eq!(
        title_from(&spaced),
        format!("{}…", "a".repeat(58)),
        "no space before …"
    );
}

#[test]
fn the_store_can_be_shared_between_tasks() {
    fn shareable<T: Send + Sync>() {}
    shareable::<ThreadStore>();
}

#[test]
fn two_handles_can_write_at_the_same_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threads.db");
    let id = ThreadStore::open(&path)
        .unwrap()
        .create(Path::new("/p"), "m")
        .unwrap()
        .id;
    let writers: Vec<_> = (0..2)
        .map(|writer| {
            let (path, id) = (path.clone(), id.clone());
            std::thread::spawn(move || {
                let store = ThreadStore::open(&path).unwrap();
                let own = store.create(Path::new("/p"), "m").unwrap().id;
                for seq in 0..20 {
                    let text = format!("writer {writer}, message {seq}");
                    store
                        .append(
                            &own,
                            seq,
                            &[user(&text)],
                            &ThreadState::default(),
                            &Usage::default(),
                        )
                        .unwrap();
                    store.set_title(&id, &text).unwrap();
                }
                own
            })
        })
        .collect();
    let store = ThreadStore::open(&path).unwrap();
    for writer in writers {
        let own = writer.join().unwrap();
        assert_eq!(store.load(&own).unwrap().messages.len(), 20);
    }
    assert_eq!(store.list(None).unwrap().len(), 3);
}

#[test]
fn many_handles_can_create_a_new_file_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new/threads.db");
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let path = path.clone();
            std::thread::spawn(move || {
                let store = ThreadStore::open(&path).unwrap();
                store.create(Path::new("/p"), "m").unwrap();
            })
        })
        .collect();
    for opener in openers {
        opener.join().unwrap();
    }
    assert_eq!(
        ThreadStore::open(&path).unwrap().list(None).unwrap().len(),
        4
    );
}

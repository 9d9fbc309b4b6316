use std::sync::Mutex;

use super::*;
use crate::config::{HookCommand, HookGroup};

fn hooks(event: &str, matcher: Option<&str>, commands: &[&str], claude: bool) -> Hooks {
    let group = HookGroup {
        matcher: matcher.map(String::from),
        hooks: commands
            .iter()
            .map(|c| HookCommand {
                kind: "command".into(),
                command: (*c).into(),
                timeout: Some(10),
            })
            .collect(),
    };
    let mut config = HooksConfig::default();
    match event {
        "PreToolUse" => config.pre_tool_use.push(group),
        "Stop" => config.stop.push(group),
        "SessionStart" => config.session_start.push(group),
        other => panic!("{other}"),
    }
    let mut hooks = Hooks::new(&std::env::temp_dir());
    hooks
        .add(&config, Path::new("config.yaml"), claude)
        .unwrap();
    hooks
}

fn tool<'a>(name: &'a str, source: &'a ToolSource, subject: Option<&'a str>) -> Target<'a> {
    Target::Tool {
        name,
        source,
        subject,
        commands: name == "bash",
    }
}

#[test]
fn matchers_take_globs_rules_and_claude_codes_names() {
    let builtin = ToolSource::BuiltIn;
    let github = ToolSource::Mcp {
        server: "github".into(),
        original_name: "create_issue".into(),
    };
    let hook =
        |matcher, claude| hooks("PreToolUse", Some(matcher), &["x"], claude).hooks[0].clone();
    let push = hook("bash(git push*)", false);
    assert!(push.matches(&tool("bash", &builtin, Some("git push origin main"))));
    assert!(
        push.matches(&tool("bash", &builtin, Some("git status && git push -f"))),
        "any part of a command counts, as for a deny rule"
    );
    assert!(!push.matches(&tool("bash", &builtin, Some("git status"))));
    let globbed = hook("github_*|read_file", false);
    assert!(globbed.matches(&tool("github_create_issue", &github, None)));
    assert!(globbed.matches(&tool("read_file", &builtin, None)));
    assert!(!globbed.matches(&tool("write_file", &builtin, None)));
    let claude = hook("Bash|Edit", true);
    assert!(claude.matches(&tool("bash", &builtin, Some("ls"))));
    assert!(claude.matches(&tool("str_replace", &builtin, None)));
    let mcp = hook("mcp__github__.*", true);
    assert!(
        mcp.matches(&tool("gh_renamed", &github, None)),
        "by server and own name"
    );
    assert!(!mcp.matches(&tool("read_file", &builtin, None)));
    assert!(hook("*", false).matches(&tool("anything", &builtin, None)));
    assert!(matcher_items("a||b", false).is_err());
    assert!(matcher_items("bash(git", false).is_err());
}

#[tokio::test]
async fn hooks_of_an_event_run_at_once_with_the_event_on_stdin() {
    let hooks = hooks(
        "Stop",
        None,
        &[
            r#"cat > /dev/null; echo '{"decision":"block","reason":"tests fail"}'"#,
            "read -r line; case \"$line\" in *'\"hook_event_name\":\"Stop\"'*) exit 0;; *) exit 1;; esac",
            // The same command twice runs once.
            "exit 0",
            "exit 0",
        ],
        false,
    );
    let events = Mutex::new(Vec::new());
    let emit = |e: Event| events.lock().unwrap().push(e);
    let mut fields = Map::new();
    fields.insert("stop_hook_active".into(), Value::Bool(false));
    let ran = hooks
        .run(HookEvent::Stop, Target::Any, "thread-1", fields, &emit)
        .await;
    assert_eq!(ran.len(), 3);
    let verdict = Verdict::of(HookEvent::Stop, ran);
    assert_eq!(verdict.blocked.as_deref(), Some("tests fail"));
    assert!(verdict.notices.is_empty(), "{:?}", verdict.notices);
    let events = events.into_inner().unwrap();
    assert_eq!(events.len(), 6, "a start and a finish per hook");
    assert!(events.iter().any(|e| matches!(
        e,
        Event::HookFinished {
            decision: Some(HookDecision::Block),
            exit_code: Some(0),
            ..
        }
    )));
}

#[tokio::test]
async fn a_failing_hook_is_a_notice_and_a_word_matcher_picks_the_source() {
    let hooks = hooks("SessionStart", Some("resume"), &["echo resumed"], false);
    let emit = |_: Event| {};
    let ran = hooks
        .run(
            HookEvent::SessionStart,
            Target::Word("startup"),
            "t",
            Map::new(),
            &emit,
        )
        .await;
    assert!(ran.is_empty());
    let ran = hooks
        .run(
            HookEvent::SessionStart,
            Target::Word("resume"),
            "t",
            Map::new(),
            &emit,
        )
        .await;
    let verdict = Verdict::of(HookEvent::SessionStart, ran);
    assert_eq!(verdict.context, ["resumed"]);
    let failing = self::hooks("Stop", None, &["echo bad >&2; exit 7"], false);
    let ran = failing
        .run(HookEvent::Stop, Target::Any, "t", Map::new(), &emit)
        .await;
    let verdict = Verdict::of(HookEvent::Stop, ran);
    assert!(verdict.blocked.is_none());
    assert!(
        verdict.notices[0].contains("status 7: bad"),
        "{:?}",
        verdict.notices
    );
}

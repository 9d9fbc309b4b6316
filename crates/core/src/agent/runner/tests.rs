//! Runner tests: a scripted provider, real layers, tools that echo.
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Map, json};

use super::batch::{CANCEL_GRACE, stale_call};
use super::*;
use crate::agent::layers::{agent_chain, dangling};
use crate::config::{ToolSearchConfig, ToolSearchMode};
use crate::deferred::setup_deferred;
use crate::deferred::testing::mcp_tools;
use crate::protocol::FinishReason;
use crate::provider::testing::Silent;
use crate::provider::{ModelEvent, ModelRequest, ProviderError, ReplyFuture};
use crate::tools::ToolContext;
use crate::tools::ToolOutput;
use crate::tools::{ToolFuture, ToolInfo, ToolSource, assemble_toolset};
use serde_json::Value;

/// Plays scripted replies and records every request.
struct Scripted {
    replies: Mutex<Vec<Result<ModelReply, String>>>,
    requests: Mutex<Vec<ModelRequest>>,
    cancel_on_call: Option<(usize, CancellationToken)>,
}

impl Scripted {
    fn new(replies: Vec<ModelReply>) -> Arc<Self> {
        Arc::new(Self {
            replies: Mutex::new(replies.into_iter().rev().map(Ok).collect()),
            requests: Mutex::new(Vec::new()),
            cancel_on_call: None,
        })
    }
    fn bound(&self, i: usize) -> Vec<String> {
        self.requests.lock().unwrap()[i]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }
}

impl Provider for Scripted {
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        events: &'a (dyn Fn(ModelEvent) + Send + Sync),
    ) -> ReplyFuture<'a> {
        Box::pin(async move {
            let n = {
                let mut requests = self.requests.lock().unwrap();
                requests.push(request.clone());
                requests.len()
            };
            if let Some((at, token)) = &self.cancel_on_call
                && *at == n
            {
                token.cancel();
                std::future::pending::<()>().await;
            }
            let next = self.replies.lock().unwrap().pop();
            match next.unwrap_or_else(|| Err("no reply left".into())) {
                Ok(reply) => {
                    events(ModelEvent::TextDelta(reply.content.clone()));
                    Ok(reply)
                }
                Err(message) => Err(ProviderError::Transport {
                    endpoint: "scripted".into(),
                    message,
                }),
            }
        })
    }
    fn model(&self) -> &str {
        "scripted"
    }
    fn endpoint(&self) -> &str {
        "scripted"
    }
}

/// Echoes its `text` argument after `delay_ms`.
struct Echo(ToolInfo);
impl Tool for Echo {
    fn info(&self) -> &ToolInfo {
        &self.0
    }
    fn call<'a>(&'a self, _ctx: ToolContext<'a>, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let delay = arguments["delay_ms"].as_u64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(delay)).await;
            ToolOutput::ok(arguments["text"].as_str().unwrap_or("").to_string())
        })
    }
}

fn echo() -> Arc<dyn Tool> {
    Arc::new(Echo(ToolInfo {
        name: "echo".into(),
        description: "Echo text".into(),
        parameters: json!({"type": "object"}),
        source: ToolSource::BuiltIn,
        metadata: Map::new(),
        parallel: false,
    }))
}

fn text(content: &str) -> ModelReply {
    ModelReply {
        content: content.into(),
        ..ModelReply::default()
    }
}

fn calls(calls: &[(&str, &str, Value)]) -> ModelReply {
    ModelReply {
        tool_calls: calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: args.to_string(),
            })
            .collect(),
        finish_reason: FinishReason::ToolCalls,
        usage: Some(Usage {
            input_tokens: 10,
            cached_input_tokens: 4,
            output_tokens: 2,
        }),
        ..ModelReply::default()
    }
}

fn agent(provider: Arc<dyn Provider>, tool_search: bool) -> Agent {
    let mcp = mcp_tools(&[
        ("time", "now", "Current time in a timezone"),
        ("github", "get_file", "Read a file from a GitHub repository"),
    ]);
    let (toolset, _) = assemble_toolset(Vec::new(), vec![echo()], mcp);
    let config = ToolSearchConfig {
        enabled: Some(if tool_search {
            ToolSearchMode::On
        } else {
            ToolSearchMode::Off
        }),
        ..ToolSearchConfig::default()
    };
    let deferred = setup_deferred(&toolset, &config, None).unwrap();
    Agent {
        provider,
        chain: agent_chain(&deferred, &config, &[], Default::default()),
        deferred: Arc::new(deferred),
        system_prompt: "system".into(),
        max_turns: 50,
        summarization: None,
        ledger: Default::default(),
        gates: Arc::new(crate::permissions::CallGates::allow_all()),
        hooks: Arc::default(),
    }
}

/// Stores what it is given, like the SQLite store would.
#[derive(Default)]
struct Memory {
    saved: Mutex<Vec<Message>>,
    appends: Mutex<usize>,
}

impl ThreadSink for Memory {
    fn append(&self, thread: &Thread, from: usize) -> Result<(), SaveError> {
        let mut saved = self.saved.lock().unwrap();
        assert_eq!(saved.len(), from, "appends are contiguous");
        saved.extend_from_slice(&thread.messages[from..]);
        *self.appends.lock().unwrap() += 1;
        Ok(())
    }
    fn rewrite(&self, thread: &Thread) -> Result<(), SaveError> {
        *self.saved.lock().unwrap() = thread.messages.clone();
        Ok(())
    }
}

async fn run(agent: &Agent, thread: &mut Thread, input: &str) -> (RunResult, Vec<Event>) {
    let events = Mutex::new(Vec::new());
    let emit = |e: Event| events.lock().unwrap().push(e);
    let result = agent
        .run(
            thread,
            input.into(),
            &NoSink,
            &emit,
            &CancellationToken::new(),
        )
        .await;
    (result, events.into_inner().unwrap())
}

fn kinds(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[tokio::test]
async fn tools_run_concurrently_and_results_keep_call_order() {
    let provider = Scripted::new(vec![
        calls(&[
            ("a", "echo", json!({"text": "slow", "delay_ms": 50})),
            ("b", "echo", json!({"text": "fast"})),
            ("c", "nope", json!({})),
        ]),
        text("done"),
    ]);
    let agent = agent(provider.clone(), false);
    let mut thread = Thread::default();
    let (result, events) = run(&agent, &mut thread, "go").await;
    assert_eq!(result.status, RunStatus::Success);
    assert_eq!(result.result, "done");
    assert_eq!(result.turns, 2);
    assert_eq!(result.usage.input_tokens, 10);
    let results: Vec<(&str, &str, bool)> = thread
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => Some((call_id.as_str(), content.as_str(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results[..2], [("a", "slow", false), ("b", "fast", false)]);
    assert!(results[2].2 && results[2].1.contains("no tool named 'nope'"));
    assert_eq!(
        kinds(&events),
        [
            "run_started",
            "turn_started",
            "text_delta",
            "usage",
            "turn_completed",
            "tool_call_started",
            "tool_call_started",
            "tool_call_started",
            "tool_call_finished",
            "tool_call_finished",
            "tool_call_finished",
            "turn_started",
            "text_delta",
            "turn_completed",
            "run_finished",
        ]
    );
    // The second request carries the results after the assistant's calls.
    let second = &provider.requests.lock().unwrap()[1];
    assert_eq!(second.messages.len(), 5);
    assert_eq!(second.system, "system");
}

/// Notes `start <name>` and `end <name>` in a shared log, yielding in between (so that a
/// concurrent call would note its start before this one ends).
struct Recorder {
    info: ToolInfo,
    log: Arc<Mutex<Vec<String>>>,
}

impl Tool for Recorder {
    fn info(&self) -> &ToolInfo {
        &self.info
    }
    fn call<'a>(&'a self, ctx: ToolContext<'a>, _: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            self.log
                .lock()
                .unwrap()
                .push(format!("start {}", ctx.call_id));
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            self.log
                .lock()
                .unwrap()
                .push(format!("end {}", ctx.call_id));
            ToolOutput::ok("ok")
        })
    }
}

/// Runs calls `a`, `b` (tool `first`, then `second`) in one reply and returns the log.
async fn order_of(first_parallel: bool, second_parallel: bool) -> Vec<String> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let recorder = |name: &str, parallel| -> Arc<dyn Tool> {
        Arc::new(Recorder {
            info: ToolInfo {
                name: name.into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
                source: ToolSource::BuiltIn,
                metadata: Map::new(),
                parallel,
            },
            log: log.clone(),
        })
    };
    let tools = vec![
        recorder("first", first_parallel),
        recorder("second", second_parallel),
    ];
    let provider = Scripted::new(vec![
        calls(&[("a", "first", json!({})), ("b", "second", json!({}))]),
        text("done"),
    ]);
    let agent = builtin_agent(tools, provider);
    let (result, _) = run(&agent, &mut Thread::default(), "go").await;
    assert_eq!(result.status, RunStatus::Success);
    log.lock().unwrap().clone()
}

#[tokio::test]
async fn calls_run_concurrently_only_when_every_tool_may() {
    let log = order_of(true, true).await;
    assert_eq!(&log[..2], ["start a", "start b"], "parallel tools overlap");
    for (first, second) in [(true, false), (false, true), (false, false)] {
        assert_eq!(
            order_of(first, second).await,
            ["start a", "end a", "start b", "end b"],
            "({first}, {second}): one after the other, in call order"
        );
    }
}

/// An agent whose one model call delegates `prompt` to a subagent answered by `subagent`.
fn delegating_agent(prompt: &str, subagent: Arc<dyn Provider>) -> Agent {
    use crate::agent::subagent::{SubagentEnv, SubagentSlot, Task};
    use crate::config::SubagentsConfig;

    let provider = Scripted::new(vec![calls(&[(
        "t",
        "task",
        json!({"description": "delegated", "prompt": prompt}),
    )])]);
    let env = SubagentSlot::default();
    let task: Arc<dyn Tool> = Arc::new(Task::new(&SubagentsConfig::default(), env.clone()));
    let (toolset, _) = assemble_toolset(Vec::new(), vec![task], Vec::new());
    let config = ToolSearchConfig::default();
    let deferred = Arc::new(setup_deferred(&toolset, &config, None).unwrap());
    env.set(SubagentEnv {
        provider: subagent,
        deferred: deferred.clone(),
        tool_search: config.clone(),
        servers: Vec::new(),
        system_prompt: "sub".into(),
        max_turns: 5,
        output_budget: None,
        redact: Default::default(),
        instructions: Default::default(),
        vision: false,
        gates: Arc::new(crate::permissions::CallGates::allow_all()),
        hooks: Arc::default(),
        skills: None,
    });
    Agent {
        provider,
        chain: agent_chain(&deferred, &config, &[], Default::default()),
        deferred,
        system_prompt: "system".into(),
        max_turns: 5,
        summarization: None,
        ledger: Default::default(),
        gates: Arc::new(crate::permissions::CallGates::allow_all()),
        hooks: Arc::default(),
    }
}

#[tokio::test]
async fn cancelling_the_run_cancels_its_subagents() {
    let agent = delegating_agent("never ends", Arc::new(Silent::new()));
    let cancel = CancellationToken::new();
    let events = Mutex::new(Vec::new());
    // The user cancels as soon as the subagent's model call starts.
    let emit = |e: Event| {
        if matches!(&e, Event::Subagent { event, .. } if matches!(event.as_ref(), Event::TurnStarted { .. }))
        {
            cancel.cancel();
        }
        events.lock().unwrap().push(e);
    };
    let mut thread = Thread::default();
    let run = agent.run(&mut thread, "go".into(), &NoSink, &emit, &cancel);
    let result = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the run ended although its subagent never would");
    assert_eq!(result.status, RunStatus::Interrupted);
    let events = events.into_inner().unwrap();
    assert!(
        events.iter().any(|e| matches!(e, Event::Subagent { event, .. }
            if matches!(event.as_ref(), Event::RunFinished(r) if r.status == RunStatus::Interrupted))),
        "the subagent itself saw the cancellation and ended interrupted"
    );
}

#[tokio::test]
async fn the_deferred_flow_promotes_then_binds() {
    let provider = Scripted::new(vec![
        calls(&[("s", "tool_search", json!({"query": "select:time_now"}))]),
        calls(&[("t", "time_now", json!({}))]),
        text("it is noon"),
    ]);
    let agent = agent(provider.clone(), true);
    let mut thread = Thread::default();
    let (result, events) = run(&agent, &mut thread, "what time is it").await;
    assert_eq!(result.status, RunStatus::Success, "{result:?}");
    assert_eq!(provider.bound(0), ["tool_search", "echo"]);
    assert_eq!(provider.bound(1), ["tool_search", "echo", "time_now"]);
    assert_eq!(result.promoted_tools, ["time_now"]);
    let promoted = events
        .iter()
        .find_map(|e| match e {
            Event::ToolsPromoted { added, .. } => Some(added.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(promoted, ["time_now"]);
    // A call naming an unpromoted deferred tool does not run; it promotes the tool.
    let provider = Scripted::new(vec![
        calls(&[("g", "github_get_file", json!({}))]),
        text("ok"),
    ]);
    let agent = self::agent(provider, true);
    let mut thread = Thread::default();
    run(&agent, &mut thread, "read it").await;
    assert!(matches!(
        &thread.messages[2],
        Message::Tool { content, is_error: true, .. } if content.contains("was deferred, so this call did not run")
    ));
}

#[tokio::test]
async fn max_turns_fails_the_run() {
    let provider = Scripted::new(vec![
        calls(&[("a", "echo", json!({"text": "1"}))]),
        calls(&[("b", "echo", json!({"text": "2"}))]),
    ]);
    let mut agent = agent(provider, false);
    agent.max_turns = 2;
    let (result, _) = run(&agent, &mut Thread::default(), "loop").await;
    assert_eq!(result.status, RunStatus::Failed);
    assert_eq!(
        result.errors,
        ["the run reached --max-turns (2) without a final answer"]
    );
}

#[tokio::test]
async fn a_provider_error_fails_the_run_and_keeps_the_user_message() {
    let provider = Scripted::new(Vec::new());
    let agent = agent(provider, false);
    let sink = Memory::default();
    let mut thread = Thread::default();
    let result = agent
        .run(
            &mut thread,
            "hi".into(),
            &sink,
            &|_| {},
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(result.status, RunStatus::Failed);
    assert!(
        result.errors[0].contains("no reply left"),
        "{:?}",
        result.errors
    );
    assert_eq!(
        sink.saved.lock().unwrap().len(),
        1,
        "the user message is stored"
    );
}

#[tokio::test]
async fn every_step_is_saved_as_it_happens() {
    let provider = Scripted::new(vec![
        calls(&[("a", "echo", json!({"text": "1"}))]),
        text("done"),
    ]);
    let agent = agent(provider, false);
    let sink = Memory::default();
    let mut thread = Thread::default();
    agent
        .run(
            &mut thread,
            "hi".into(),
            &sink,
            &|_| {},
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(*sink.saved.lock().unwrap(), thread.messages);
    assert_eq!(
        *sink.appends.lock().unwrap(),
        5,
        "user, reply, results, reply, then the state with the thread's ledger"
    );
}

#[tokio::test]
async fn an_interrupt_during_the_model_call_ends_the_run_cleanly() {
    let token = CancellationToken::new();
    let provider = Arc::new(Scripted {
        replies: Mutex::new(vec![
            Ok(text("never")),
            Ok(calls(&[("a", "echo", json!({"text": "1"}))])),
        ]),
        requests: Mutex::new(Vec::new()),
        cancel_on_call: Some((2, token.clone())),
    });
    let agent = agent(provider, false);
    let sink = Memory::default();
    let mut thread = Thread::default();
    let result = agent
        .run(&mut thread, "hi".into(), &sink, &|_| {}, &token)
        .await;
    assert_eq!(result.status, RunStatus::Interrupted);
    assert_eq!(result.turns, 2);
    // user, the call, its result: valid and stored; the unfinished call is lost.
    assert_eq!(sink.saved.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn a_resumed_history_with_a_dangling_call_is_patched_and_stored() {
    let provider = Scripted::new(vec![text("fine")]);
    let agent = agent(provider.clone(), false);
    let sink = Memory::default();
    let mut thread = Thread {
        messages: vec![
            Message::User {
                content: "x".into(),
            },
            Message::Assistant {
                content: String::new(),
                reasoning: String::new(),
                tool_calls: vec![ToolCall {
                    id: "k".into(),
                    name: "echo".into(),
                    arguments: "{}".into(),
                }],
            },
        ],
        ..Thread::default()
    };
    *sink.saved.lock().unwrap() = thread.messages.clone();
    agent
        .run(
            &mut thread,
            "again".into(),
            &sink,
            &|_| {},
            &CancellationToken::new(),
        )
        .await;
    let sent = &provider.requests.lock().unwrap()[0].messages;
    assert!(matches!(&sent[2], Message::Tool { content, .. } if content == dangling::PLACEHOLDER));
    assert_eq!(*sink.saved.lock().unwrap(), thread.messages);
}

#[tokio::test]
async fn summarisation_replaces_older_messages_and_keeps_promotions() {
    let provider = Scripted::new(vec![
        calls(&[("s", "tool_search", json!({"query": "select:time_now"}))]),
        text("first answer"),
        text("SUMMARY"),
        text("second answer"),
    ]);
    let mut agent = agent(provider.clone(), true);
    agent.summarization = Some(Summarization {
        trigger_tokens: 1,
        keep_messages: 1,
    });
    let mut thread = Thread::default();
    run(&agent, &mut thread, "one").await;
    let (result, events) = run(&agent, &mut thread, "two").await;
    assert_eq!(result.result, "second answer");
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Summarized {
            replaced_messages: 4,
            ..
        }
    )));
    assert_eq!(
        thread.messages[0],
        Message::Summary {
            content: "SUMMARY".into()
        }
    );
    assert_eq!(provider.bound(3), ["tool_search", "echo", "time_now"]);
}

#[tokio::test]
async fn a_clarification_interrupts_the_turn_and_the_answer_resumes_it() {
    use crate::tools::builtin::{AskClarification, Clarifications};

    let provider = Scripted::new(vec![
        calls(&[(
            "q",
            "ask_clarification",
            json!({"question": "Which file?", "options": ["a.txt", "b.txt"]}),
        )]),
        text("Editing b.txt."),
    ]);
    let (broker, mut questions) = Clarifications::new();
    let ask = AskClarification::new(broker.clone());
    let (toolset, _) = assemble_toolset(Vec::new(), vec![Arc::new(ask) as Arc<dyn Tool>], vec![]);
    let config = ToolSearchConfig::default();
    let deferred = setup_deferred(&toolset, &config, None).unwrap();
    let agent = Agent {
        provider: provider.clone(),
        chain: agent_chain(&deferred, &config, &[], Default::default()),
        deferred: Arc::new(deferred),
        system_prompt: "system".into(),
        max_turns: 50,
        summarization: None,
        ledger: Default::default(),
        gates: Arc::new(crate::permissions::CallGates::allow_all()),
        hooks: Arc::default(),
    };
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    // The front-end: it sees the question in the core's events, then answers it.
    let front_end = tokio::spawn(async move {
        let question = questions.recv().await.unwrap();
        let asked = seen.lock().unwrap().iter().any(|e| {
            matches!(e, Event::ToolCallStarted { name, arguments, .. }
                if name == "ask_clarification" && arguments["question"] == "Which file?")
        });
        assert!(asked, "the question is in the events before it is answered");
        assert_eq!(question.options, ["a.txt", "b.txt"]);
        assert_eq!(question.call_id, "q");
        assert!(broker.answer(&question.call_id, Some("b.txt".into())));
    });
    let emit = |e: Event| events.lock().unwrap().push(e);
    let mut thread = Thread::default();
    let result = agent
        .run(
            &mut thread,
            "edit the file".into(),
            &NoSink,
            &emit,
            &CancellationToken::new(),
        )
        .await;
    front_end.await.unwrap();
    assert_eq!(result.status, RunStatus::Success);
    assert_eq!(result.turns, 2, "the same run went on after the answer");
    let second = &provider.requests.lock().unwrap()[1];
    assert!(
        matches!(second.messages.last(), Some(Message::Tool { content, .. })
        if content == "The user answered: b.txt")
    );
}

#[tokio::test]
async fn a_subagent_has_its_own_promotions_and_its_answer_is_the_result() {
    use crate::agent::subagent::{SubagentEnv, SubagentSlot, Task};
    use crate::config::SubagentsConfig;

    let spent = |input_tokens| {
        Some(Usage {
            input_tokens,
            cached_input_tokens: 0,
            output_tokens: 1,
        })
    };
    let provider = Scripted::new(vec![
        calls(&[(
            "t",
            "task",
            json!({"description": "time", "prompt": "find the time"}),
        )]),
        ModelReply {
            usage: spent(10),
            ..calls(&[("s", "tool_search", json!({"query": "select:time_now"}))])
        },
        ModelReply {
            usage: spent(20),
            ..text("noon")
        },
        text("It is noon."),
    ]);
    let env = SubagentSlot::default();
    let task: Arc<dyn Tool> = Arc::new(Task::new(&SubagentsConfig::default(), env.clone()));
    let mcp = mcp_tools(&[("time", "now", "Current time in a timezone")]);
    let (toolset, _) = assemble_toolset(Vec::new(), vec![echo(), task], mcp);
    let config = ToolSearchConfig {
        enabled: Some(ToolSearchMode::On),
        ..ToolSearchConfig::default()
    };
    let deferred = Arc::new(setup_deferred(&toolset, &config, None).unwrap());
    env.set(SubagentEnv {
        provider: provider.clone(),
        deferred: deferred.clone(),
        tool_search: config.clone(),
        servers: Vec::new(),
        system_prompt: "subagent system".into(),
        max_turns: 10,
        output_budget: None,
        redact: Default::default(),
        instructions: Default::default(),
        vision: false,
        gates: Arc::new(crate::permissions::CallGates::allow_all()),
        hooks: Arc::default(),
        skills: None,
    });
    let agent = Agent {
        provider: provider.clone(),
        chain: agent_chain(&deferred, &config, &[], Default::default()),
        deferred,
        system_prompt: "system".into(),
        max_turns: 50,
        summarization: None,
        ledger: Default::default(),
        gates: Arc::new(crate::permissions::CallGates::allow_all()),
        hooks: Arc::default(),
    };
    let mut thread = Thread::default();
    let (result, events) = run(&agent, &mut thread, "what time is it").await;
    assert_eq!(result.status, RunStatus::Success, "{result:?}");
    assert_eq!(result.result, "It is noon.");
    // The parent's own call (10 in, 2 out) plus the subagent's two (10 + 20 in, 1 + 1 out).
    assert_eq!(
        (result.usage.input_tokens, result.usage.output_tokens),
        (40, 4),
        "the subagent's model calls count for the run"
    );
    assert_eq!(thread.usage.input_tokens, 40);
    assert_eq!(provider.bound(0), ["tool_search", "echo", "task"]);
    assert_eq!(
        provider.bound(1),
        ["tool_search", "echo"],
        "no task for the subagent"
    );
    assert_eq!(provider.bound(2), ["tool_search", "echo", "time_now"]);
    assert_eq!(
        provider.bound(3),
        ["tool_search", "echo", "task"],
        "the subagent's promotion does not leak into the parent"
    );
    assert!(result.promoted_tools.is_empty());
    assert_eq!(
        provider.requests.lock().unwrap()[1].system,
        "subagent system"
    );
    assert!(
        matches!(provider.requests.lock().unwrap()[3].messages.last(),
        Some(Message::Tool { content, is_error: false, .. }) if content == "noon")
    );
    let wrapped: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::Subagent { .. }))
        .collect();
    assert!(!wrapped.is_empty());
    assert!(wrapped.iter().all(
        |e| matches!(e, Event::Subagent { subagent: 1, parent_call_id, .. } if parent_call_id == "t")
    ));
    assert!(
        wrapped
            .iter()
            .any(|e| matches!(e, Event::Subagent { event, .. }
        if matches!(event.as_ref(), Event::ToolsPromoted { .. })))
    );
}

#[tokio::test]
async fn presented_files_are_listed_in_the_result() {
    use crate::config::SandboxConfig;
    use crate::tools::builtin::PresentFiles;
    use crate::tools::sandbox::Workspace;

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("out.md"), "x").unwrap();
    let present: Arc<dyn Tool> = Arc::new(PresentFiles::new(
        Workspace::from_config(&SandboxConfig::default(), dir.path()).unwrap(),
    ));
    let provider = Scripted::new(vec![
        calls(&[("p", "present_files", json!({"filepaths": ["out.md"]}))]),
        text("Here it is."),
        text("You are welcome."),
        calls(&[("p2", "present_files", json!({"filepaths": ["out.md"]}))]),
        text("Again."),
    ]);
    let (toolset, _) = assemble_toolset(Vec::new(), vec![present], vec![]);
    let config = ToolSearchConfig::default();
    let deferred = setup_deferred(&toolset, &config, None).unwrap();
    let agent = Agent {
        provider,
        chain: agent_chain(&deferred, &config, &[], Default::default()),
        deferred: Arc::new(deferred),
        system_prompt: "system".into(),
        max_turns: 50,
        summarization: None,
        ledger: Default::default(),
        gates: Arc::new(crate::permissions::CallGates::allow_all()),
        hooks: Arc::default(),
    };
    let mut thread = Thread::default();
    let (result, events) = run(&agent, &mut thread, "write it").await;
    assert_eq!(result.files, ["out.md"]);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::FilesPresented { files, .. } if files == &["out.md"]))
    );
    let (again, _) = run(&agent, &mut thread, "thanks").await;
    assert!(
        again.files.is_empty(),
        "only files of this run: {:?}",
        again.files
    );
}

/// An agent over `mcp` alone, tool search off.
/// An agent over built-in `tools` (nothing deferred) answered by `provider`.
fn builtin_agent(tools: Vec<Arc<dyn Tool>>, provider: Arc<dyn Provider>) -> Agent {
    agent_of(tools, Vec::new(), provider)
}

/// An agent over built-in and MCP tools, nothing deferred, answered by `provider`.
fn agent_of(
    builtin: Vec<Arc<dyn Tool>>,
    mcp: Vec<Arc<dyn Tool>>,
    provider: Arc<dyn Provider>,
) -> Agent {
    let (toolset, _) = assemble_toolset(Vec::new(), builtin, mcp);
    let config = ToolSearchConfig::default();
    let deferred = setup_deferred(&toolset, &config, None).unwrap();
    Agent {
        provider,
        chain: agent_chain(&deferred, &config, &[], Default::default()),
        deferred: Arc::new(deferred),
        system_prompt: "system".into(),
        max_turns: 5,
        summarization: None,
        ledger: Default::default(),
        gates: Arc::new(crate::permissions::CallGates::allow_all()),
        hooks: Arc::default(),
    }
}

fn agent_over(mcp: Vec<Arc<dyn Tool>>) -> Agent {
    agent_of(Vec::new(), mcp, Scripted::new(Vec::new()))
}

/// `time_now` from `server`'s tool `original`, with `parameters`.
fn time_now(server: &str, original: &str, parameters: Value) -> Arc<dyn Tool> {
    Arc::new(Echo(ToolInfo {
        name: "time_now".into(),
        description: "Current time".into(),
        parameters,
        source: ToolSource::Mcp {
            server: server.into(),
            original_name: original.into(),
        },
        metadata: Map::new(),
        parallel: false,
    }))
}

#[test]
fn a_call_is_stale_unless_its_tool_is_the_one_the_model_saw() {
    let schema = json!({"type": "object"});
    let saw = agent_over(vec![time_now("time", "now", schema.clone())]);
    let call = ToolCall {
        id: "c".into(),
        name: "time_now".into(),
        arguments: "{}".into(),
    };
    let verdict = |now: Agent| stale_call(&saw, &now, &call).map(|o| o.content);
    assert_eq!(
        verdict(agent_over(vec![time_now("time", "now", schema.clone())])),
        None,
        "the same tool, listed again"
    );
    let cases = [
        (agent_over(Vec::new()), "is gone"),
        (
            agent_over(vec![time_now(
                "time",
                "now",
                json!({"type": "object", "required": ["tz"]}),
            )]),
            "has a new schema",
        ),
        (
            agent_over(vec![time_now("evil", "now", schema.clone())]),
            "is now another tool",
        ),
        (
            agent_over(vec![time_now("time", "later", schema.clone())]),
            "is now another tool",
        ),
    ];
    for (now, change) in cases {
        let refused = verdict(now).unwrap();
        assert!(
            refused.contains(change) && refused.contains("tool_search"),
            "{refused}"
        );
    }
    // A tool that appeared after the model call was never offered to the model.
    let empty = agent_over(Vec::new());
    let refused = stale_call(&empty, &saw, &call).unwrap().content;
    assert!(refused.contains("was not offered"), "{refused}");
    assert!(
        stale_call(&empty, &empty, &call).is_none(),
        "unknown is the layers' to answer"
    );
}

#[tokio::test]
async fn an_interrupted_subagent_has_still_been_paid_for() {
    // Its first call (with usage) asks for a tool; its second never answers.
    let first = calls(&[("u", "no_such_tool", json!({}))]);
    let agent = delegating_agent("work", Arc::new(Silent::after(first)));
    let cancel = CancellationToken::new();
    // Cancelled when the subagent starts its second model call, which never answers.
    let emit = |e: Event| {
        if matches!(&e, Event::Subagent { event, .. }
            if matches!(event.as_ref(), Event::TurnStarted { turn: 2 }))
        {
            cancel.cancel();
        }
    };
    let mut thread = Thread::default();
    let result = agent
        .run(&mut thread, "go".into(), &NoSink, &emit, &cancel)
        .await;
    assert_eq!(result.status, RunStatus::Interrupted);
    // The parent's one call (10 in, 2 out) and the subagent's first (10 in, 2 out).
    assert_eq!(
        (result.usage.input_tokens, result.usage.output_tokens),
        (20, 4)
    );
    assert_eq!(thread.usage.input_tokens, 20);
}

/// Cancels the run as it starts (the user's Ctrl-C), then never ends, whatever the
/// cancellation says.
struct Stubborn(ToolInfo, CancellationToken);

impl Tool for Stubborn {
    fn info(&self) -> &ToolInfo {
        &self.0
    }
    fn call<'a>(&'a self, _: ToolContext<'a>, _: Value) -> ToolFuture<'a> {
        self.1.cancel();
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn a_call_the_interruption_ends_says_how_long_it_ran() {
    let cancel = CancellationToken::new();
    let stubborn: Arc<dyn Tool> = Arc::new(Stubborn(
        ToolInfo {
            name: "stubborn".into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
            source: ToolSource::BuiltIn,
            metadata: Map::new(),
            parallel: false,
        },
        cancel.clone(),
    ));
    let agent = builtin_agent(
        vec![stubborn],
        Scripted::new(vec![calls(&[("s", "stubborn", json!({}))])]),
    );
    let events = Mutex::new(Vec::new());
    // The tool ignores the cancellation and is given up after the grace period.
    let emit = |e: Event| events.lock().unwrap().push(e);
    let mut thread = Thread::default();
    let result = agent
        .run(&mut thread, "go".into(), &NoSink, &emit, &cancel)
        .await;
    assert_eq!(result.status, RunStatus::Interrupted);
    let ran = events
        .into_inner()
        .unwrap()
        .into_iter()
        .find_map(|e| match e {
            Event::ToolCallFinished { duration_ms, .. } => Some(duration_ms),
            _ => None,
        })
        .unwrap();
    assert!(
        u128::from(ran) >= CANCEL_GRACE.as_millis(),
        "it ran the grace period at least: {ran} ms"
    );
}

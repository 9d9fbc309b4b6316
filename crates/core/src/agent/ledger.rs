//! Taking the context ledger of a run. While the run goes, only cheap facts are kept (what
//! each model call was given, by reference; which tools were promoted; where each result
//! is); tokens are counted once at the end, each message once. A run's ledger is
//! estimated (`deferred::estimate_tokens`, no tokenizer: loading o200k costs ~200 ms and
//! ~45 MB); the chat's `/context` counts the next call exactly.

use std::collections::HashMap;
use std::sync::Arc;

use super::runner::{Agent, Thread};
use crate::deferred::{DeferredSetup, TokenizerError, count_with, function_schema, schemas_with};
use crate::protocol::{
    CallTokens, CallTotals, Counting, Ledger, Message, ServerTokens, ToolTokens,
};
use crate::tools::{Tool, ToolSource};

/// The ledger's entry for calls of tools that do not exist.
pub(crate) const UNKNOWN_TOOLS: &str = "(unknown tools)";

/// Whether a run's ledger is taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LedgerMode {
    /// At the end of every run.
    #[default]
    Always,
    /// Never (a subagent: its parent's ledger counts its result).
    Never,
}

/// What one model call was given.
struct CallRecord {
    turn: u32,
    /// Index into `systems`.
    system: usize,
    /// Index into `toolsets`.
    tools: usize,
    /// The history: its generation and how many messages of it.
    generation: usize,
    len: usize,
}

/// A tool result of the run: its tool and where its message is.
struct ResultRecord {
    name: String,
    generation: usize,
    index: usize,
}

/// The facts of one run's ledger, gathered as it goes.
#[derive(Default)]
pub(crate) struct LedgerRecorder {
    calls: Vec<CallRecord>,
    systems: Vec<String>,
    toolsets: Vec<Vec<Arc<dyn Tool>>>,
    /// Histories a summary replaced during the run, oldest first; generation `n` is
    /// `archived[n]`, and the current history is generation `archived.len()`.
    archived: Vec<Vec<Message>>,
    results: Vec<ResultRecord>,
    /// Each promotion, in order, with the tool's schema at the time.
    promoted: Vec<(String, Arc<dyn Tool>)>,
}

impl LedgerRecorder {
    /// A model call is about to be sent with this system prompt, these tools and the first
    /// `history_len` messages of the current history.
    pub(crate) fn call(
        &mut self,
        turn: u32,
        system: &str,
        tools: &[Arc<dyn Tool>],
        history_len: usize,
    ) {
        if self.systems.last().is_none_or(|s| s != system) {
            self.systems.push(system.to_string());
        }
        let same = self.toolsets.last().is_some_and(|last| {
            last.len() == tools.len() && last.iter().zip(tools).all(|(a, b)| Arc::ptr_eq(a, b))
        });
        if !same {
            self.toolsets.push(tools.to_vec());
        }
        self.calls.push(CallRecord {
            turn,
            system: self.systems.len() - 1,
            tools: self.toolsets.len() - 1,
            generation: self.archived.len(),
            len: history_len,
        });
    }

    /// The history is about to be replaced (a summary): keep it for the calls it served.
    pub(crate) fn archive(&mut self, history: &[Message]) {
        self.archived.push(history.to_vec());
    }

    /// The result of a call of `name` is message `index` of the current history.
    pub(crate) fn result(&mut self, name: &str, index: usize) {
        self.results.push(ResultRecord {
            name: name.to_string(),
            generation: self.archived.len(),
            index,
        });
    }

    /// These tools were just promoted.
    pub(crate) fn promoted(&mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) {
        self.promoted
            .extend(tools.into_iter().map(|t| (t.info().name.clone(), t)));
    }

    /// The run's ledger, with `current` the history now and `deferred` the tools the run
    /// ended with (for the listing), its tokens counted as `counting` says.
    pub(crate) fn ledger(
        &self,
        current: &[Message],
        deferred: &DeferredSetup,
        counting: Counting,
    ) -> Result<Ledger, TokenizerError> {
        let count = |text: &str| counted(counting, text);
        let mut counter = Counter {
            counting,
            ..Counter::default()
        };
        let history = |generation: usize| -> &[Message] {
            self.archived.get(generation).map_or(current, Vec::as_slice)
        };
        let (mut ledger, lines) = listing(deferred, counting)?;
        ledger.runs = 1;
        ledger.counted = counting;
        let systems = self
            .systems
            .iter()
            .map(|s| count(s))
            .collect::<Result<Vec<_>, _>>()?;
        let toolsets = self
            .toolsets
            .iter()
            .map(|tools| tools_tokens(tools, counting))
            .collect::<Result<Vec<_>, _>>()?;
        for call in &self.calls {
            let (history, results) =
                counter.prefix(call.generation, history(call.generation), call.len)?;
            ledger.calls.push(CallTokens {
                turn: call.turn,
                system: systems[call.system],
                tools: toolsets[call.tools],
                history,
                results,
            });
        }
        ledger.totals = totals(&ledger.calls);
        for (name, tool) in &self.promoted {
            let schema = counter.schema(tool.as_ref())?;
            let entry = entry(&mut ledger, name, server_of(&tool.info().source));
            entry.promoted += 1;
            entry.schema_tokens = schema;
        }
        for result in &self.results {
            let Some(message) = history(result.generation).get(result.index) else {
                continue;
            };
            let tokens = count(message_text(message).0)?;
            // A name the model made up is one entry for all of them: the thread's ledger
            // must not grow with whatever it invents.
            let (name, server) = match deferred.tool(&result.name) {
                Some(tool) => (
                    result.name.as_str(),
                    server_of(&tool.info().source).map(str::to_string),
                ),
                None => (UNKNOWN_TOOLS, None),
            };
            let entry = entry(&mut ledger, name, server.as_deref());
            entry.calls += 1;
            entry.result_tokens += tokens;
        }
        for tool in &mut ledger.tools {
            if let Some(tokens) = lines.get(&tool.name) {
                tool.listed = true;
                tool.listed_tokens = *tokens;
            }
        }
        roll_up(&mut ledger);
        Ok(ledger)
    }
}

/// What the next model call of `thread` would be sent, as a one-call ledger (with the
/// listing), counted with o200k: the layers prepare the call on copies, so nothing
/// changes.
pub(crate) fn next_call(agent: &Agent, thread: &Thread) -> Result<Ledger, TokenizerError> {
    let mut state = thread.state.clone();
    let mut messages = thread.messages.clone();
    let (tools, _) =
        agent
            .chain
            .prepare_model_call(&mut state, &mut messages, agent.deferred.bound.clone());
    let mut recorder = LedgerRecorder::default();
    recorder.call(0, &agent.system_prompt, &tools, messages.len());
    recorder.ledger(&messages, &agent.deferred, Counting::O200k)
}

/// The first model call of a new thread with this system prompt: the bound tools, no
/// history; counted with o200k.
pub(crate) fn first_call(system: &str, deferred: &DeferredSetup) -> Result<Ledger, TokenizerError> {
    let mut recorder = LedgerRecorder::default();
    recorder.call(0, system, &deferred.bound, 0);
    recorder.ledger(&[], deferred, Counting::O200k)
}

/// Token counts of messages, per history generation, each message counted once.
#[derive(Default)]
struct Counter {
    counting: Counting,
    /// (history tokens, result tokens) of each message, per generation.
    messages: HashMap<usize, Vec<(u64, u64)>>,
    schemas: HashMap<String, u64>,
}

impl Counter {
    /// The history and result tokens of the first `len` messages of `history`.
    fn prefix(
        &mut self,
        generation: usize,
        history: &[Message],
        len: usize,
    ) -> Result<(u64, u64), TokenizerError> {
        let counts = self.messages.entry(generation).or_default();
        let len = len.min(history.len());
        for message in &history[counts.len().min(len)..len] {
            let (text, is_result) = message_text(message);
            let counting = self.counting;
            let mut tokens = counted(counting, text)?;
            if let Message::Assistant { tool_calls, .. } = message {
                for call in tool_calls {
                    tokens += counted(counting, &call.name)? + counted(counting, &call.arguments)?;
                }
            }
            counts.push(if is_result { (0, tokens) } else { (tokens, 0) });
        }
        Ok(counts[..len]
            .iter()
            .fold((0, 0), |(h, r), (mh, mr)| (h + mh, r + mr)))
    }

    /// A tool's schema tokens, as bound.
    fn schema(&mut self, tool: &dyn Tool) -> Result<u64, TokenizerError> {
        let name = &tool.info().name;
        if let Some(tokens) = self.schemas.get(name) {
            return Ok(*tokens);
        }
        let tokens = counted(self.counting, &function_schema(tool.info()).to_string())?;
        self.schemas.insert(name.clone(), tokens);
        Ok(tokens)
    }
}

/// A message's text as sent, and whether it is a tool result.
fn message_text(message: &Message) -> (&str, bool) {
    match message {
        Message::User { content }
        | Message::Assistant { content, .. }
        | Message::Summary { content }
        | Message::Images { content, .. } => (content, false),
        Message::Tool { content, .. } => (content, true),
    }
}

fn counted(counting: Counting, text: &str) -> Result<u64, TokenizerError> {
    Ok(count_with(counting, text)? as u64)
}

/// The tools array as a provider receives it (none at all when empty).
fn tools_tokens(tools: &[Arc<dyn Tool>], counting: Counting) -> Result<u64, TokenizerError> {
    if tools.is_empty() {
        return Ok(0);
    }
    Ok(schemas_with(counting, tools.iter().map(|t| t.info()))? as u64)
}

fn totals(calls: &[CallTokens]) -> CallTotals {
    calls.iter().fold(CallTotals::default(), |t, c| CallTotals {
        calls: t.calls + 1,
        system: t.system + c.system,
        tools: t.tools + c.tools,
        history: t.history + c.history,
        results: t.results + c.results,
    })
}

/// The listing's part: its tokens and each server's share with its deferred tools; and
/// the tokens of each tool's own line, when tools are listed by name.
fn listing(
    deferred: &DeferredSetup,
    counting: Counting,
) -> Result<(Ledger, HashMap<String, u64>), TokenizerError> {
    let count = |text: &str| counted(counting, text);
    let mut ledger = Ledger {
        listing_tokens: count(&deferred.prompt_section())?,
        skills_listing_tokens: count(deferred.skills_section())?,
        ..Ledger::default()
    };
    let mut tools = HashMap::new();
    let Some(catalog) = &deferred.catalog else {
        return Ok((ledger, tools));
    };
    for info in catalog.infos() {
        let server = server_of(&info.source).unwrap_or_default();
        match ledger.servers.iter_mut().find(|s| s.name == server) {
            Some(entry) => entry.deferred_tools += 1,
            None => ledger.servers.push(ServerTokens {
                name: server.to_string(),
                deferred_tools: 1,
                ..ServerTokens::default()
            }),
        }
    }
    for line in deferred.listed_lines() {
        let tokens = count(&line.text)?;
        if let Some(entry) = ledger.servers.iter_mut().find(|s| s.name == line.server) {
            entry.listed_tokens += tokens;
        }
        if let Some(tool) = &line.tool {
            tools.insert(tool.clone(), tokens);
        }
    }
    Ok((ledger, tools))
}

fn server_of(source: &ToolSource) -> Option<&str> {
    match source {
        ToolSource::Mcp { server, .. } => Some(server),
        _ => None,
    }
}

/// The ledger's entry for the tool `name` (of `server`), added when new.
fn entry<'a>(ledger: &'a mut Ledger, name: &str, server: Option<&str>) -> &'a mut ToolTokens {
    let position = match ledger.tools.iter().position(|t| t.name == name) {
        Some(position) => position,
        None => {
            ledger.tools.push(ToolTokens {
                name: name.to_string(),
                server: server.map(str::to_string),
                ..ToolTokens::default()
            });
            ledger.tools.len() - 1
        }
    };
    &mut ledger.tools[position]
}

/// The servers' sums of their tools' promotions and calls.
fn roll_up(ledger: &mut Ledger) {
    for tool in &mut ledger.tools {
        let Some(server) = &tool.server else { continue };
        if let Some(entry) = ledger.servers.iter_mut().find(|s| &s.name == server) {
            entry.promoted += tool.promoted;
            entry.schema_tokens += tool.promoted * tool.schema_tokens;
            entry.calls += tool.calls;
            entry.result_tokens += tool.result_tokens;
        }
    }
}

/// Adds a run's ledger to a thread's: sums, without the per-call list.
pub(crate) fn add_run(thread: &mut Ledger, run: &Ledger) {
    thread.runs += run.runs;
    // A sum with one estimated part is an estimate.
    if run.counted == Counting::Estimate {
        thread.counted = Counting::Estimate;
    }
    thread.runs_without_ledger += run.runs_without_ledger;
    let (t, r) = (&mut thread.totals, &run.totals);
    t.calls += r.calls;
    t.system += r.system;
    t.tools += r.tools;
    t.history += r.history;
    t.results += r.results;
    thread.listing_tokens = run.listing_tokens;
    thread.skills_listing_tokens = run.skills_listing_tokens;
    for server in &run.servers {
        match thread.servers.iter_mut().find(|s| s.name == server.name) {
            Some(entry) => {
                entry.deferred_tools = server.deferred_tools;
                entry.listed_tokens = server.listed_tokens;
                entry.promoted += server.promoted;
                entry.schema_tokens += server.schema_tokens;
                entry.calls += server.calls;
                entry.result_tokens += server.result_tokens;
            }
            None => thread.servers.push(server.clone()),
        }
    }
    for tool in &run.tools {
        match thread.tools.iter_mut().find(|t| t.name == tool.name) {
            Some(entry) => {
                entry.listed = tool.listed;
                entry.listed_tokens = tool.listed_tokens;
                entry.promoted += tool.promoted;
                // A run that did not promote it has no schema figure of its own.
                if tool.promoted > 0 {
                    entry.schema_tokens = tool.schema_tokens;
                }
                entry.calls += tool.calls;
                entry.result_tokens += tool.result_tokens;
            }
            None => thread.tools.push(tool.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ToolSearchConfig, ToolSearchMode};
    use crate::deferred::setup_deferred;
    use crate::deferred::testing::mcp_tools;
    use crate::protocol::ToolCall;
    use crate::tools::assemble_toolset;

    fn deferred() -> DeferredSetup {
        let tools = mcp_tools(&[("srv", "get", "gets a thing"), ("srv", "put", "puts it")]);
        let toolset = assemble_toolset(Vec::new(), Vec::new(), tools).0;
        let config = ToolSearchConfig {
            enabled: Some(ToolSearchMode::On),
            ..Default::default()
        };
        setup_deferred(&toolset, &config, None).unwrap()
    }

    /// Tokens as a run's ledger counts them.
    fn tokens(text: &str) -> u64 {
        crate::deferred::estimate_tokens(text) as u64
    }

    fn user(text: &str) -> Message {
        Message::User {
            content: text.into(),
        }
    }

    fn result(name: &str, text: &str) -> Message {
        Message::Tool {
            call_id: "c".into(),
            name: name.into(),
            content: text.into(),
            is_error: false,
        }
    }

    #[test]
    fn each_call_counts_the_history_it_was_sent_even_across_a_summary() {
        let deferred = deferred();
        let mut recorder = LedgerRecorder::default();
        let call = Message::Assistant {
            content: String::new(),
            reasoning: String::new(),
            tool_calls: vec![ToolCall {
                id: "c".into(),
                name: "srv_get".into(),
                arguments: r#"{"id": 7}"#.into(),
            }],
        };
        let mut history = vec![
            user("fetch the thing"),
            call,
            result("srv_get", "a long result text"),
        ];
        recorder.call(1, "system one", &deferred.bound, 1);
        recorder.promoted(deferred.tool("srv_get"));
        recorder.result("srv_get", 2);
        recorder.call(2, "system one", &deferred.bound, 3);
        recorder.archive(&history);
        history = vec![user("summary"), result("srv_get", "x")];
        recorder.result("srv_get", 1);
        recorder.call(3, "system two", &deferred.bound, 2);
        let ledger = recorder
            .ledger(&history, &deferred, Counting::Estimate)
            .unwrap();
        assert_eq!(ledger.counted, Counting::Estimate);

        let asked = tokens("fetch the thing");
        let called = tokens("srv_get") + tokens(r#"{"id": 7}"#);
        assert_eq!(ledger.calls.len(), 3);
        assert_eq!(
            (ledger.calls[0].history, ledger.calls[0].results),
            (asked, 0)
        );
        assert_eq!(
            ledger.calls[1].history,
            asked + called,
            "the archived history"
        );
        assert_eq!(ledger.calls[1].results, tokens("a long result text"));
        assert_eq!(
            (ledger.calls[2].history, ledger.calls[2].results),
            (tokens("summary"), tokens("x"))
        );
        assert_eq!(ledger.calls[2].system, tokens("system two"));
        assert_eq!(ledger.totals.calls, 3);
        assert_eq!(
            ledger.totals.results,
            tokens("a long result text") + tokens("x")
        );

        let get = ledger.tools.iter().find(|t| t.name == "srv_get").unwrap();
        assert_eq!((get.promoted, get.calls), (1, 2));
        assert!(get.listed && get.listed_tokens == tokens("srv_get"));
        assert_eq!(
            get.result_tokens,
            tokens("a long result text") + tokens("x")
        );
        let schema = tokens(&function_schema(deferred.tool("srv_get").unwrap().info()).to_string());
        assert_eq!(get.schema_tokens, schema);
        let server = &ledger.servers[0];
        assert_eq!((server.name.as_str(), server.deferred_tools), ("srv", 2));
        assert_eq!(server.listed_tokens, tokens("srv_get") + tokens("srv_put"));
        assert_eq!(
            (server.promoted, server.schema_tokens, server.calls),
            (1, schema, 2)
        );
        assert_eq!(ledger.listing_tokens, tokens(&deferred.prompt_section()));
    }

    #[test]
    fn a_threads_ledger_sums_its_runs() {
        let deferred = deferred();
        let run = |promote: bool| {
            let mut recorder = LedgerRecorder::default();
            recorder.call(1, "s", &deferred.bound, 1);
            if promote {
                recorder.promoted(deferred.tool("srv_put"));
            }
            recorder.result("srv_put", 1);
            recorder
                .ledger(
                    &[user("u"), result("srv_put", "done")],
                    &deferred,
                    Counting::Estimate,
                )
                .unwrap()
        };
        let mut thread = Ledger::default();
        add_run(&mut thread, &run(true));
        add_run(&mut thread, &run(false));
        assert_eq!((thread.runs, thread.totals.calls), (2, 2));
        let put = &thread.tools[0];
        assert_eq!((put.promoted, put.calls), (1, 2));
        assert!(
            put.schema_tokens > 0,
            "a run without the promotion keeps the schema figure"
        );

        // Names the model makes up share one entry.
        let mut recorder = LedgerRecorder::default();
        let results: Vec<Message> = (0..3)
            .map(|i| result(&format!("made_up_{i}"), "x"))
            .collect();
        for i in 0..3 {
            recorder.result(&format!("made_up_{i}"), i);
        }
        let ledger = recorder
            .ledger(&results, &deferred, Counting::Estimate)
            .unwrap();
        assert_eq!(ledger.tools.len(), 1);
        assert_eq!(
            (ledger.tools[0].name.as_str(), ledger.tools[0].calls),
            (UNKNOWN_TOOLS, 3)
        );
        assert_eq!(thread.servers[0].calls, 2);
        assert!(thread.calls.is_empty());
    }
}

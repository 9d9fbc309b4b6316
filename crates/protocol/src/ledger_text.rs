//! The context ledger as text: `antler threads show ID --ledger` and the chat's `/context`
//! dialog. Plain text over protocol types, so the TUI can use it too.

use antler_base::table::table;
use antler_base::text::printable;

use crate::{CallTokens, CallTotals, Counting, Ledger, ServerTokens, ToolTokens};

/// The lines of a ledger view: the next model call (when known), the thread's totals,
/// then the servers and tools, the biggest consumers first.
pub fn ledger_lines(thread: &Ledger, next: Option<&Ledger>) -> Vec<String> {
    let mut lines = vec![String::from(
        "Context ledger (tokens of what is sent; message framing not counted)",
    )];
    if let Some(call) = next.and_then(|n| n.calls.first()) {
        let listing = next.map_or((0, 0), |n| (n.listing_tokens, n.skills_listing_tokens));
        lines.push(String::new());
        let how = next.map_or(Counting::O200k, |n| n.counted).as_str();
        lines.push(format!(
            "Next model call ({how}): {}",
            thousands(call.total())
        ));
        lines.push(format!("  {}", parts(call, listing)));
    }
    lines.push(String::new());
    let totals = &thread.totals;
    let mean = match totals.calls {
        0 => String::new(),
        calls => format!(", {} per call", thousands(sum(totals) / calls)),
    };
    let how = match thread.counted {
        Counting::O200k => "",
        Counting::Estimate => " (estimated)",
    };
    lines.push(format!(
        "This thread: {} {}, {} model {}, {} prompt tokens{mean}{how}",
        thread.runs,
        plural(thread.runs, "run"),
        totals.calls,
        plural(totals.calls, "call"),
        thousands(sum(totals))
    ));
    if totals.calls > 0 {
        lines.push(format!(
            "  system {} · tools {} · history {} · results {}",
            thousands(totals.system),
            thousands(totals.tools),
            thousands(totals.history),
            thousands(totals.results),
        ));
    }
    if thread.runs_without_ledger > 0 {
        lines.push(format!(
            "  ({} {} not counted: their ledger was not taken)",
            thread.runs_without_ledger,
            plural(thread.runs_without_ledger, "run")
        ));
    }
    // A thread with no runs yet still shows what its listing costs.
    let servers = if thread.servers.is_empty() {
        next.map_or(&thread.servers, |n| &n.servers)
    } else {
        &thread.servers
    };
    let calls = totals.calls.max(1);
    if !servers.is_empty() {
        lines.push(String::new());
        lines.extend(servers_table(servers, calls).lines().map(str::to_string));
    }
    if !thread.tools.is_empty() {
        lines.push(String::new());
        lines.extend(tools_table(&thread.tools).lines().map(str::to_string));
    }
    lines
}

fn parts(call: &CallTokens, (listing, skills): (u64, u64)) -> String {
    let skills = match skills {
        0 => String::new(),
        n => format!(", skills {}", thousands(n)),
    };
    format!(
        "system {} (listing {}{skills}) · tools {} · history {} · results {}",
        thousands(call.system),
        thousands(listing),
        thousands(call.tools),
        thousands(call.history),
        thousands(call.results)
    )
}

fn sum(t: &CallTotals) -> u64 {
    t.system + t.tools + t.history + t.results
}

/// Servers by what they cost over `calls` model calls: the listing on each, the schemas
/// promoted, the results.
fn servers_table(servers: &[ServerTokens], calls: u64) -> String {
    let cost = |s: &ServerTokens| s.listed_tokens * calls + s.schema_tokens + s.result_tokens;
    let mut sorted: Vec<&ServerTokens> = servers.iter().collect();
    sorted.sort_by(|a, b| cost(b).cmp(&cost(a)).then_with(|| a.name.cmp(&b.name)));
    let rows: Vec<Vec<String>> = sorted
        .iter()
        .map(|s| {
            vec![
                printable(&s.name),
                s.deferred_tools.to_string(),
                thousands(s.listed_tokens),
                s.promoted.to_string(),
                thousands(s.schema_tokens),
                s.calls.to_string(),
                thousands(s.result_tokens),
            ]
        })
        .collect();
    table(
        &[
            "SERVER",
            "DEFERRED",
            "LISTED/CALL",
            "PROMOTED",
            "SCHEMAS",
            "CALLS",
            "RESULTS",
        ],
        &rows,
    )
}

/// Tools by what they brought in: schemas promoted and results.
fn tools_table(tools: &[ToolTokens]) -> String {
    let cost = |t: &ToolTokens| t.promoted * t.schema_tokens + t.result_tokens;
    let mut sorted: Vec<&ToolTokens> = tools.iter().collect();
    sorted.sort_by(|a, b| cost(b).cmp(&cost(a)).then_with(|| a.name.cmp(&b.name)));
    let rows: Vec<Vec<String>> = sorted
        .iter()
        .map(|t| {
            vec![
                printable(&t.name),
                t.server
                    .as_deref()
                    .map_or_else(|| "-".to_string(), printable),
                if t.listed {
                    thousands(t.listed_tokens)
                } else {
                    "-".to_string()
                },
                t.promoted.to_string(),
                thousands(t.schema_tokens),
                t.calls.to_string(),
                thousands(t.result_tokens),
            ]
        })
        .collect();
    table(
        &[
            "TOOL", "SERVER", "LISTED", "PROMOTED", "SCHEMA", "CALLS", "RESULTS",
        ],
        &rows,
    )
}

fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// `12345` as `12,345`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger() -> Ledger {
        Ledger {
            runs: 2,
            runs_without_ledger: 1,
            totals: CallTotals {
                calls: 4,
                system: 4_000,
                tools: 800,
                history: 300,
                results: 1_500,
            },
            listing_tokens: 900,
            servers: vec![
                ServerTokens {
                    name: "small".into(),
                    deferred_tools: 2,
                    listed_tokens: 10,
                    ..Default::default()
                },
                ServerTokens {
                    name: "big\u{1b}[31m".into(),
                    deferred_tools: 40,
                    listed_tokens: 200,
                    promoted: 1,
                    schema_tokens: 120,
                    calls: 1,
                    result_tokens: 1_400,
                },
            ],
            tools: vec![
                ToolTokens {
                    name: "read_file".into(),
                    calls: 1,
                    result_tokens: 100,
                    ..Default::default()
                },
                ToolTokens {
                    name: "big_fetch".into(),
                    server: Some("big".into()),
                    listed: true,
                    listed_tokens: 4,
                    promoted: 1,
                    schema_tokens: 120,
                    calls: 1,
                    result_tokens: 1_400,
                },
            ],
            ..Default::default()
        }
    }

    #[test]
    fn the_biggest_consumers_come_first_and_names_are_escaped() {
        let text = ledger_lines(&ledger(), None).join("\n");
        assert!(
            text.contains("This thread: 2 runs, 4 model calls, 6,600 prompt tokens"),
            "{text}"
        );
        assert!(
            text.contains("6,600 prompt tokens, 1,650 per call"),
            "{text}"
        );
        assert!(text.contains("1 run not counted"), "{text}");
        assert!(!text.contains('\u{1b}'), "no raw escape: {text}");
        assert!(text.contains("big\\u{1b}[31m"), "{text}");
        let big = text.find("big\\u{1b}").unwrap();
        let small = text.find("small").unwrap();
        assert!(big < small, "servers by cost: {text}");
        let fetch = text.find("big_fetch").unwrap();
        let read = text.find("read_file").unwrap();
        assert!(fetch < read, "tools by cost: {text}");
    }

    #[test]
    fn the_next_call_is_shown_and_a_new_thread_shows_the_listing() {
        let next = Ledger {
            calls: vec![CallTokens {
                turn: 0,
                system: 1_200,
                tools: 300,
                history: 0,
                results: 0,
            }],
            listing_tokens: 900,
            servers: ledger().servers,
            ..Default::default()
        };
        let text = ledger_lines(&Ledger::default(), Some(&next)).join("\n");
        assert!(text.contains("Next model call (o200k): 1,500"), "{text}");
        assert!(text.contains("system 1,200 (listing 900)"), "{text}");
        assert!(
            text.contains("This thread: 0 runs, 0 model calls"),
            "{text}"
        );
        assert!(text.contains("SERVER") && text.contains("small"), "{text}");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }
}

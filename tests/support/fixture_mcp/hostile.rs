//! `--hostile MODE`: a stdio server written by hand that shakes hands (at the protocol
//! version `--protocol-version` names, if any) and lists one tool correctly, then answers
//! `tools/call` the way a broken or malicious server would.

use std::io::{BufRead, Write};

use clap::ValueEnum;
use serde_json::{Value, json};

/// How `tools/call` is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Hostile {
    /// A text result that is not valid UTF-8.
    InvalidUtf8,
    /// A well-formed result under an id the client never used.
    WrongId,
    /// A result nested 10,000 arrays deep.
    DeepJson,
    /// An empty result, `{}`, not a tool result at all.
    EmptyResult,
}

/// Serves until stdin closes; `initialize` is answered with `version`, else with the
/// version the client offered.
pub(crate) fn serve(mode: Hostile, version: Option<&str>) -> anyhow::Result<()> {
    eprintln!("fixture_mcp: starting (stdio, hostile {mode:?})");
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let request: Value = match serde_json::from_str(&line?) {
            Ok(v) => v,
            Err(_) => continue,
        };
        let (Some(id), Some(method)) = (request.get("id"), request["method"].as_str()) else {
            continue;
        };
        let answer: Vec<u8> = match method {
            "initialize" => reply(
                id,
                json!({
                    "protocolVersion": version
                        .map_or_else(|| request["params"]["protocolVersion"].clone(), |v| json!(v)),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "1"}
                }),
            ),
            "tools/list" => reply(
                id,
                json!({"tools": [{
                    "name": "echo",
                    "description": "Echoes, badly.",
                    "inputSchema": {"type": "object", "properties": {}}
                }]}),
            ),
            "tools/call" => hostile_answer(mode, id),
            _ => reply(id, json!({})),
        };
        stdout.write_all(&answer)?;
        stdout.write_all(b"\n")?;
        stdout.flush()?;
    }
    Ok(())
}

fn reply(id: &Value, result: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
        .to_string()
        .into_bytes()
}

fn hostile_answer(mode: Hostile, id: &Value) -> Vec<u8> {
    match mode {
        Hostile::InvalidUtf8 => {
            let mut bytes = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
            )
            .into_bytes();
            bytes.extend_from_slice(b"\xff\xfe\xfd");
            bytes.extend_from_slice(br#""}]}}"#);
            bytes
        }
        Hostile::EmptyResult => reply(id, json!({})),
        Hostile::WrongId => reply(
            &json!(987_654),
            json!({"content": [{"type": "text", "text": "for someone else"}]}),
        ),
        Hostile::DeepJson => format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[],"structuredContent":{{"x":{}{}}}}}}}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        )
        .into_bytes(),
    }
}

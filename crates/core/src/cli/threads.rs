//! `antler threads list|show`: reading the stored conversations and their context ledgers.

use super::error::CliError;
use super::output::{to_json, write_stdout};
use super::{Exit, ThreadsCommand};
use crate::config::EnvLookup;
use crate::protocol::ledger_text::ledger_lines;
use crate::store::{StoreError, ThreadStore, default_path};
use crate::ui::threads::{thread_transcript, threads_table};

/// Runs a `threads` subcommand.
pub(super) fn run(command: ThreadsCommand, env: EnvLookup<'_>) -> Exit {
    output(command, env)
        .map_err(CliError::from)
        .and_then(|text| write_stdout(&text))
        .map_or_else(CliError::report, |()| Exit::Success)
}

fn output(command: ThreadsCommand, env: EnvLookup<'_>) -> Result<String, StoreError> {
    let store = ThreadStore::open(&default_path(env)?)?;
    Ok(match command {
        ThreadsCommand::List(args) => {
            let threads = store.list(args.limit)?;
            if args.json {
                to_json(&threads)
            } else {
                threads_table(&threads)
            }
        }
        ThreadsCommand::Show(args) => {
            let thread = store.load(&args.id)?;
            let ledger = &thread.state.ledger;
            match (args.ledger, args.json) {
                (true, true) => to_json(ledger),
                (true, false) => ledger_lines(ledger, None).join("\n") + "\n",
                (false, true) => to_json(&thread),
                (false, false) => thread_transcript(&thread),
            }
        }
    })
}

//! `antler threads list|show`: reading the stored conversations.

use super::error::CliError;
use super::output::{to_json, write_stdout};
use super::{Exit, ThreadsCommand};
use crate::config::EnvLookup;
use crate::store::{StoreError, ThreadStore, default_path};
use crate::ui::threads::{thread_transcript, threads_table};

/// Runs a `threads` subcommand.
pub fn run(command: ThreadsCommand, env: EnvLookup<'_>) -> Exit {
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
            if args.json {
                to_json(&thread)
            } else {
                thread_transcript(&thread)
            }
        }
    })
}

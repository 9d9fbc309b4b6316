//! The transcript's model: its entries, their rendered lines kept per width, expanding and
//! collapsing. They are built from the core's events or stored messages in `apply` and
//! drawn by `entries` and `cards`.

use ratatui::text::Line;
use serde_json::Value;

use super::entries::render_entry;
use super::theme::Theme;
use antler_protocol::ToolRole;

/// One thing in the transcript.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Entry {
    /// What the user sent.
    User(String),
    /// The assistant's answer (markdown).
    Answer(Answer),
    /// The model's reasoning.
    Reasoning(Reasoning),
    /// A tool call.
    Tool(ToolCard),
    /// A change of the promoted working set without a `tool_search` call (routing).
    Promotion(Promotion),
    /// Something the user should know.
    Notice(String),
    /// Something that went wrong.
    Error(String),
    /// A note of the front-end's own (a summary happened, the model was switched).
    Info(String),
    /// Files the model presented.
    Files(Vec<String>),
    /// A question the model asked, with the answer given (none when skipped).
    Asked {
        /// What the model asked, as it asked it.
        question: String,
        /// The answer, when one was given.
        answer: Option<String>,
    },
}

/// The assistant's answer, possibly still streaming.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Answer {
    /// The text so far.
    pub text: String,
    /// More may come.
    pub streaming: bool,
}

/// Reasoning, dimmed and collapsed unless expanded.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Reasoning {
    /// The text so far.
    pub text: String,
    /// More may come.
    pub streaming: bool,
    /// Shown in full.
    pub expanded: bool,
}

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolStatus {
    /// Still running.
    Running,
    /// Returned.
    Ok,
    /// Failed (or interrupted).
    Failed,
    /// Unknown (a stored call without a stored result).
    Unknown,
}

/// One tool call's card.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCard {
    /// How the call's later events find the card (the newest with it).
    pub call_id: String,
    /// As the model called it.
    pub name: String,
    /// What the tool is.
    pub role: ToolRole,
    /// As the model sent them, shown pretty-printed when the card is open.
    pub arguments: Value,
    /// `Running` until `tool_call_finished`; a run that ends first fails it.
    pub status: ToolStatus,
    /// How long it ran, when known.
    pub duration_ms: Option<u64>,
    /// The finished call's `content`: what the model reads.
    pub result: String,
    /// Shown in full.
    pub expanded: bool,
    /// The promotions of its turn (`tool_search` cards).
    pub promotion: Option<Promotion>,
    /// A `task` card's subagent: its number and its own transcript.
    pub subagent: Option<(u64, Box<Transcript>)>,
    /// The last progress the tool reported while it ran.
    pub progress: Option<Box<str>>,
}

/// A change of the promoted working set.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Promotion {
    /// Names that became callable.
    pub added: Vec<String>,
    /// Names that lapsed.
    pub removed: Vec<String>,
    /// The size of the working set now (unknown for a stored thread's search).
    pub working_set: Option<usize>,
    /// The catalog they belong to.
    pub catalog_hash: Option<String>,
}

/// An entry with its rendered lines kept for the width they were made for.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Item {
    /// Whoever changes it drops `cache` too (see `Transcript::entry_mut`).
    pub(super) entry: Entry,
    /// Its lines at the width they were made for.
    pub(super) cache: Option<(usize, Vec<Line<'static>>)>,
}

/// The entries of one agent (a subagent has its own, inside its `task` card).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Transcript {
    /// The entries, oldest first.
    pub(super) items: Vec<Item>,
    /// Where the current turn's entries start (a retry voids what it streamed).
    pub(super) turn_start: usize,
}

impl Transcript {
    /// The entries, oldest first.
    pub(crate) fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.items.iter().map(|i| &i.entry)
    }

    /// Whether there is nothing to show.
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Removes every entry (`/clear`).
    pub(crate) fn clear(&mut self) {
        *self = Self::default();
    }

    /// Adds an entry at the end.
    pub(crate) fn push(&mut self, entry: Entry) {
        self.items.push(Item { entry, cache: None });
    }

    /// The entry at `index` for changing (its rendering is made again).
    pub(super) fn entry_mut(&mut self, index: usize) -> Option<&mut Entry> {
        let item = self.items.get_mut(index)?;
        item.cache = None;
        Some(&mut item.entry)
    }

    /// The lines of entry `index` at `width` (kept until it changes, unless animated).
    pub(crate) fn lines(
        &mut self,
        index: usize,
        width: usize,
        theme: &Theme,
        frame: usize,
    ) -> &[Line<'static>] {
        let Some(item) = self.items.get_mut(index) else {
            return &[];
        };
        let fresh = matches!(&item.cache, Some((w, _)) if *w == width) && !animated(&item.entry);
        if !fresh {
            item.cache = Some((width, render_entry(&item.entry, width, theme, frame)));
        }
        item.cache
            .as_ref()
            .map_or(&[], |(_, lines)| lines.as_slice())
    }

    /// Expands or collapses the card or reasoning at `index`; false if it has no details.
    pub(crate) fn toggle(&mut self, index: usize) -> bool {
        match self.entry_mut(index) {
            Some(Entry::Tool(card)) => card.expanded = !card.expanded,
            Some(Entry::Reasoning(r)) => r.expanded = !r.expanded,
            _ => return false,
        }
        true
    }

    /// Expands or collapses every card and reasoning.
    pub(crate) fn set_expanded(&mut self, expanded: bool) {
        for item in &mut self.items {
            match &mut item.entry {
                Entry::Tool(card) => card.expanded = expanded,
                Entry::Reasoning(r) => r.expanded = expanded,
                _ => continue,
            }
            item.cache = None;
        }
    }
}

impl ToolCard {
    /// A card for a call.
    pub(crate) fn new(
        call_id: String,
        name: String,
        role: ToolRole,
        arguments: Value,
        status: ToolStatus,
    ) -> Self {
        Self {
            call_id,
            name,
            role,
            arguments,
            status,
            duration_ms: None,
            result: String::new(),
            expanded: false,
            progress: None,
            promotion: None,
            subagent: None,
        }
    }
}

/// Whether an entry changes with the spinner (never kept rendered).
fn animated(entry: &Entry) -> bool {
    matches!(entry, Entry::Tool(card) if card.status == ToolStatus::Running)
}

/// `ms` for people: `340 ms`, `1.2 s`, `2m 03s`.
pub(crate) fn format_duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{}m {:02}s", ms / 60_000, ms % 60_000 / 1000)
    }
}

//! Thread state and its reducer.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::protocol::{ImagePart, Ledger};
use crate::tools::{PromotedUpdate, StateUpdate};

/// Deferred tools promoted into this thread, for one catalog.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Promoted {
    /// The catalog the names belong to; promotions for another catalog are ignored.
    pub catalog_hash: Option<String>,
    /// The promoted names, in promotion order (the order their schemas are bound in).
    pub names: Vec<String>,
}

/// Everything a thread remembers besides its messages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadState {
    /// The promoted deferred tools.
    pub promoted: Promoted,
    /// A logical clock for "recently used".
    clock: u64,
    /// When each promoted tool was last promoted or called.
    last_used: BTreeMap<String, u64>,
    /// Notes a layer attaches to a tool call's result, by call id, before the call runs
    /// (e.g. a loop warning); taken when the result comes back. Never stored.
    #[serde(skip)]
    pub call_notes: BTreeMap<String, String>,
    /// Workspace files presented as output (`present_files`), in order, without repeats.
    #[serde(default)]
    pub presented_files: Vec<String>,
    /// Images waiting to be attached to the next model call (`view_image`).
    #[serde(default)]
    pub pending_images: Vec<ImagePart>,
    /// MCP servers whose `instructions` the model has been shown in this thread.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub instructed_servers: BTreeSet<String>,
    /// Skills loaded in this thread, in order: their folders stay readable by the file
    /// tools.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded_skills: Vec<String>,
    /// Skills active in the running run (loaded in it, or named by the user with its
    /// message): their `allowed-tools` restrict what runs. Never stored.
    #[serde(skip)]
    pub active_skills: Vec<String>,
    /// The context ledger of the thread's runs so far (sums; no per-call list).
    #[serde(default, skip_serializing_if = "is_empty_ledger")]
    pub ledger: Ledger,
    /// Tool calls whose results promoted tools, by call id: the same call made before
    /// such a result may have a different outcome after it, so loop detection does not
    /// count it. Never stored (loops are counted within a run).
    #[serde(skip)]
    pub outcome_changes: BTreeMap<String, OutcomeChange>,
}

/// What a call's result changed for the calls made before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutcomeChange {
    /// These tools were promoted: a call to them may now run.
    Promoted(Vec<String>),
    /// The catalog changed: any call may now turn out differently.
    Catalog,
}

fn is_empty_ledger(ledger: &Ledger) -> bool {
    *ledger == Ledger::default()
}

/// The promotion reducer: a different or missing hash on either side replaces the set;
/// the same hash gives the ordered union (existing names first, new ones appended once).
pub fn reduce_promoted(current: &Promoted, update: &PromotedUpdate) -> Promoted {
    let same_catalog = current.catalog_hash.as_deref() == Some(update.catalog_hash.as_str());
    let mut names = if same_catalog {
        current.names.clone()
    } else {
        Vec::new()
    };
    for name in &update.names {
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    Promoted {
        catalog_hash: Some(update.catalog_hash.clone()),
        names,
    }
}

impl ThreadState {
    /// Merges a tool result's state update; no update leaves the state unchanged. Promoted
    /// names count as used now; presented files are added once; images queue for the next
    /// model call.
    pub fn apply(&mut self, update: Option<&StateUpdate>) {
        let Some(update) = update else { return };
        for file in &update.presented_files {
            if !self.presented_files.contains(file) {
                self.presented_files.push(file.clone());
            }
        }
        self.pending_images.extend(update.images.iter().cloned());
        for skill in &update.skills_loaded {
            self.skill_loaded(skill);
        }
        let Some(promoted) = update.promoted.as_ref() else {
            return;
        };
        self.promoted = reduce_promoted(&self.promoted, promoted);
        let names = &self.promoted.names;
        self.last_used.retain(|name, _| names.contains(name));
        for name in &promoted.names {
            self.touch(name);
        }
    }

    /// Records that the skill `name` was loaded: loaded in the thread, active in the run.
    pub fn skill_loaded(&mut self, name: &str) {
        if !self.loaded_skills.iter().any(|s| s == name) {
            self.loaded_skills.push(name.to_string());
        }
        if !self.active_skills.iter().any(|s| s == name) {
            self.active_skills.push(name.to_string());
        }
    }

    /// Records that `name` was used (called) now.
    pub fn touch(&mut self, name: &str) {
        self.clock += 1;
        self.last_used.insert(name.to_string(), self.clock);
    }

    /// Whether `name` is promoted for the catalog `hash`.
    pub fn is_promoted(&self, hash: &str, name: &str) -> bool {
        self.promoted.catalog_hash.as_deref() == Some(hash)
            && self.promoted.names.iter().any(|n| n == name)
    }

    /// Keeps at most `max` promoted tools: the least recently used (promoted or called)
    /// lapse first, ties going to the earliest promoted. Names in `keep` never lapse here
    /// (schemas just handed to the model must stay callable), even if that leaves more
    /// than `max`. Returns the lapsed names.
    pub fn evict_to(&mut self, max: usize, keep: &[String]) -> Vec<String> {
        let mut evicted = Vec::new();
        while self.promoted.names.len() > max {
            let oldest = self
                .promoted
                .names
                .iter()
                .enumerate()
                .filter(|(_, name)| !keep.contains(name))
                .min_by_key(|(i, name)| (self.last_used.get(*name).copied().unwrap_or(0), *i))
                .map(|(i, _)| i);
            let Some(i) = oldest else { break };
            let name = self.promoted.names.remove(i);
            self.last_used.remove(&name);
            evicted.push(name);
        }
        evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(hash: &str, names: &[&str]) -> StateUpdate {
        StateUpdate {
            promoted: Some(PromotedUpdate {
                catalog_hash: hash.into(),
                names: names.iter().map(|n| n.to_string()).collect(),
            }),
            ..Default::default()
        }
    }

    fn names(state: &ThreadState) -> Vec<&str> {
        state.promoted.names.iter().map(String::as_str).collect()
    }

    #[test]
    fn reducer_cases() {
        let mut s = ThreadState::default();
        s.apply(None);
        assert_eq!(s, ThreadState::default(), "no update: unchanged");

        s.apply(Some(&update("h1", &["a", "b", "a"])));
        assert_eq!(
            names(&s),
            ["a", "b"],
            "missing hash: replaced, deduplicated"
        );

        s.apply(Some(&update("h1", &[])));
        assert_eq!(names(&s), ["a", "b"], "empty update: unchanged names");

        s.apply(Some(&update("h1", &["c", "a"])));
        assert_eq!(names(&s), ["a", "b", "c"], "same hash: ordered union");

        s.apply(Some(&update("h2", &["z"])));
        assert_eq!(names(&s), ["z"], "hash change: replaced");
        assert_eq!(s.promoted.catalog_hash.as_deref(), Some("h2"));
        assert!(s.is_promoted("h2", "z"));
        assert!(!s.is_promoted("h1", "z"));
    }

    #[test]
    fn least_recently_used_lapse_first() {
        let mut s = ThreadState::default();
        s.apply(Some(&update("h", &["a", "b", "c"])));
        s.touch("a");
        s.apply(Some(&update("h", &["d"])));
        let evicted = s.evict_to(3, &[]);
        assert_eq!(evicted, ["b"], "b is the least recently used");
        assert_eq!(names(&s), ["a", "c", "d"], "promotion order is kept");
        let evicted = s.evict_to(1, &["c".to_string()]);
        assert_eq!(evicted, ["a", "d"], "kept names never lapse");
        assert_eq!(names(&s), ["c"]);
    }
}

//! The directory walk `glob` and `grep` share: ripgrep's, through the `ignore` crate.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ignore::{Walk, WalkBuilder};

use super::workspace::{Hidden, HiddenCount, Workspace};

/// How many secret folders a walk did not enter.
#[derive(Debug, Default)]
pub(super) struct Pruned {
    secret: AtomicUsize,
}

impl Pruned {
    /// Adds the pruned folders to `count`.
    pub(super) fn add_to(&self, count: &mut HiddenCount) {
        for _ in 0..self.secret.load(Ordering::Relaxed) {
            count.add(Hidden::Secret);
        }
    }
}

/// Walks `base` as ripgrep would, with fixed choices so that results do not depend on the
/// user's setup: `.gitignore`, `.ignore` and `.git/info/exclude` are respected even outside
/// a git repository, the global git excludes are not read, hidden files are included but
/// `.git` is skipped, symlinks are not followed, and entries come sorted by path. Folders
/// that are secret or antler's own are not entered (counted in `pruned`); files still come
/// through, for the caller to check with [`Workspace::hidden`].
pub(super) fn walk(base: &Path, workspace: &Workspace, pruned: &Arc<Pruned>) -> Walk {
    let workspace = workspace.clone();
    let pruned = pruned.clone();
    WalkBuilder::new(base)
        .hidden(false)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |entry| {
            if entry.file_name() == ".git" {
                return false;
            }
            if entry.depth() == 0 || !entry.file_type().is_some_and(|t| t.is_dir()) {
                return true;
            }
            match workspace.hidden(entry.path()) {
                None => true,
                Some(Hidden::Secret) => {
                    pruned.secret.fetch_add(1, Ordering::Relaxed);
                    false
                }
                Some(Hidden::Private) => false,
            }
        })
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
}

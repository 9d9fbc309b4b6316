//! The directory walk `glob` and `grep` share: ripgrep's, through the `ignore` crate.

use std::path::Path;

use ignore::{Walk, WalkBuilder};

/// Walks `base` as ripgrep would, with fixed choices so that results do not depend on the
/// user's setup: `.gitignore`, `.ignore` and `.git/info/exclude` are respected even outside
/// a git repository, the global git excludes are not read, hidden files are included but
/// `.git` is skipped, symlinks are not followed, and entries come sorted by path.
pub(super) fn walk(base: &Path) -> Walk {
    WalkBuilder::new(base)
        .hidden(false)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
}

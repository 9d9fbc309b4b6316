//! The module graph as docs/ARCHITECTURE.md draws it, kept by a test: every `crate::` path
//! in the core's non-test code is an edge from the top-level module it is written in to
//! the one it names (`protocol` is the `antler-protocol` crate, which the core re-exports;
//! the crates' own graph is Cargo's, and a test here checks which antler crates the chat
//! screen and the search may use). An edge that is not in [`FLOORS`] fails (a new
//! dependency is a design decision: add it here and to ARCHITECTURE.md, or move the code),
//! and so does a listed edge that no longer exists (the list stays true). The floors admit
//! no cycle: a module may only use modules on lower floors.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The library's top-level modules, bottom floor first, each with the modules it uses.
const FLOORS: &[(&str, &[&str])] = &[
    // The bottom floor: helpers (the vocabulary is the `antler-protocol` crate).
    ("base", &[]),
    ("config", &["base"]),
    // What the agent is made of.
    ("tools", &["base", "config"]),
    ("provider", &["base", "config"]),
    ("permissions", &["base", "config", "tools"]),
    ("deferred", &["base", "config", "tools"]),
    ("hooks", &["base", "config", "permissions", "tools"]),
    (
        "skills",
        &["base", "config", "deferred", "permissions", "tools"],
    ),
    (
        "agent",
        &[
            "base",
            "config",
            "deferred",
            "hooks",
            "permissions",
            "provider",
            "skills",
            "tools",
        ],
    ),
    ("trust", &["base", "config", "hooks", "skills"]),
    ("mcp", &["base", "config", "tools", "trust"]),
    ("store", &["agent", "base", "config"]),
    // Assembly, the session, the front-ends.
    (
        "setup",
        &[
            "agent", "base", "config", "deferred", "hooks", "mcp", "provider", "skills", "tools",
            "trust",
        ],
    ),
    (
        "session",
        &[
            "agent",
            "base",
            "config",
            "deferred",
            "hooks",
            "mcp",
            "permissions",
            "provider",
            "setup",
            "skills",
            "store",
            "tools",
        ],
    ),
    ("ui", &["base", "deferred", "skills", "store", "tools"]),
    (
        "cli",
        &[
            "base", "config", "deferred", "mcp", "provider", "session", "setup", "skills", "store",
            "tools", "trust", "ui",
        ],
    ),
];

/// The antler crates the chat's screen may depend on: the vocabulary and the bottom floor,
/// never the core.
const TUI_USES: &[&str] = &["antler-base", "antler-protocol"];

/// The antler crates the search may depend on: the bottom floor only, so it knows nothing
/// of tools, skills, catalogs or the config.
const SEARCH_USES: &[&str] = &["antler-base"];

#[test]
fn the_module_graph_is_the_documented_one() {
    let found = edges();
    let floors: BTreeMap<&str, BTreeSet<&str>> = FLOORS
        .iter()
        .map(|(module, uses)| (*module, uses.iter().copied().collect()))
        .collect();
    let modules: BTreeSet<String> = top_level_modules();
    let listed: BTreeSet<String> = floors.keys().map(|m| m.to_string()).collect();
    assert_eq!(modules, listed, "every top-level module has a floor");

    let mut problems = Vec::new();
    for (from, uses) in &found {
        for (to, files) in uses {
            if !floors[from.as_str()].contains(to.as_str()) {
                problems.push(format!("new edge {from} -> {to} (in {files:?})"));
            }
        }
    }
    for (from, uses) in &floors {
        for to in uses {
            if !found.get(*from).is_some_and(|u| u.contains_key(*to)) {
                problems.push(format!("listed edge {from} -> {to} is gone: drop it"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_floors_admit_no_cycle() {
    let mut below = BTreeSet::new();
    for (module, uses) in FLOORS {
        for used in *uses {
            assert!(
                below.contains(used),
                "{module} uses {used}, which is not on a lower floor"
            );
        }
        below.insert(*module);
    }
}

#[test]
fn the_chat_screen_knows_only_the_protocol_and_the_search_only_the_floor() {
    assert_eq!(
        antler_uses("tui"),
        TUI_USES,
        "the TUI crate's antler dependencies"
    );
    assert_eq!(
        antler_uses("search"),
        SEARCH_USES,
        "the search crate's antler dependencies"
    );
    let core = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/Cargo.toml"),
    )
    .unwrap();
    assert!(
        !core.contains("antler-tui"),
        "the core does not depend on the screen"
    );
}

#[test]
fn the_reader_sees_paths_in_groups_and_skips_tests() {
    let code = "use crate::{a::{b, c}, d};\n// crate::e\nfn f() { crate::g::h(); }\n\
                #[cfg(test)]\nuse crate::i;\n#[cfg(test)]\nmod tests {\n use crate::j;\n}\n";
    let paths = crate_paths(&code_of_text(code));
    assert_eq!(paths, ["a::b", "a::c", "d", "g::h"]);
}

/// The antler crates `crates/<name>/Cargo.toml` names, dev-dependencies too.
fn antler_uses(name: &str) -> Vec<String> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("crates/{name}/Cargo.toml"));
    std::fs::read_to_string(manifest)
        .unwrap()
        .lines()
        .filter_map(|line| {
            line.split_once(" = ")
                .map(|(name, _)| name.trim().to_string())
        })
        .filter(|name| name.starts_with("antler"))
        .collect()
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/src")
}

fn top_level_modules() -> BTreeSet<String> {
    std::fs::read_dir(src())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| {
            let name = path.file_stem()?.to_str()?.to_string();
            let module = path.is_dir() || path.extension().is_some_and(|e| e == "rs");
            (module && name != "lib" && name != "main").then_some(name)
        })
        .collect()
}

/// Edges between top-level modules: from → to → the files that use it.
fn edges() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let modules = top_level_modules();
    let mut found: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in rust_files(&src()) {
        let relative = file.strip_prefix(src()).unwrap();
        let from = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        if from == "lib" || from == "main" {
            continue;
        }
        for path in crate_paths(&code_of(&file)) {
            let to = path.split("::").next().unwrap().to_string();
            if to != from && modules.contains(&to) {
                found
                    .entry(from.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .insert(relative.display().to_string());
            }
        }
    }
    found
}

/// The library's source files, without the files that are only test code.
fn rust_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            if path.is_dir() {
                folders.push(path);
            } else if name.ends_with(".rs") && !is_test_file(&name) {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn is_test_file(name: &str) -> bool {
    matches!(name, "tests.rs" | "testing.rs")
        || name.ends_with("_tests.rs")
        || name.ends_with("_snapshots.rs")
}

fn code_of(file: &Path) -> String {
    code_of_text(&std::fs::read_to_string(file).unwrap())
}

/// The code of a file without comments and test code: a `#[cfg(test)] mod … {` ends it
/// (test modules come last), and any other `#[cfg(test)]` item of one line is skipped.
fn code_of_text(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed.starts_with("#[cfg(test)]") {
            let next = lines.peek().map(|l| l.trim()).unwrap_or("");
            if next.starts_with("mod ") && next.ends_with('{') {
                break;
            }
            lines.next();
            continue;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// Every `crate::` path in `code`, with `use crate::{a::{b, c}, d}` groups spelled out.
fn crate_paths(code: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let preceded = rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        rest = &rest[at + "crate::".len()..];
        if preceded {
            continue;
        }
        let (found, used) = path_tree(rest);
        paths.extend(found.into_iter().filter(|p| !p.is_empty()));
        rest = &rest[used..];
    }
    paths
}

/// The paths a use tree at the start of `text` names, and how many bytes it took.
fn path_tree(text: &str) -> (Vec<String>, usize) {
    let head: String = text
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    let mut used = head.len();
    let prefix = head.trim_end_matches(':');
    let group = head.is_empty() || head.ends_with("::");
    if !group || !text[used..].starts_with('{') {
        return (vec![prefix.to_string()], used);
    }
    used += 1;
    let mut paths = Vec::new();
    loop {
        let skipped = text[used..].len() - text[used..].trim_start().len();
        used += skipped;
        match text[used..].chars().next() {
            None => break,
            Some('}') => {
                used += 1;
                break;
            }
            Some(',') => used += 1,
            Some(_) => {
                let (inner, took) = path_tree(&text[used..]);
                paths.extend(inner.into_iter().map(|p| {
                    if prefix.is_empty() {
                        p
                    } else {
                        format!("{prefix}::{p}")
                    }
                }));
                used += took.max(1);
                // `as name` after a path.
                let after = &text[used..];
                if let Some(alias) = after.trim_start().strip_prefix("as ") {
                    let name: usize = alias
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .map(char::len_utf8)
                        .sum();
                    used += after.len() - alias.len() + name;
                }
            }
        }
    }
    (paths, used)
}

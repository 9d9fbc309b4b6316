//! Skill names as the Agent Skills format defines them: 1 to 64 lowercase letters, digits
//! and hyphens, no hyphen first, last or twice in a row, and the name of the skill's own
//! folder. A name that passes can never be a path (no `/`, no `.`), so a name the model
//! chooses only ever looks a skill up.

/// The Agent Skills format's limit.
pub(crate) const MAX_NAME_CHARS: usize = 64;

/// Why `name` is not a skill name; `None` when it is one.
pub(crate) fn problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.len() > MAX_NAME_CHARS {
        return Some("it is longer than 64 characters");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Some("it may hold only lowercase letters, digits and hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Some("it may not start or end with a hyphen");
    }
    if name.contains("--") {
        return Some("it may not hold two hyphens in a row");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_formats_rules() {
        for good in ["pdf", "web-artifacts-builder", "a1", &"x".repeat(64)] {
            assert!(problem(good).is_none(), "{good}");
        }
        for bad in [
            "",
            "PDF",
            "../etc",
            "a/b",
            "a.b",
            "-a",
            "a-",
            "a--b",
            "naïve",
            &"x".repeat(65),
        ] {
            assert!(problem(bad).is_some(), "{bad}");
        }
    }
}

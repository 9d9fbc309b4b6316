//! `antler skills list` and `show`: every skill found, usable or not and why, and one
//! skill whole.

use serde::Serialize;

use crate::base::text::printable;
use crate::deferred::estimate_tokens;
use crate::skills::listing::{SkillListing, clean_line};
use crate::skills::{Skill, SkillSet, SkillState};

/// One skill as listed.
#[derive(Debug, Serialize)]
pub(crate) struct SkillRow {
    pub name: String,
    /// Its description (one clean line).
    pub description: String,
    /// `project`, `user` or `path`.
    pub source: &'static str,
    /// Its SKILL.md.
    pub path: String,
    /// Not turned off.
    pub enabled: bool,
    /// Not a project skill, or one trusted in this content.
    pub trusted: bool,
    /// The SKILL.md of the skill of the same name that wins, if one does.
    pub shadowed: Option<String>,
    /// Why it is not used, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The estimated tokens of its line in the listing (0 when it is not listed).
    pub listing_tokens: usize,
}

/// What `skills list --json` prints.
#[derive(Debug, Serialize)]
pub(crate) struct SkillsReport {
    /// Every skill found.
    pub skills: Vec<SkillRow>,
    /// The skills skipped, each with its file, line, field and reason.
    pub errors: Vec<String>,
    /// The `<available-skills>` section's tokens.
    pub listing_tokens: usize,
    /// The most it may take: `skills.listing_budget_tokens`, else 2% of the context window (at
    /// most 2,000).
    pub listing_budget_tokens: usize,
}

/// The rows of `skills`.
pub(crate) fn rows(skills: &SkillSet) -> Vec<SkillRow> {
    skills
        .skills
        .iter()
        .map(|skill| {
            let (enabled, trusted, shadowed) = match &skill.state {
                SkillState::Usable => (true, true, None),
                SkillState::Disabled { .. } => (false, true, None),
                SkillState::Untrusted { .. } => (true, false, None),
                SkillState::Shadowed { by } => (true, true, Some(by.display().to_string())),
            };
            let reason = skill.reason();
            SkillRow {
                name: skill.name.clone(),
                description: clean_line(&skill.description),
                source: skill.source.label(),
                path: skill.file.display().to_string(),
                enabled,
                trusted,
                shadowed,
                reason,
                listing_tokens: if skill.usable() {
                    estimate_tokens(&format!(
                        "- {}: {}\n",
                        skill.name,
                        clean_line(&skill.description)
                    ))
                } else {
                    0
                },
            }
        })
        .collect()
}

/// The report for `--json`.
pub(crate) fn report(skills: &SkillSet, listing: &SkillListing, budget: usize) -> SkillsReport {
    SkillsReport {
        skills: rows(skills),
        errors: skills.errors.iter().map(ToString::to_string).collect(),
        listing_tokens: listing.tokens,
        listing_budget_tokens: budget,
    }
}

/// The table, then the listing's size, then the skills skipped.
pub(crate) fn table(report: &SkillsReport) -> String {
    let body: Vec<Vec<String>> = report
        .skills
        .iter()
        .map(|row| {
            let state = row.reason.clone().unwrap_or_else(|| String::from("usable"));
            vec![
                printable(&row.name),
                row.source.to_string(),
                state,
                row.listing_tokens.to_string(),
                printable(&row.path),
            ]
        })
        .collect();
    let mut out = if body.is_empty() {
        String::from("No skills found.\n")
    } else {
        crate::base::table::table(&["NAME", "SOURCE", "STATE", "TOKENS", "PATH"], &body)
    };
    out.push_str(&format!(
        "\nListing: about {} tokens (budget {}).\n",
        report.listing_tokens, report.listing_budget_tokens
    ));
    for error in &report.errors {
        out.push_str(&format!("skipped: {}\n", printable(error)));
    }
    out
}

/// One skill: its fields and its SKILL.md.
pub(crate) fn show(skill: &Skill, text: &str) -> String {
    let mut out = format!(
        "{}  ({} skill, {})\n{}\n",
        printable(&skill.name),
        skill.source.label(),
        skill.reason().unwrap_or_else(|| String::from("usable")),
        printable(&skill.file.display().to_string()),
    );
    if let Some(allowed) = &skill.allowed_tools {
        out.push_str(&format!("allowed-tools: {}\n", printable(allowed.text())));
    }
    if let Some(license) = &skill.license {
        out.push_str(&format!("license: {}\n", printable(license)));
    }
    if let Some(compatibility) = &skill.compatibility {
        out.push_str(&format!("compatibility: {}\n", printable(compatibility)));
    }
    for (key, value) in &skill.metadata {
        out.push_str(&format!(
            "metadata.{}: {}\n",
            printable(key),
            printable(&value.to_string())
        ));
    }
    for (key, value) in &skill.extra {
        out.push_str(&format!(
            "{} (not of the format): {}\n",
            printable(key),
            printable(&value.to_string())
        ));
    }
    if let Ok(files) = crate::skills::folder::entries(&skill.dir) {
        out.push_str(&format!("files: {}\n", files.len()));
        for file in files.iter().filter(|f| f.path.as_os_str() != "SKILL.md") {
            let mark = if file.executable { " (executable)" } else { "" };
            out.push_str(&format!(
                "  {}{mark}\n",
                printable(&file.path.to_string_lossy())
            ));
        }
    }
    out.push('\n');
    for (i, line) in text.lines().enumerate() {
        out.push_str(&format!("{:>4} │ {}\n", i + 1, printable(line)));
    }
    out
}

//! A SKILL.md's YAML frontmatter: read without reading the body (the body costs nothing
//! until the skill is loaded), then checked field by field so that every problem names the
//! file's line and the field.

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::Value;
use yaml_serde::Value as Yaml;

use super::SkillProblem;
use crate::config::{Segment, locate};

/// The most a SKILL.md may hold: past this it is not a set of instructions.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// The most the frontmatter may hold (a description is at most 1,024 characters).
pub(super) const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// The longest description the format allows.
pub(super) const MAX_DESCRIPTION_CHARS: usize = 1024;
/// The longest `compatibility` the format allows.
pub(super) const MAX_COMPATIBILITY_CHARS: usize = 500;
/// Reads are this small so that little past the frontmatter is read.
const CHUNK: usize = 256;

/// The frontmatter's fields, checked.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Frontmatter {
    pub name: String,
    pub description: String,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    /// `allowed-tools` as written: its items (a space-separated string or a list).
    pub allowed_tools: Option<Vec<String>>,
    /// `metadata`, as JSON.
    pub metadata: BTreeMap<String, Value>,
    /// Keys the format does not define, kept as they are (clients may add their own).
    pub extra: BTreeMap<String, Value>,
    /// Where the body starts, in bytes from the start of the file.
    pub body_offset: u64,
    /// How many bytes were read from the file.
    pub bytes_read: u64,
}

/// The frontmatter text and where the body starts, reading `source` in small pieces and
/// stopping at the closing `---`.
fn read_block(source: &mut impl Read) -> Result<(String, u64, u64), SkillProblem> {
    let mut bytes: Vec<u8> = Vec::with_capacity(CHUNK * 4);
    let mut chunk = [0u8; CHUNK];
    let mut scanned = 0;
    let mut lines = 0usize;
    let mut open: Option<usize> = None;
    loop {
        let n = source
            .read(&mut chunk)
            .map_err(|e| SkillProblem::at(None, None, format!("cannot be read: {e}")))?;
        bytes.extend_from_slice(&chunk[..n]);
        // Look at every complete line not seen yet.
        while let Some(end) = bytes[scanned..].iter().position(|&b| b == b'\n') {
            let line = &bytes[scanned..scanned + end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            lines += 1;
            let fence = line.trim_ascii_end() == b"---";
            match open {
                None => {
                    let line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
                    if line.trim_ascii_end() != b"---" {
                        return Err(SkillProblem::at(
                            Some(1),
                            None,
                            String::from(
                                "there is no frontmatter: the file must begin with a `---` line, \
                                 then `name:` and `description:`, then `---`",
                            ),
                        ));
                    }
                    open = Some(scanned + end + 1);
                }
                Some(start) if fence => {
                    let block = &bytes[start..scanned];
                    let text = std::str::from_utf8(block).map_err(|e| {
                        let line = 2 + block[..e.valid_up_to()]
                            .iter()
                            .filter(|&&b| b == b'\n')
                            .count();
                        SkillProblem::at(Some(line), None, String::from("is not UTF-8 text"))
                    })?;
                    let body = (scanned + end + 1) as u64;
                    return Ok((text.to_string(), body, bytes.len() as u64));
                }
                Some(_) => {}
            }
            scanned += end + 1;
        }
        if bytes.len() > MAX_FRONTMATTER_BYTES + 8 {
            return Err(SkillProblem::at(
                Some(1),
                None,
                format!(
                    "the frontmatter has no closing `---` within its first {} KiB",
                    MAX_FRONTMATTER_BYTES / 1024
                ),
            ));
        }
        if n == 0 {
            let why = if open.is_none() {
                "there is no frontmatter: the file is empty"
            } else {
                "the frontmatter is not closed: no `---` line follows it"
            };
            return Err(SkillProblem::at(Some(lines.max(1)), None, why.to_string()));
        }
    }
}

/// Reads and checks the frontmatter of `source`. `folder` is the name of the skill's
/// folder, which `name` must equal.
pub(super) fn read(source: &mut impl Read, folder: &str) -> Result<Frontmatter, SkillProblem> {
    let (text, body_offset, bytes_read) = read_block(source)?;
    let mut front = parse(&text, folder)?;
    front.body_offset = body_offset;
    front.bytes_read = bytes_read;
    Ok(front)
}

/// The line in the file of `key` in the frontmatter `text` (which starts on line 2).
fn line_of(text: &str, key: &str) -> Option<usize> {
    locate(text, &[Segment::Key(key.to_string())]).map(|p| p.line + 1)
}

/// Checks the frontmatter `text`.
fn parse(text: &str, folder: &str) -> Result<Frontmatter, SkillProblem> {
    let map = mapping(text)?;
    let fields = Fields { text, map: &map };
    let name = fields.name(folder)?;
    let description = fields.description()?;
    let compatibility = fields.string("compatibility")?;
    if let Some(c) = &compatibility
        && c.chars().count() > MAX_COMPATIBILITY_CHARS
    {
        return Err(fields.problem(
            "compatibility",
            format!("is longer than {MAX_COMPATIBILITY_CHARS} characters"),
        ));
    }
    let allowed_tools = fields.allowed_tools()?;
    let json = |value: &Yaml| serde_json::to_value(value).unwrap_or(Value::Null);
    let metadata = match map.get("metadata") {
        None | Some(Yaml::Null) => BTreeMap::new(),
        Some(Yaml::Mapping(m)) => m.iter().map(|(k, v)| (key_text(k), json(v))).collect(),
        Some(_) => return Err(fields.problem("metadata", String::from("expected a mapping"))),
    };
    const KNOWN: &[&str] = &[
        "name",
        "description",
        "license",
        "compatibility",
        "allowed-tools",
        "metadata",
    ];
    let extra = map
        .iter()
        .map(|(k, v)| (key_text(k), v))
        .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
        .map(|(k, v)| (k, json(v)))
        .collect();
    Ok(Frontmatter {
        name,
        description,
        license: fields.string("license")?,
        compatibility,
        allowed_tools,
        metadata,
        extra,
        body_offset: 0,
        bytes_read: 0,
    })
}

/// The frontmatter's text as a YAML mapping.
fn mapping(text: &str) -> Result<yaml_serde::Mapping, SkillProblem> {
    let tree: Yaml = yaml_serde::from_str(text).map_err(|err| {
        let line = err.location().map(|l| l.line() + 1);
        let message = err.to_string();
        let message = match message.find(" at line ") {
            Some(i) => message[..i].to_string(),
            None => message,
        };
        SkillProblem::at(
            line,
            None,
            format!("the frontmatter is not valid YAML: {message}"),
        )
    })?;
    let Yaml::Mapping(map) = tree else {
        return Err(SkillProblem::at(
            Some(2),
            None,
            String::from(
                "the frontmatter must be a mapping of keys such as `name:` and `description:`",
            ),
        ));
    };
    Ok(map)
}

/// The frontmatter's fields, read one by one; a problem names its key's line.
struct Fields<'a> {
    text: &'a str,
    map: &'a yaml_serde::Mapping,
}

impl Fields<'_> {
    fn problem(&self, key: &str, why: String) -> SkillProblem {
        SkillProblem::at(line_of(self.text, key), Some(key), why)
    }

    /// A scalar field as text (numbers and booleans too: YAML reads `version: 1.0` so).
    fn string(&self, key: &str) -> Result<Option<String>, SkillProblem> {
        match self.map.get(key) {
            None | Some(Yaml::Null) => Ok(None),
            Some(Yaml::String(s)) => Ok(Some(s.clone())),
            Some(Yaml::Number(n)) => Ok(Some(n.to_string())),
            Some(Yaml::Bool(b)) => Ok(Some(b.to_string())),
            Some(_) => Err(self.problem(key, String::from("expected a string"))),
        }
    }

    /// `name`: a skill name, and its folder's.
    fn name(&self, folder: &str) -> Result<String, SkillProblem> {
        let name = self.string("name")?.ok_or_else(|| {
            SkillProblem::at(
                Some(2),
                Some("name"),
                String::from("is missing (expected the skill's folder name)"),
            )
        })?;
        if let Some(why) = super::name::problem(&name) {
            return Err(self.problem(
                "name",
                format!(
                    "`{}` is not a skill name: {why}",
                    crate::base::text::quoted(&name)
                ),
            ));
        }
        if name != folder {
            return Err(self.problem(
                "name",
                format!(
                    "`{name}` is not the name of its folder `{}` (the format requires them to be equal)",
                    crate::base::text::quoted(folder)
                ),
            ));
        }
        Ok(name)
    }

    /// `description`: present, not empty, not too long.
    fn description(&self) -> Result<String, SkillProblem> {
        let description = self
            .string("description")?
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
            .ok_or_else(|| {
                SkillProblem::at(
                    line_of(self.text, "description").or(Some(2)),
                    Some("description"),
                    String::from(
                        "is missing or empty (expected what the skill does and when to use it)",
                    ),
                )
            })?;
        let chars = description.chars().count();
        if chars > MAX_DESCRIPTION_CHARS {
            return Err(self.problem(
                "description",
                format!("is {chars} characters long; at most {MAX_DESCRIPTION_CHARS} are allowed"),
            ));
        }
        Ok(description)
    }

    /// `allowed-tools`: one space-separated string or a list of names.
    fn allowed_tools(&self) -> Result<Option<Vec<String>>, SkillProblem> {
        match self.map.get("allowed-tools") {
            None | Some(Yaml::Null) => Ok(None),
            Some(Yaml::String(s)) => Ok(Some(vec![s.clone()])),
            Some(Yaml::Sequence(items)) => items
                .iter()
                .map(|item| match item {
                    Yaml::String(s) => Ok(s.clone()),
                    _ => Err(self.problem(
                        "allowed-tools",
                        String::from("expected a list of tool names"),
                    )),
                })
                .collect::<Result<_, _>>()
                .map(Some),
            Some(_) => Err(self.problem(
                "allowed-tools",
                String::from("expected a space-separated string or a list of tool names"),
            )),
        }
    }
}

fn key_text(key: &Yaml) -> String {
    match key {
        Yaml::String(s) => s.clone(),
        other => yaml_serde::to_string(other)
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, folder: &str) -> Result<Frontmatter, SkillProblem> {
        read(&mut text.as_bytes(), folder)
    }

    #[test]
    fn fields_are_read_and_unknown_keys_kept() {
        let text = "---\nname: pdf\ndescription: >-\n  Extract text\n  from PDFs.\nlicense: Apache-2.0\nallowed-tools: Read Bash(git:*)\nmetadata:\n  version: 1\nx-mine: true\n---\n# Body\n";
        let front = check(text, "pdf").unwrap();
        assert_eq!(front.name, "pdf");
        assert_eq!(front.description, "Extract text from PDFs.");
        assert_eq!(front.license.as_deref(), Some("Apache-2.0"));
        assert_eq!(
            front.allowed_tools,
            Some(vec![String::from("Read Bash(git:*)")])
        );
        assert_eq!(front.metadata["version"], Value::from(1));
        assert_eq!(front.extra["x-mine"], Value::Bool(true));
        assert_eq!(&text[front.body_offset as usize..], "# Body\n");
    }

    #[test]
    fn each_problem_names_its_line_and_field() {
        let cases = [
            ("no frontmatter\n", Some(1), None, "no frontmatter"),
            ("---\nname: pdf\n", Some(2), None, "not closed"),
            (
                "---\nname: pdf\n---\n",
                Some(2),
                Some("description"),
                "missing",
            ),
            (
                "---\nname: pdf\ndescription: \"\"\n---\n",
                Some(3),
                Some("description"),
                "missing or empty",
            ),
            (
                "---\nname: other\ndescription: d\n---\n",
                Some(2),
                Some("name"),
                "not the name of its folder",
            ),
            (
                "---\nname: ../pdf\ndescription: d\n---\n",
                Some(2),
                Some("name"),
                "not a skill name",
            ),
            (
                "---\nname: pdf\ndescription: [a\n---\n",
                None,
                None,
                "not valid YAML",
            ),
            (
                "---\ndescription: d\n---\n",
                Some(2),
                Some("name"),
                "missing",
            ),
            (
                "---\nname: pdf\ndescription: d\nmetadata: 3\n---\n",
                Some(4),
                Some("metadata"),
                "mapping",
            ),
        ];
        for (text, line, field, words) in cases {
            let err = check(text, "pdf").unwrap_err();
            assert_eq!(err.field.as_deref(), field, "{text}: {err:?}");
            if line.is_some() {
                assert_eq!(err.line, line, "{text}: {err:?}");
            }
            assert!(err.message.contains(words), "{text}: {err:?}");
        }
        let long = format!("---\nname: pdf\ndescription: {}\n---\n", "d".repeat(1025));
        let err = check(&long, "pdf").unwrap_err();
        assert_eq!(
            (err.line, err.field.as_deref()),
            (Some(3), Some("description"))
        );
        let bad_utf8 = b"---\nname: pdf\ndescription: \xff\xfe\n---\n".to_vec();
        let err = read(&mut bad_utf8.as_slice(), "pdf").unwrap_err();
        assert_eq!(err.line, Some(3));
        assert!(err.message.contains("UTF-8"));
    }

    #[test]
    fn an_alias_bomb_is_refused_not_expanded() {
        let mut text = String::from(
            "---\nname: pdf\ndescription: d\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        let mut prev = 'a';
        for c in 'b'..='k' {
            text.push_str(&format!("{c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"));
            prev = c;
        }
        text.push_str("---\n");
        let started = std::time::Instant::now();
        let err = check(&text, "pdf").unwrap_err();
        assert!(err.message.contains("not valid YAML"), "{err:?}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    /// A reader that fails once asked for bytes past `limit`.
    struct Bounded<'a> {
        data: &'a [u8],
        at: usize,
        limit: usize,
    }

    impl Read for Bounded<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            assert!(self.at < self.limit, "read past the frontmatter's chunk");
            let n = buf.len().min(self.data.len() - self.at);
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    #[test]
    fn the_body_is_not_read() {
        let head = "---\nname: pdf\ndescription: d\n---\n";
        let text = format!("{head}{}", "body ".repeat(100_000));
        let mut source = Bounded {
            data: text.as_bytes(),
            at: 0,
            limit: head.len() + CHUNK,
        };
        let front = read(&mut source, "pdf").unwrap();
        assert_eq!(front.body_offset as usize, head.len());
        assert!(front.bytes_read as usize <= head.len() + CHUNK);
    }

    #[test]
    fn frontmatter_past_its_cap_is_refused() {
        let text = format!(
            "---\nname: pdf\ndescription: d\n{}",
            "x: y\n".repeat(20_000)
        );
        let err = check(&text, "pdf").unwrap_err();
        assert!(err.message.contains("no closing"), "{err:?}");
    }
}

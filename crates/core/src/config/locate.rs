//! Where a key path (`models[0].temprature`) sits in a YAML or JSON text, for warnings and
//! errors that name a line.
//!
//! Neither yaml_serde nor serde_json keeps positions in its values, but both attach the
//! position of what is being read to any error raised while reading it. So the text is
//! walked once more along the path, skipping everything else, and an error is raised exactly
//! at the key sought: its position is the answer. This works for any style (block or flow
//! YAML), with each format's own parser.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// A mapping key.
    Key(String),
    /// A sequence index.
    Index(usize),
}

/// `models[0].name` style.
pub(crate) fn display_path(path: &[Segment]) -> String {
    // Keys come from the file: a message shows each as a short line.
    joined(path, crate::base::text::quoted)
}

/// The key path whole, as [`display_path`] writes it but uncut: for comparing keys.
pub(crate) fn key_path(path: &[Segment]) -> String {
    joined(path, str::to_string)
}

fn joined(path: &[Segment], key_text: fn(&str) -> String) -> String {
    let mut out = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&key_text(key));
            }
            Segment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// A line and column, both from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Position {
    pub line: usize,
    pub column: usize,
}

/// The text of the error raised at the target; anything else is a real parse problem.
const MARKER: &str = "antler: located";

/// The position of the key (or sequence item) at `path` in the YAML `text`; `None` when
/// the text does not parse or the path is not in it.
pub(crate) fn locate(text: &str, path: &[Segment]) -> Option<Position> {
    if path.is_empty() {
        return None;
    }
    let deserializer = yaml_serde::Deserializer::from_str(text);
    let err = Find { path }.deserialize(deserializer).err()?;
    if !err.to_string().contains(MARKER) {
        return None;
    }
    err.location().map(|loc| Position {
        line: loc.line(),
        column: loc.column(),
    })
}

/// [`locate`] for a JSON text. The column is where the parser stood: just after the key.
pub(crate) fn locate_json(text: &str, path: &[Segment]) -> Option<Position> {
    if path.is_empty() {
        return None;
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let err = Find { path }.deserialize(&mut deserializer).err()?;
    (err.to_string().contains(MARKER) && err.line() > 0).then(|| Position {
        line: err.line(),
        column: err.column(),
    })
}

/// Walks down `path`; reaching its end raises the marker error.
struct Find<'a> {
    path: &'a [Segment],
}

impl<'de> DeserializeSeed<'de> for Find<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        match self.path {
            // Reading the item at all raises the marker, with the item's position.
            [] => deserializer.deserialize_any(Here),
            _ => deserializer.deserialize_any(self),
        }
    }
}

impl<'de> Visitor<'de> for Find<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping or sequence on the path")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let [Segment::Key(wanted), rest @ ..] = self.path else {
            return Ok(());
        };
        while let Some(found) = map.next_key_seed(Key {
            wanted,
            last: rest.is_empty(),
        })? {
            if found {
                return map.next_value_seed(Find { path: rest });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let [Segment::Index(index), rest @ ..] = self.path else {
            return Ok(());
        };
        for _ in 0..*index {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
        }
        seq.next_element_seed(Find { path: rest })?;
        Ok(())
    }

    // Scalars on the way: the path goes no deeper.
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// A mapping key: `true` when it is the one wanted; the last key of the path raises the
/// marker instead, at the key's own position.
struct Key<'a> {
    wanted: &'a str,
    last: bool,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = bool;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        match key == self.wanted {
            true if self.last => Err(E::custom(MARKER)),
            matched => Ok(matched),
        }
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
}

/// Any item at all: the marker, at the item's position.
struct Here;

impl<'de> Visitor<'de> for Here {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every visit falls back to an "invalid type ... expected" error with this text.
        f.write_str(MARKER)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, path: &[Segment]) -> Option<(usize, usize)> {
        locate(text, path).map(|p| (p.line, p.column))
    }

    fn key(k: &str) -> Segment {
        Segment::Key(k.into())
    }

    #[test]
    fn finds_keys_in_block_and_flow_style() {
        let text = "models:\n  - name: a\n    temprature: 0.2\n  - {name: b, max_retires: 3}\nsandbox:\n  mode: none\n";
        assert_eq!(
            at(text, &[key("models"), Segment::Index(0), key("temprature")]),
            Some((3, 5))
        );
        assert_eq!(
            at(
                text,
                &[key("models"), Segment::Index(1), key("max_retires")]
            ),
            Some((4, 15))
        );
        assert_eq!(at(text, &[key("sandbox"), key("mode")]), Some((6, 3)));
        assert_eq!(at(text, &[key("models"), Segment::Index(1)]), Some((4, 5)));
        assert_eq!(at(text, &[key("sandbox")]), Some((5, 1)));
    }

    #[test]
    fn finds_keys_in_json() {
        let text = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",\n      \"args\": \"x\"}\n  }\n}";
        let path = [key("mcpServers"), key("a"), key("args")];
        assert_eq!(locate_json(text, &path).map(|p| p.line), Some(4));
        assert_eq!(
            locate_json(text, &[key("mcpServers")]).map(|p| p.line),
            Some(2)
        );
        assert_eq!(locate_json(text, &[key("nope")]), None);
    }

    #[test]
    fn missing_paths_and_broken_text_have_no_position() {
        let text = "models:\n  - name: a\n";
        assert_eq!(
            at(text, &[key("models"), Segment::Index(3), key("x")]),
            None
        );
        assert_eq!(at(text, &[key("nothing")]), None);
        assert_eq!(at("a: [unclosed\n", &[key("b")]), None);
        assert_eq!(
            display_path(&[key("models"), Segment::Index(0), key("x")]),
            "models[0].x"
        );
    }
}

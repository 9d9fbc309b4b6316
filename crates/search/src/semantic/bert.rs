//! The BERT encoder's forward pass, as sentence-transformers runs all-MiniLM-L6-v2: token,
//! position and segment embeddings, then post-norm transformer layers (self-attention and a
//! GELU feed-forward block), then the mean of the token states, normalised. One sequence at
//! a time and no padding, so there is no attention mask; a linear layer's product goes
//! through [`Matrix`] (a query's few rows by `few_rows`, longer texts by matrixmultiply).

use ndarray::{Array1, Array2, ArrayView2, Axis, Slice};
use safetensors::{Dtype, SafeTensors};

use super::error::EncoderError;
use super::matrix::{Matrix, Q4_BLOCK_BYTES, Q4_BLOCK_WEIGHTS, dequantize_q4};

/// The shape of a BERT model, from its `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BertShape {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub max_positions: usize,
    pub vocab_size: usize,
    pub layer_norm_eps: f32,
}

/// `y = x Wᵀ + b`, with `W` kept as PyTorch stores it, `[output, input]`: one output's
/// weights are one contiguous row.
struct Linear {
    weight: Matrix,
    bias: Array1<f32>,
}

impl Linear {
    fn apply(&self, x: &ArrayView2<f32>) -> Array2<f32> {
        let mut y = self.weight.product(x);
        y += &self.bias;
        y
    }
}

struct LayerNorm {
    gain: Array1<f32>,
    bias: Array1<f32>,
    eps: f32,
}

impl LayerNorm {
    fn apply(&self, x: &mut Array2<f32>) {
        for mut row in x.rows_mut() {
            let n = row.len() as f32;
            let mean = row.sum() / n;
            let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
            let inv = 1.0 / (var + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gain).zip(&self.bias) {
                *v = (*v - mean) * inv * g + b;
            }
        }
    }
}

struct Layer {
    /// Query, key and value projections side by side (`hidden` → `3 × hidden`).
    qkv: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    up: Linear,
    down: Linear,
    output_norm: LayerNorm,
}

/// Where a model's weights come from: a safetensors file, or another layout that names
/// its tensors differently (`super::e5`). Names are Hugging Face `BertModel`'s.
pub(super) trait TensorSource {
    /// The f32 tensor `name` with exactly `shape` (`None`: any size), and its shape.
    fn floats(
        &self,
        name: &str,
        shape: &[Option<usize>],
    ) -> Result<(Vec<f32>, Vec<usize>), EncoderError>;

    /// The linear weight `name`, `rows × cols`: dense unless the source keeps it smaller.
    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Matrix, EncoderError> {
        dense_matrix(self, name, rows, cols)
    }

    /// The word embeddings, `rows × cols`: dense unless the source keeps them smaller.
    fn word_table(&self, rows: usize, cols: usize) -> Result<WordTable, EncoderError> {
        let (data, _) = self.floats(
            "embeddings.word_embeddings.weight",
            &[Some(rows), Some(cols)],
        )?;
        Array2::from_shape_vec((rows, cols), data)
            .map(WordTable::Dense)
            .map_err(|e| EncoderError::Tensor(format!("`embeddings.word_embeddings.weight`: {e}")))
    }
}

/// The f32 matrix `name` of `source`, `rows × cols`.
pub(super) fn dense_matrix(
    source: &(impl TensorSource + ?Sized),
    name: &str,
    rows: usize,
    cols: usize,
) -> Result<Matrix, EncoderError> {
    let (data, _) = source.floats(name, &[Some(rows), Some(cols)])?;
    Array2::from_shape_vec((rows, cols), data)
        .map(Matrix::Dense)
        .map_err(|e| EncoderError::Tensor(format!("`{name}`: {e}")))
}

/// The word embeddings. A multilingual vocabulary (250,000 rows) is kept 4-bit: 54 MB
/// instead of 384, each looked-up row expanded when a text is embedded.
pub(super) enum WordTable {
    Dense(Array2<f32>),
    /// `rows` rows of `cols` weights in Q4_0 blocks (an f16 scale and 32 nibbles each).
    Q4 {
        blocks: Vec<u8>,
        rows: usize,
        cols: usize,
    },
}

impl WordTable {
    fn rows(&self) -> usize {
        match self {
            Self::Dense(table) => table.nrows(),
            Self::Q4 { rows, .. } => *rows,
        }
    }

    /// Adds row `id` (below [`Self::rows`]) to `out`.
    fn add_row(&self, id: usize, out: &mut ndarray::ArrayViewMut1<f32>) {
        match self {
            Self::Dense(table) => *out += &table.row(id),
            Self::Q4 { blocks, cols, .. } => {
                let per_row = cols / Q4_BLOCK_WEIGHTS * Q4_BLOCK_BYTES;
                let mut row = Vec::with_capacity(*cols);
                if let Some(bytes) = blocks.get(id * per_row..(id + 1) * per_row) {
                    dequantize_q4(bytes, &mut row);
                }
                for (o, v) in out.iter_mut().zip(row) {
                    *o += v;
                }
            }
        }
    }
}

/// A loaded BERT encoder.
pub(crate) struct Bert {
    word: WordTable,
    position: Array2<f32>,
    segment: Array1<f32>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
}

impl Bert {
    /// Takes the weights of `shape` out of a safetensors file (names as Hugging Face's
    /// `BertModel` saves them, with or without a `bert.` prefix), checking every shape.
    pub(super) fn load(tensors: &SafeTensors<'_>, shape: &BertShape) -> Result<Self, EncoderError> {
        let source = Safetensors {
            tensors,
            prefix: if tensors.names().iter().any(|n| n.starts_with("bert.")) {
                "bert."
            } else {
                ""
            },
        };
        Self::from_source(&source, shape)
    }

    /// Takes the weights of `shape` out of `source`, checking every shape.
    pub(super) fn from_source(
        source: &dyn TensorSource,
        shape: &BertShape,
    ) -> Result<Self, EncoderError> {
        if shape.heads == 0 || !shape.hidden.is_multiple_of(shape.heads) {
            return Err(EncoderError::Shape(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                shape.hidden, shape.heads
            )));
        }
        let w = Weights { source };
        let (h, i) = (shape.hidden, shape.intermediate);
        let norm = |name: &str| -> Result<LayerNorm, EncoderError> {
            Ok(LayerNorm {
                gain: w.vector(&format!("{name}.weight"), h)?,
                bias: w.vector(&format!("{name}.bias"), h)?,
                eps: shape.layer_norm_eps,
            })
        };
        let mut layers = Vec::with_capacity(shape.layers);
        for l in 0..shape.layers {
            let p = format!("encoder.layer.{l}");
            let (q, k, v) = (
                w.linear(&format!("{p}.attention.self.query"), h, h)?,
                w.linear(&format!("{p}.attention.self.key"), h, h)?,
                w.linear(&format!("{p}.attention.self.value"), h, h)?,
            );
            let bias =
                ndarray::concatenate(Axis(0), &[q.bias.view(), k.bias.view(), v.bias.view()])
                    .map_err(|e| EncoderError::Shape(format!("{p}: {e}")))?;
            let qkv = Linear {
                weight: Matrix::stacked([q.weight, k.weight, v.weight])
                    .map_err(|why| EncoderError::Shape(format!("{p}: {why}")))?,
                bias,
            };
            layers.push(Layer {
                qkv,
                attention_out: w.linear(&format!("{p}.attention.output.dense"), h, h)?,
                attention_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                up: w.linear(&format!("{p}.intermediate.dense"), h, i)?,
                down: w.linear(&format!("{p}.output.dense"), i, h)?,
                output_norm: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        let segments = w.matrix("embeddings.token_type_embeddings.weight", None, h)?;
        if segments.nrows() == 0 {
            return Err(EncoderError::Tensor(
                "`embeddings.token_type_embeddings.weight` has no rows".into(),
            ));
        }
        Ok(Self {
            word: source.word_table(shape.vocab_size, h)?,
            position: w.matrix(
                "embeddings.position_embeddings.weight",
                Some(shape.max_positions),
                h,
            )?,
            segment: segments.row(0).to_owned(),
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers,
            heads: shape.heads,
        })
    }

    /// How many positions the model has, so the longest sequence it can encode.
    pub(super) fn max_positions(&self) -> usize {
        self.position.nrows()
    }

    /// How many rows the word embedding has: token ids must be below it.
    pub(super) fn vocab_rows(&self) -> usize {
        self.word.rows()
    }

    /// The unit-length mean of the last layer's token states for `ids` (which the caller
    /// keeps within [`Self::max_positions`] and [`Self::vocab_rows`]); `None` for no tokens.
    pub(super) fn embed(&self, ids: &[u32]) -> Option<Vec<f32>> {
        let n = ids.len().min(self.max_positions());
        if n == 0 || self.vocab_rows() == 0 {
            return None;
        }
        let hidden = self.position.ncols();
        let mut x = Array2::<f32>::zeros((n, hidden));
        for (t, (mut row, &id)) in x.rows_mut().into_iter().zip(ids).enumerate() {
            let id = usize::try_from(id).ok()?.min(self.vocab_rows() - 1);
            self.word.add_row(id, &mut row);
            row += &self.position.row(t);
            row += &self.segment;
        }
        self.embedding_norm.apply(&mut x);
        for layer in &self.layers {
            x = self.layer(layer, x);
        }
        let mut mean = x.mean_axis(Axis(0))?.to_vec();
        let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt();
        if norm <= f32::EPSILON || !norm.is_finite() {
            return None;
        }
        mean.iter_mut().for_each(|v| *v /= norm);
        Some(mean)
    }

    fn layer(&self, layer: &Layer, x: Array2<f32>) -> Array2<f32> {
        let (n, hidden) = x.dim();
        let d = hidden / self.heads;
        let qkv = layer.qkv.apply(&x.view());
        let scale = 1.0 / (d as f32).sqrt();
        let mut context = Array2::<f32>::zeros((n, hidden));
        for head in 0..self.heads {
            let at = head * d;
            let columns = |from: usize| qkv.slice_axis(Axis(1), Slice::from(from..from + d));
            let (q, k, v) = (columns(at), columns(hidden + at), columns(2 * hidden + at));
            let mut scores = q.dot(&k.t());
            for mut row in scores.rows_mut() {
                let max = row.fold(f32::NEG_INFINITY, |m, &v| m.max(v));
                let mut sum = 0.0;
                row.mapv_inplace(|v| {
                    let e = ((v - max) * scale).exp();
                    sum += e;
                    e
                });
                row /= sum;
            }
            context
                .slice_axis_mut(Axis(1), Slice::from(at..at + d))
                .assign(&scores.dot(&v));
        }
        let mut attended = layer.attention_out.apply(&context.view());
        attended += &x;
        layer.attention_norm.apply(&mut attended);
        let mut up = layer.up.apply(&attended.view());
        up.mapv_inplace(gelu);
        let mut out = layer.down.apply(&up.view());
        out += &attended;
        layer.output_norm.apply(&mut out);
        out
    }
}

/// BERT's exact GELU, `x Φ(x)`.
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The error function (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7, under
/// f32's resolution at the values GELU cares about).
fn erf(x: f32) -> f32 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * (-x * x).exp();
    y.copysign(x)
}

/// A safetensors file's tensors.
struct Safetensors<'a, 'b> {
    tensors: &'a SafeTensors<'b>,
    prefix: &'static str,
}

impl TensorSource for Safetensors<'_, '_> {
    fn floats(
        &self,
        name: &str,
        shape: &[Option<usize>],
    ) -> Result<(Vec<f32>, Vec<usize>), EncoderError> {
        let full = format!("{}{name}", self.prefix);
        let view = self
            .tensors
            .tensor(&full)
            .map_err(|_| EncoderError::Tensor(format!("`{full}` is missing")))?;
        if view.dtype() != Dtype::F32 {
            return Err(EncoderError::Tensor(format!(
                "`{full}` is {:?}; only F32 weights are supported",
                view.dtype()
            )));
        }
        let got = view.shape();
        check_shape(&full, got, shape)?;
        let data = view
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok((data, got.to_vec()))
    }
}

/// Fails unless `got` is `want` (`None`: any size).
pub(super) fn check_shape(
    name: &str,
    got: &[usize],
    want: &[Option<usize>],
) -> Result<(), EncoderError> {
    let fits = got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, want)| want.is_none_or(|w| *g == w));
    if fits {
        return Ok(());
    }
    Err(EncoderError::Tensor(format!(
        "`{name}` has shape {got:?}, expected {}",
        want.iter()
            .map(|d| d.map_or("any".to_owned(), |d| d.to_string()))
            .collect::<Vec<_>>()
            .join(" × ")
    )))
}

/// Reads checked tensors, shaped, out of a source.
struct Weights<'a> {
    source: &'a dyn TensorSource,
}

impl Weights<'_> {
    fn floats(
        &self,
        name: &str,
        shape: &[Option<usize>],
    ) -> Result<(Vec<f32>, Vec<usize>), EncoderError> {
        self.source.floats(name, shape)
    }

    fn vector(&self, name: &str, len: usize) -> Result<Array1<f32>, EncoderError> {
        Ok(Array1::from_vec(self.floats(name, &[Some(len)])?.0))
    }

    /// A `rows × cols` matrix (`rows` of any size when `None`).
    fn matrix(
        &self,
        name: &str,
        rows: Option<usize>,
        cols: usize,
    ) -> Result<Array2<f32>, EncoderError> {
        let (data, shape) = self.floats(name, &[rows, Some(cols)])?;
        Array2::from_shape_vec((shape[0], shape[1]), data)
            .map_err(|e| EncoderError::Tensor(format!("`{name}`: {e}")))
    }

    /// A linear layer `input` → `output`, stored by PyTorch as `[output, input]`.
    fn linear(&self, name: &str, input: usize, output: usize) -> Result<Linear, EncoderError> {
        Ok(Linear {
            weight: self
                .source
                .matrix(&format!("{name}.weight"), output, input)?,
            bias: self.vector(&format!("{name}.bias"), output)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
        ] {
            assert!((erf(x) - want).abs() < 1e-6, "erf({x}) = {}", erf(x));
        }
        assert!((gelu(1.0) - 0.841_344_7).abs() < 1e-6);
    }
}

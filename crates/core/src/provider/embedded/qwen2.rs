//! The Qwen2 decoder over candle's quantized kernels, with a key/value cache that can be cut
//! back to any length: a new call of a thread re-runs only the tokens after the part of the
//! prompt the cache already holds. (candle-transformers' `quantized_qwen2` keeps its cache
//! private and masks a multi-token step only from position 0, so it cannot resume a prefix.)

use std::sync::Arc;

use candle_core::quantized::{QMatMul, QTensor, gguf_file};
use candle_core::{DType, Device, IndexOp, Module, Result, Tensor};

/// Tokens the cache grows by when full: amortises the copy a growth costs.
const CACHE_STEP: usize = 512;

struct Layer {
    q: QMatMul,
    k: QMatMul,
    v: QMatMul,
    out: QMatMul,
    q_bias: Tensor,
    k_bias: Tensor,
    v_bias: Tensor,
    attn_norm: Tensor,
    ffn_norm: Tensor,
    gate: QMatMul,
    up: QMatMul,
    down: QMatMul,
}

/// One layer's cached keys and values, `[1, kv_heads, capacity, head_dim]`, valid up to the
/// model's `cached` length.
#[derive(Default)]
struct LayerCache {
    keys: Option<Tensor>,
    values: Option<Tensor>,
}

/// The model's shape, from the GGUF metadata.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    heads: usize,
    kv_heads: usize,
    head_dim: usize,
    eps: f32,
    /// The longest sequence the model was trained for.
    pub context_length: usize,
}

/// A loaded model and its cache.
pub(super) struct Qwen2 {
    embed: Arc<QTensor>,
    layers: Vec<Layer>,
    norm: Tensor,
    output: QMatMul,
    shape: Shape,
    cos: Tensor,
    sin: Tensor,
    cache: Vec<LayerCache>,
    cached: usize,
}

fn metadata<'a>(content: &'a gguf_file::Content, key: &str) -> Result<&'a gguf_file::Value> {
    content
        .metadata
        .get(key)
        .ok_or_else(|| candle_core::Error::Msg(format!("the GGUF has no `{key}`")))
}

fn count(content: &gguf_file::Content, key: &str) -> Result<usize> {
    let value = metadata(content, key)?.to_u32()?;
    // A hostile header could claim absurd shapes; nothing real is this large.
    if value == 0 || value > 1 << 20 {
        candle_core::bail!("the GGUF's `{key}` is {value}, out of range");
    }
    Ok(value as usize)
}

impl Shape {
    /// Reads the shape from the GGUF metadata.
    pub(super) fn read(content: &gguf_file::Content) -> Result<Self> {
        let heads = count(content, "qwen2.attention.head_count")?;
        let kv_heads = count(content, "qwen2.attention.head_count_kv")?;
        let width = count(content, "qwen2.embedding_length")?;
        if width % heads != 0 || heads % kv_heads != 0 {
            candle_core::bail!("the GGUF's attention heads do not divide its width");
        }
        Ok(Self {
            heads,
            kv_heads,
            head_dim: width / heads,
            eps: metadata(content, "qwen2.attention.layer_norm_rms_epsilon")?.to_f32()?,
            context_length: count(content, "qwen2.context_length")?,
        })
    }
}

impl Qwen2 {
    /// Loads the weights of `content` from `reader`; positions up to `context` can be run.
    pub(super) fn load<R: std::io::Read + std::io::Seek>(
        content: &gguf_file::Content,
        reader: &mut R,
        context: usize,
    ) -> Result<Self> {
        let device = Device::Cpu;
        let shape = Shape::read(content)?;
        let blocks = count(content, "qwen2.block_count")?;
        let base = metadata(content, "qwen2.rope.freq_base")
            .and_then(|v| v.to_f32())
            .unwrap_or(10_000.0);
        let mut tensor = |name: &str| content.tensor(reader, name, &device);
        let embed = Arc::new(tensor("token_embd.weight")?);
        // Small Qwen2 models tie the output to the embedding: one copy serves both.
        let output = match tensor("output.weight") {
            Ok(weight) => QMatMul::from_qtensor(weight)?,
            Err(_) => QMatMul::from_arc(embed.clone())?,
        };
        let norm = tensor("output_norm.weight")?.dequantize(&device)?;
        let mut layers = Vec::with_capacity(blocks);
        for i in 0..blocks {
            let mut part = |name: &str| tensor(&format!("blk.{i}.{name}"));
            let mut matmul = |name: &str| QMatMul::from_qtensor(part(name)?);
            let (q, k, v, out) = (
                matmul("attn_q.weight")?,
                matmul("attn_k.weight")?,
                matmul("attn_v.weight")?,
                matmul("attn_output.weight")?,
            );
            let (gate, up, down) = (
                matmul("ffn_gate.weight")?,
                matmul("ffn_up.weight")?,
                matmul("ffn_down.weight")?,
            );
            let mut dense = |name: &str| part(name)?.dequantize(&device);
            layers.push(Layer {
                q,
                k,
                v,
                out,
                q_bias: dense("attn_q.bias")?,
                k_bias: dense("attn_k.bias")?,
                v_bias: dense("attn_v.bias")?,
                attn_norm: dense("attn_norm.weight")?,
                ffn_norm: dense("ffn_norm.weight")?,
                gate,
                up,
                down,
            });
        }
        let half = shape.head_dim / 2;
        let theta: Vec<f32> = (0..half)
            .map(|i| 1.0 / base.powf(2.0 * i as f32 / shape.head_dim as f32))
            .collect();
        let theta = Tensor::new(theta.as_slice(), &device)?.reshape((1, half))?;
        let positions = Tensor::arange(0u32, context as u32, &device)?
            .to_dtype(DType::F32)?
            .reshape((context, 1))?;
        let angles = positions.matmul(&theta)?;
        Ok(Self {
            embed,
            cache: (0..layers.len()).map(|_| LayerCache::default()).collect(),
            layers,
            norm,
            output,
            shape,
            cos: angles.cos()?,
            sin: angles.sin()?,
            cached: 0,
        })
    }

    /// The most positions a sequence may have.
    pub(super) fn capacity(&self) -> usize {
        self.cos.dims()[0]
    }

    /// Forgets every position from `len` on.
    pub(super) fn truncate(&mut self, len: usize) {
        self.cached = self.cached.min(len);
    }

    /// Runs `tokens` after the cached positions and returns the logits of the last one.
    pub(super) fn forward(&mut self, tokens: &[u32]) -> Result<Tensor> {
        let device = Device::Cpu;
        let (t, start) = (tokens.len(), self.cached);
        if t == 0 || start + t > self.capacity() {
            candle_core::bail!("{} positions do not fit {}", start + t, self.capacity());
        }
        let Shape {
            heads,
            kv_heads,
            head_dim,
            eps,
            ..
        } = self.shape;
        let ids = Tensor::new(tokens, &device)?.unsqueeze(0)?;
        let mut x = self.embed.embedding(&ids)?;
        let mask = causal_mask(t, start, &device)?;
        let cos = self.cos.narrow(0, start, t)?;
        let sin = self.sin.narrow(0, start, t)?;
        for (layer, cache) in self.layers.iter().zip(self.cache.iter_mut()) {
            let h = candle_nn::ops::rms_norm(&x, &layer.attn_norm, eps)?;
            let heads_of = |w: &QMatMul, bias: &Tensor, n: usize| -> Result<Tensor> {
                w.forward(&h)?
                    .broadcast_add(bias)?
                    .reshape((1, t, n, head_dim))?
                    .transpose(1, 2)?
                    .contiguous()
            };
            let q = candle_nn::rotary_emb::rope(
                &heads_of(&layer.q, &layer.q_bias, heads)?,
                &cos,
                &sin,
            )?;
            let k = candle_nn::rotary_emb::rope(
                &heads_of(&layer.k, &layer.k_bias, kv_heads)?,
                &cos,
                &sin,
            )?;
            let v = heads_of(&layer.v, &layer.v_bias, kv_heads)?;
            let (k, v) = cache.append(&k, &v, start)?;
            let groups = heads / kv_heads;
            let k = repeat_kv(&k, groups)?;
            let v = repeat_kv(&v, groups)?;
            let scores = (q.matmul(&k.t()?)? / (head_dim as f64).sqrt())?;
            let scores = match &mask {
                Some(mask) => scores.broadcast_add(mask)?,
                None => scores,
            };
            let weights = candle_nn::ops::softmax_last_dim(&scores)?;
            let y = weights
                .matmul(&v)?
                .transpose(1, 2)?
                .reshape((1, t, heads * head_dim))?;
            x = (layer.out.forward(&y)? + &x)?;
            let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, eps)?;
            let gated =
                (candle_nn::ops::silu(&layer.gate.forward(&h)?)? * layer.up.forward(&h)?)?;
            x = (layer.down.forward(&gated)? + &x)?;
        }
        self.cached = start + t;
        let last = candle_nn::ops::rms_norm(&x.i((.., t - 1..t, ..))?, &self.norm, eps)?;
        self.output.forward(&last)?.flatten_all()
    }
}

impl LayerCache {
    /// Writes `k`/`v` at `start` and returns the keys and values of positions `..start+t`.
    fn append(&mut self, k: &Tensor, v: &Tensor, start: usize) -> Result<(Tensor, Tensor)> {
        let t = k.dims()[2];
        let end = start + t;
        for (slot, new) in [(&mut self.keys, k), (&mut self.values, v)] {
            let capacity = slot.as_ref().map_or(0, |c| c.dims()[2]);
            if end > capacity {
                let mut dims = new.dims().to_vec();
                dims[2] = end.div_ceil(CACHE_STEP) * CACHE_STEP;
                let grown = Tensor::zeros(dims, new.dtype(), new.device())?;
                if let Some(old) = slot.as_ref().filter(|_| start > 0) {
                    grown.slice_set(&old.narrow(2, 0, start)?, 2, 0)?;
                }
                *slot = Some(grown);
            }
            if let Some(cache) = slot.as_ref() {
                cache.slice_set(new, 2, start)?;
            }
        }
        match (&self.keys, &self.values) {
            (Some(keys), Some(values)) => Ok((keys.narrow(2, 0, end)?, values.narrow(2, 0, end)?)),
            _ => candle_core::bail!("the cache was not allocated"),
        }
    }
}

/// `-inf` where a new position would see a later one; none for a single token.
fn causal_mask(t: usize, start: usize, device: &Device) -> Result<Option<Tensor>> {
    if t == 1 {
        return Ok(None);
    }
    let width = start + t;
    let mask: Vec<f32> = (0..t)
        .flat_map(|i| {
            (0..width).map(move |j| {
                if j > start + i {
                    f32::NEG_INFINITY
                } else {
                    0.0
                }
            })
        })
        .collect();
    Tensor::from_slice(&mask, (t, width), device).map(Some)
}

/// Each key/value head repeated for the query heads that share it.
fn repeat_kv(x: &Tensor, groups: usize) -> Result<Tensor> {
    if groups == 1 {
        return x.contiguous();
    }
    let (b, h, s, d) = x.dims4()?;
    Tensor::cat(&vec![x; groups], 2)?.reshape((b, h * groups, s, d))
}

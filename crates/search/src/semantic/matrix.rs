//! A linear layer's weight matrix, `[output, input]` as PyTorch stores it: f32, or kept as
//! the 4-bit file stores it. A query's pass is bound by reading the weights, so a 4-bit
//! model's are held as one `i8` a weight and one f32 scale per block of 32 (a quarter of
//! f32's bytes) and expanded a row at a time inside the few-row product. The expanded
//! values are exactly the f32s a full expansion gives, so the results do not change.

use std::cell::RefCell;

use ndarray::{Array2, ArrayView2};

use super::few_rows::{self, Rows};

/// Weights in one Q4_0 block.
pub(super) const Q4_BLOCK_WEIGHTS: usize = 32;
/// Bytes of one Q4_0 block: an f16 scale, then 16 bytes of nibbles.
pub(super) const Q4_BLOCK_BYTES: usize = 18;

/// Up to this many rows (tokens: a query, a short tool text) a product goes through
/// [`few_rows`]; above it the general product's packing pays for itself.
const FEW_ROWS: usize = 24;

/// The weights of a linear layer, `[output, input]`.
pub(super) enum Matrix {
    Dense(Array2<f32>),
    Blocks(BlockMatrix),
}

/// One Q4_0 block's scale and its 32 weights' integers: byte `j` holds weight `j` in its
/// low nibble and `j + 16` in its high one, each `nibble - 8`.
fn q4_block(block: &[u8]) -> (f32, impl Iterator<Item = i8> + '_) {
    let scale = half::f16::from_le_bytes([block[0], block[1]]).to_f32();
    let nibbles = &block[2..];
    let low = nibbles.iter().map(|b| (b & 0x0f) as i8 - 8);
    let high = nibbles.iter().map(|b| (b >> 4) as i8 - 8);
    (scale, low.chain(high))
}

/// Expands Q4_0 blocks into f32, appended to `out`.
pub(super) fn dequantize_q4(blocks: &[u8], out: &mut Vec<f32>) {
    for block in blocks.chunks_exact(Q4_BLOCK_BYTES) {
        let (scale, values) = q4_block(block);
        out.extend(values.map(|v| f32::from(v) * scale));
    }
}

/// `rows × cols` weights, each `value × scale` of its block of 32 along the row.
pub(super) struct BlockMatrix {
    /// Each weight's integer, -8..=7 for a Q4_0 source.
    values: Vec<i8>,
    /// One scale per [`Q4_BLOCK_WEIGHTS`] weights, in the same order.
    scales: Vec<f32>,
    rows: usize,
    cols: usize,
}

impl BlockMatrix {
    /// `rows × cols` weights from Q4_0 blocks; why not, when the bytes do not hold that
    /// many weights.
    pub(super) fn from_q4(blocks: &[u8], rows: usize, cols: usize) -> Result<Self, String> {
        let count = rows.checked_mul(cols).filter(|&n| n > 0);
        let fits = cols.is_multiple_of(Q4_BLOCK_WEIGHTS)
            && count.is_some_and(|n| n / Q4_BLOCK_WEIGHTS * Q4_BLOCK_BYTES == blocks.len());
        if !fits {
            return Err(format!(
                "{} bytes of 4-bit blocks do not hold {rows} × {cols} weights",
                blocks.len()
            ));
        }
        let blocks = blocks.chunks_exact(Q4_BLOCK_BYTES);
        let mut values = Vec::with_capacity(rows * cols);
        let mut scales = Vec::with_capacity(blocks.len());
        for block in blocks {
            let (scale, block_values) = q4_block(block);
            scales.push(scale);
            values.extend(block_values);
        }
        Ok(Self {
            values,
            scales,
            rows,
            cols,
        })
    }

    /// Every weight as f32, into `data` (of [`Self::values`]' length).
    fn expand_into(&self, data: &mut [f32]) {
        few_rows::expand(&self.values, &self.scales, data);
    }

    fn expanded(&self) -> Array2<f32> {
        let mut data = vec![0.0; self.values.len()];
        self.expand_into(&mut data);
        // The length is rows × cols by construction.
        Array2::from_shape_vec((self.rows, self.cols), data)
            .unwrap_or_else(|_| Array2::zeros((self.rows, self.cols)))
    }

    /// `x Wᵀ` for many rows: the general product over the weights expanded into this
    /// thread's buffer, reused from layer to layer and text to text (a fresh 2 MB
    /// allocation per product costs its page faults each time).
    fn product_expanded(&self, x: &ArrayView2<f32>) -> Array2<f32> {
        thread_local! {
            static EXPANDED: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
        }
        EXPANDED.with_borrow_mut(|buffer| {
            buffer.resize(self.values.len(), 0.0);
            self.expand_into(buffer);
            match ArrayView2::from_shape((self.rows, self.cols), &buffer[..]) {
                Ok(w) => x.dot(&w.t()),
                // Unreachable: the length is rows × cols by construction.
                Err(_) => x.dot(&self.expanded().t()),
            }
        })
    }
}

impl Matrix {
    /// Outputs: one row of weights each.
    pub(super) fn rows(&self) -> usize {
        match self {
            Self::Dense(w) => w.nrows(),
            Self::Blocks(b) => b.rows,
        }
    }

    /// Inputs: the length of a row.
    pub(super) fn cols(&self) -> usize {
        match self {
            Self::Dense(w) => w.ncols(),
            Self::Blocks(b) => b.cols,
        }
    }

    /// `x Wᵀ`, for `x` with [`Self::cols`] columns.
    pub(super) fn product(&self, x: &ArrayView2<f32>) -> Array2<f32> {
        if let Some(y) = self.few_rows(x) {
            return y;
        }
        match self {
            Self::Dense(w) => x.dot(&w.t()),
            // Many rows share the cost of expanding every weight (runs of few rows, each
            // reading the blocks, measured slower: 55 ms against 47 for a long query).
            Self::Blocks(b) => b.product_expanded(x),
        }
    }

    fn few_rows(&self, x: &ArrayView2<f32>) -> Option<Array2<f32>> {
        if x.nrows() > FEW_ROWS || x.ncols() != self.cols() {
            return None;
        }
        let x = x.as_standard_layout();
        let rows = match self {
            Self::Dense(w) => Rows::Dense(w.as_slice()?),
            Self::Blocks(b) => Rows::Blocks {
                values: &b.values,
                scales: &b.scales,
            },
        };
        let y = few_rows::product(x.as_slice()?, rows, x.ncols())?;
        Array2::from_shape_vec((x.nrows(), self.rows()), y).ok()
    }

    /// The three matrices' rows one after the other (query, key and value side by side);
    /// why not, when their widths differ.
    pub(super) fn stacked(parts: [Self; 3]) -> Result<Self, String> {
        let cols = parts[0].cols();
        if parts.iter().any(|p| p.cols() != cols) {
            return Err(String::from(
                "query, key and value projections of different widths",
            ));
        }
        let rows = parts.iter().map(Self::rows).sum();
        match parts {
            [Self::Blocks(a), Self::Blocks(b), Self::Blocks(c)] => Ok(Self::Blocks(BlockMatrix {
                values: [a.values, b.values, c.values].concat(),
                scales: [a.scales, b.scales, c.scales].concat(),
                rows,
                cols,
            })),
            parts => {
                let dense = parts.map(|p| match p {
                    Self::Dense(w) => w,
                    Self::Blocks(b) => b.expanded(),
                });
                let views = dense.each_ref().map(|m| m.view());
                ndarray::concatenate(ndarray::Axis(0), &views)
                    .map(Self::Dense)
                    .map_err(|e| e.to_string())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two rows of 32 weights: scales 0.5 and -2, nibbles counting up from 0 (weight -8).
    fn q4_pair() -> Vec<u8> {
        let mut bytes = Vec::new();
        for scale in [0.5f32, -2.0] {
            bytes.extend(half::f16::from_f32(scale).to_le_bytes());
            bytes.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
        }
        bytes
    }

    #[test]
    fn q4_blocks_become_values_and_scales() {
        let m = BlockMatrix::from_q4(&q4_pair(), 2, 32).unwrap();
        let dense = m.expanded();
        assert_eq!(dense[[0, 0]], -4.0); // nibble 0
        assert_eq!(dense[[0, 15]], 3.5); // nibble 15
        assert_eq!(dense[[0, 16]], 3.5); // high nibble of byte 0: 15
        assert_eq!(dense[[1, 1]], 14.0); // (1 - 8) × -2
    }

    #[test]
    fn a_block_count_that_does_not_fit_is_refused() {
        let bytes = q4_pair();
        assert!(BlockMatrix::from_q4(&bytes, 3, 32).is_err());
        assert!(BlockMatrix::from_q4(&bytes, 1, 64).is_ok());
        assert!(BlockMatrix::from_q4(&bytes, 4, 16).is_err());
        assert!(BlockMatrix::from_q4(&bytes, usize::MAX, 32).is_err());
        assert!(BlockMatrix::from_q4(&[], 0, 32).is_err());
        assert!(BlockMatrix::from_q4(&[], 2, 0).is_err());
    }

    /// The blocks hold exactly the weights the plain Q4_0 expansion gives, on varied bytes.
    #[test]
    fn blocks_hold_what_dequantizing_gives() {
        let mut bytes = Vec::new();
        for b in 0..8u8 {
            bytes.extend(half::f16::from_f32(f32::from(b) * 0.37 - 1.1).to_le_bytes());
            bytes.extend((0..16u8).map(|j| j.wrapping_mul(71).wrapping_add(b.wrapping_mul(13))));
        }
        let mut want = Vec::new();
        dequantize_q4(&bytes, &mut want);
        let got = BlockMatrix::from_q4(&bytes, 4, 64).unwrap().expanded();
        assert_eq!(got.as_slice().unwrap(), &want[..]);
    }

    /// The block product equals the dense product of the expanded weights, bit for bit, for
    /// few rows and for many.
    #[test]
    fn blocks_multiply_as_their_expansion_does() {
        let mut bytes = Vec::new();
        for b in 0..3 * 4 {
            bytes.extend(half::f16::from_f32(0.25 + b as f32 / 8.0).to_le_bytes());
            bytes.extend((0..16u8).map(|j| j.wrapping_mul(37).wrapping_add(b as u8)));
        }
        let blocks = Matrix::Blocks(BlockMatrix::from_q4(&bytes, 3, 128).unwrap());
        let Matrix::Blocks(b) = &blocks else {
            unreachable!()
        };
        let dense = Matrix::Dense(b.expanded());
        for rows in [1, 5, 24, 30] {
            let x = Array2::from_shape_fn((rows, 128), |(r, c)| ((r * 3 + c) % 11) as f32 - 5.0);
            assert_eq!(
                blocks.product(&x.view()),
                dense.product(&x.view()),
                "{rows} rows"
            );
        }
    }

    #[test]
    fn stacking_keeps_blocks_and_row_order() {
        // Part `p` is the pair of rows scaled by `p + 1`.
        let part = |p: usize| {
            let mut bytes = q4_pair();
            for block in bytes.chunks_exact_mut(Q4_BLOCK_BYTES) {
                let scale = half::f16::from_le_bytes([block[0], block[1]]).to_f32();
                block[..2]
                    .copy_from_slice(&half::f16::from_f32(scale * (p + 1) as f32).to_le_bytes());
            }
            Matrix::Blocks(BlockMatrix::from_q4(&bytes, 2, 32).unwrap())
        };
        let stacked = Matrix::stacked([part(0), part(1), part(2)]).unwrap();
        assert!(matches!(stacked, Matrix::Blocks(_)));
        assert_eq!((stacked.rows(), stacked.cols()), (6, 32));
        let x = Array2::from_elem((1, 32), 1.0);
        let y = stacked.product(&x.view()).row(0).to_vec();
        for p in 1..3 {
            let scale = (p + 1) as f32;
            assert_eq!(
                [y[2 * p], y[2 * p + 1]],
                [y[0] * scale, y[1] * scale],
                "part {p}"
            );
        }
        let part = || Matrix::Blocks(BlockMatrix::from_q4(&q4_pair(), 2, 32).unwrap());
        let mixed = Matrix::stacked([part(), Matrix::Dense(Array2::zeros((2, 32))), part()]);
        assert!(matches!(mixed, Ok(Matrix::Dense(_))));
        let narrow = Matrix::stacked([part(), Matrix::Dense(Array2::zeros((2, 16))), part()]);
        assert!(narrow.is_err());
    }
}

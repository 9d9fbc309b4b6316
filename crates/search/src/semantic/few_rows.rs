//! The matrix product for a few rows: a query is a handful of tokens, so `x Wᵀ` with `x` of
//! 2–24 rows is a stack of dot products. A general product (matrixmultiply) first packs the
//! whole weight matrix, which at this size costs more than the arithmetic; here each weight
//! row is read once and its dot taken with every input row, in the widest vectors the CPU
//! has (picked at run time by `pulp`, which keeps the code free of `unsafe`). Block weights
//! (`super::matrix`) are expanded a row at a time into f32 first, with AVX2 where the CPU
//! has it: then the dots are the same as for f32 weights.

use pulp::{Arch, Simd, WithSimd};

use super::matrix::Q4_BLOCK_WEIGHTS;

/// The weight matrix `W`, `outputs × input`, row-major.
#[derive(Clone, Copy)]
pub(super) enum Rows<'a> {
    Dense(&'a [f32]),
    /// Each weight `value × scale`, one scale per [`Q4_BLOCK_WEIGHTS`] weights: a row is
    /// expanded into f32 just before its dots are taken.
    Blocks {
        values: &'a [i8],
        scales: &'a [f32],
    },
}

impl Rows<'_> {
    fn len(&self) -> usize {
        match self {
            Self::Dense(w) => w.len(),
            Self::Blocks { values, .. } => values.len(),
        }
    }

    fn fits(&self, input: usize) -> bool {
        match self {
            Self::Dense(w) => w.len().is_multiple_of(input),
            Self::Blocks { values, scales } => {
                input.is_multiple_of(Q4_BLOCK_WEIGHTS)
                    && values.len().is_multiple_of(input)
                    && values.len() / Q4_BLOCK_WEIGHTS == scales.len()
            }
        }
    }
}

/// `y = x Wᵀ` for `x` of `rows × input` and `W` of `outputs × input`, both row-major;
/// `y` is `rows × outputs`, row-major. `None` when the lengths do not fit those shapes.
pub(super) fn product(x: &[f32], weight: Rows<'_>, input: usize) -> Option<Vec<f32>> {
    if input == 0 || !x.len().is_multiple_of(input) || !weight.fits(input) {
        return None;
    }
    let outputs = weight.len() / input;
    let mut y = vec![0.0; x.len() / input * outputs];
    if outputs == 0 {
        return Some(y);
    }
    // Widening bytes to floats needs AVX2's own conversions: pulp's portable vectors have
    // none, and the compiler leaves the plain loop scalar. `Arch` picks V3 too (the only
    // x86 level pulp is built with), so block and f32 weights sum in the same vectors.
    #[cfg(target_arch = "x86_64")]
    if let (Rows::Blocks { values, scales }, Some(v3)) = (weight, pulp::x86::V3::try_new()) {
        let expand = |values: &[i8], scales: &[f32], row: &mut [f32]| {
            expand_avx2(v3, values, scales, row);
        };
        v3.vectorize(|| block_rows(v3, x, values, scales, input, &mut y, expand));
        return Some(y);
    }
    Arch::new().dispatch(Product {
        x,
        weight,
        input,
        outputs,
        y: &mut y,
    });
    Some(y)
}

struct Product<'a> {
    x: &'a [f32],
    weight: Rows<'a>,
    input: usize,
    outputs: usize,
    y: &'a mut [f32],
}

impl WithSimd for Product<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Self {
            x,
            weight,
            input,
            outputs,
            y,
        } = self;
        match weight {
            Rows::Dense(weight) => {
                for (j, w) in weight.chunks_exact(input).enumerate() {
                    dots(simd, x, w, j, outputs, y);
                }
            }
            Rows::Blocks { values, scales } => {
                block_rows(simd, x, values, scales, input, y, expand);
            }
        }
    }
}

/// `y = x Wᵀ` for block weights: each weight row is expanded by `expand` into a row of
/// f32 (in L1, read back at once), then dotted with every row of `x`. `input` is a
/// non-zero multiple of [`Q4_BLOCK_WEIGHTS`] ([`Rows::fits`]).
#[inline(always)]
fn block_rows<S: Simd>(
    simd: S,
    x: &[f32],
    values: &[i8],
    scales: &[f32],
    input: usize,
    y: &mut [f32],
    expand: impl Fn(&[i8], &[f32], &mut [f32]),
) {
    let outputs = values.len() / input;
    let mut row = vec![0.0; input];
    let row_scales = scales.chunks_exact(input / Q4_BLOCK_WEIGHTS);
    for (j, (values, scales)) in values.chunks_exact(input).zip(row_scales).enumerate() {
        expand(values, scales, &mut row);
        dots(simd, x, &row, j, outputs, y);
    }
}

/// Block weights into f32, a weight at a time (also a whole matrix's, `super::matrix`).
#[inline(always)]
pub(super) fn expand(values: &[i8], scales: &[f32], row: &mut [f32]) {
    let blocks = row.chunks_exact_mut(Q4_BLOCK_WEIGHTS);
    for ((out, values), &scale) in blocks
        .zip(values.chunks_exact(Q4_BLOCK_WEIGHTS))
        .zip(scales)
    {
        for (o, &v) in out.iter_mut().zip(values) {
            *o = f32::from(v) * scale;
        }
    }
}

/// One block row into f32, sixteen weights at a time: bytes widened to 16 and then 32 bits,
/// converted and scaled in AVX2 vectors. The same values as [`expand`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn expand_avx2(simd: pulp::x86::V3, values: &[i8], scales: &[f32], row: &mut [f32]) {
    use pulp::bytemuck::cast;
    use pulp::{i8x16, i16x8};
    let (out_blocks, _) = row.as_chunks_mut::<Q4_BLOCK_WEIGHTS>();
    let (value_blocks, _) = values.as_chunks::<Q4_BLOCK_WEIGHTS>();
    for ((out, values), &scale) in out_blocks.iter_mut().zip(value_blocks).zip(scales) {
        let scale = simd.splat_f32s(scale);
        let (outs, _) = out.as_chunks_mut::<16>();
        let (ins, _) = values.as_chunks::<16>();
        for (out, &values) in outs.iter_mut().zip(ins) {
            let wide = simd.convert_i8x16_to_i16x16(cast::<[i8; 16], i8x16>(values));
            let [low, high]: [i16x8; 2] = cast(wide);
            let float = |half: i16x8| {
                let ints = simd.convert_i16x8_to_i32x8(half);
                cast::<_, [f32; 8]>(simd.mul_f32s(simd.convert_i32x8_to_f32x8(ints), scale))
            };
            *out = cast([float(low), float(high)]);
        }
    }
}

/// Column `j` of `y`: the dot of weight row `w` with every row of `x`.
#[inline(always)]
fn dots<S: Simd>(simd: S, x: &[f32], w: &[f32], j: usize, outputs: usize, y: &mut [f32]) {
    let input = w.len();
    let (w_vectors, w_tail) = S::as_simd_f32s(w);
    // Four input rows share each load of the weight row.
    let mut blocks = x.chunks_exact(4 * input);
    let mut r = 0;
    for block in blocks.by_ref() {
        let rows: [&[f32]; 4] = std::array::from_fn(|i| &block[i * input..(i + 1) * input]);
        let split = rows.map(S::as_simd_f32s);
        let [x0, x1, x2, x3] = split.map(|(vectors, _)| vectors);
        // Four named accumulators stay in registers (an array of them was kept on the
        // stack, a store and a load per multiply-add).
        let zero = simd.splat_f32s(0.0);
        let (mut a0, mut a1, mut a2, mut a3) = (zero, zero, zero, zero);
        let lanes = w_vectors.iter().zip(x0).zip(x1).zip(x2).zip(x3);
        for ((((&wv, &v0), &v1), &v2), &v3) in lanes {
            a0 = simd.mul_add_e_f32s(v0, wv, a0);
            a1 = simd.mul_add_e_f32s(v1, wv, a1);
            a2 = simd.mul_add_e_f32s(v2, wv, a2);
            a3 = simd.mul_add_e_f32s(v3, wv, a3);
        }
        let acc = [a0, a1, a2, a3];
        for (i, (a, (_, x_tail))) in acc.iter().zip(&split).enumerate() {
            y[(r + i) * outputs + j] = simd.reduce_sum_f32s(*a) + scalar_dot(x_tail, w_tail);
        }
        r += 4;
    }
    for row in blocks.remainder().chunks_exact(input) {
        let (x_vectors, x_tail) = S::as_simd_f32s(row);
        let mut acc = simd.splat_f32s(0.0);
        for (&xv, &wv) in x_vectors.iter().zip(w_vectors) {
            acc = simd.mul_add_e_f32s(xv, wv, acc);
        }
        y[r * outputs + j] = simd.reduce_sum_f32s(acc) + scalar_dot(x_tail, w_tail);
        r += 1;
    }
}

#[inline(always)]
fn scalar_dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the plain triple loop, for every row count up to nine (the blocks of four
    /// and the remainder) and an input length that leaves a tail after the vectors.
    #[test]
    fn matches_the_plain_product() {
        let input = 37;
        let outputs = 5;
        let weight: Vec<f32> = (0..input * outputs)
            .map(|i| ((i * 7 % 11) as f32 - 5.0) / 3.0)
            .collect();
        for rows in 1..=9 {
            let x: Vec<f32> = (0..rows * input)
                .map(|i| ((i * 5 % 13) as f32 - 6.0) / 4.0)
                .collect();
            let y = product(&x, Rows::Dense(&weight), input).unwrap();
            assert_eq!(y.len(), rows * outputs);
            for r in 0..rows {
                for j in 0..outputs {
                    let want: f32 = (0..input)
                        .map(|k| x[r * input + k] * weight[j * input + k])
                        .sum();
                    let got = y[r * outputs + j];
                    assert!(
                        (got - want).abs() < 1e-4,
                        "rows {rows}, y[{r}][{j}] = {got}, want {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn refuses_lengths_that_do_not_fit() {
        assert_eq!(product(&[1.0; 5], Rows::Dense(&[1.0; 4]), 2), None);
        assert_eq!(product(&[1.0; 4], Rows::Dense(&[1.0; 5]), 2), None);
        assert_eq!(product(&[1.0; 4], Rows::Dense(&[1.0; 4]), 0), None);
        let values = [1i8; 64];
        let blocks = |scales: &'static [f32], input| {
            product(
                &[1.0; 64],
                Rows::Blocks {
                    values: &values,
                    scales,
                },
                input,
            )
        };
        assert_eq!(blocks(&[1.0], 32), None); // one scale for two blocks
        assert_eq!(blocks(&[1.0; 4], 16), None); // rows shorter than a block
        assert_eq!(blocks(&[2.0; 2], 32), Some(vec![64.0; 4]));
        let none = Rows::Blocks {
            values: &[],
            scales: &[],
        };
        assert_eq!(product(&[0.0; 32], none, 32), Some(Vec::new())); // no outputs
    }

    /// AVX2's expansion gives exactly the plain one's values, where the CPU has it.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn both_expansions_agree() {
        let Some(v3) = pulp::x86::V3::try_new() else {
            return;
        };
        let values: Vec<i8> = (0..96).map(|i| (i * 5 % 16) as i8 - 8).collect();
        let scales = [0.5, -1.25, 3.0e-3];
        let (mut plain, mut wide) = (vec![0.0; 96], vec![1.0; 96]);
        expand(&values, &scales, &mut plain);
        v3.vectorize(|| expand_avx2(v3, &values, &scales, &mut wide));
        assert_eq!(plain, wide);
        assert_eq!(plain[1], -1.5); // (5 - 8) × 0.5
    }
}

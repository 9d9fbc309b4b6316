//! The matrix product for a few rows: a query is a handful of tokens, so `x Wᵀ` with `x` of
//! 2–24 rows is a stack of dot products. A general product (matrixmultiply) first packs the
//! whole weight matrix, which at this size costs more than the arithmetic; here each weight
//! row is read once and its dot taken with every input row, in the widest vectors the CPU
//! has (picked at run time by `pulp`, which keeps the code free of `unsafe`).

use pulp::{Arch, Simd, WithSimd};

/// `y = x Wᵀ` for `x` of `rows × input` and `W` of `outputs × input`, both row-major;
/// `y` is `rows × outputs`, row-major. `None` when the lengths do not fit those shapes.
pub(super) fn product(x: &[f32], weight: &[f32], input: usize) -> Option<Vec<f32>> {
    if input == 0 || !x.len().is_multiple_of(input) || !weight.len().is_multiple_of(input) {
        return None;
    }
    let outputs = weight.len() / input;
    let mut y = vec![0.0; x.len() / input * outputs];
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
    weight: &'a [f32],
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
        for (j, w) in weight.chunks_exact(input).enumerate() {
            let (w_vectors, w_tail) = S::as_simd_f32s(w);
            // Four input rows share each load of the weight row.
            let mut blocks = x.chunks_exact(4 * input);
            let mut r = 0;
            for block in blocks.by_ref() {
                let rows: [&[f32]; 4] = std::array::from_fn(|i| &block[i * input..(i + 1) * input]);
                let split = rows.map(S::as_simd_f32s);
                let mut acc = [simd.splat_f32s(0.0); 4];
                for (k, &wv) in w_vectors.iter().enumerate() {
                    for (a, (xv, _)) in acc.iter_mut().zip(&split) {
                        *a = simd.mul_add_e_f32s(xv[k], wv, *a);
                    }
                }
                for (i, (a, (_, x_tail))) in acc.iter().zip(&split).enumerate() {
                    y[(r + i) * outputs + j] =
                        simd.reduce_sum_f32s(*a) + scalar_dot(x_tail, w_tail);
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
            let y = product(&x, &weight, input).unwrap();
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
        assert_eq!(product(&[1.0; 5], &[1.0; 4], 2), None);
        assert_eq!(product(&[1.0; 4], &[1.0; 5], 2), None);
        assert_eq!(product(&[1.0; 4], &[1.0; 4], 0), None);
    }
}

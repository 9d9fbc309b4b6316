//! A catalog's tool vectors for one encoder, and how a query is compared with them. For a
//! multilingual encoder the vectors are also kept with their script's mean taken out, so a
//! query in CJK characters is compared by meaning and not by language.

use std::sync::Arc;

use crate::semantic::Encoder;

/// Tools of one script needed before their mean vector is taken out.
const CENTROID_MIN: usize = 5;

/// One unit vector per tool, row-major.
pub(super) struct Vectors {
    pub(super) encoder: Arc<Encoder>,
    rows: Vec<f32>,
    /// For a multilingual encoder, the tools' vectors with the mean vector of their script
    /// taken out (CJK or not), and the two means: a query written in CJK characters is
    /// compared with these, its own script's mean taken out too, so that what is left is
    /// the meaning, not the language (otherwise the few tools described in Chinese draw
    /// every Chinese query). Other queries are compared with the vectors as they are.
    centered: Option<Centered>,
}

/// The tools' vectors with their script's mean taken out, and the two means.
struct Centered {
    rows: Vec<f32>,
    means: [Option<Vec<f32>>; 2],
}

impl Centered {
    /// `None` when neither script has [`CENTROID_MIN`] tools.
    fn of(rows: &[f32], texts: &[String], dims: usize) -> Option<Self> {
        let mut means = [None, None];
        for (lang, mean) in means.iter_mut().enumerate() {
            let members: Vec<&[f32]> = rows
                .chunks_exact(dims.max(1))
                .zip(texts)
                .filter(|(r, t)| script(t) == lang && embedded(r))
                .map(|(r, _)| r)
                .collect();
            if members.len() >= CENTROID_MIN {
                let mut sum = vec![0f32; dims];
                for r in &members {
                    for (s, x) in sum.iter_mut().zip(*r) {
                        *s += x / members.len() as f32;
                    }
                }
                *mean = Some(sum);
            }
        }
        if means.iter().all(Option::is_none) {
            return None;
        }
        let mut centered_rows = rows.to_vec();
        for (row, text) in centered_rows.chunks_exact_mut(dims.max(1)).zip(texts) {
            if let Some(mean) = &means[script(text)]
                && embedded(row)
            {
                centered(row, mean);
            }
        }
        Some(Self {
            rows: centered_rows,
            means,
        })
    }
}

/// A tool whose text could not be embedded has a row of zeros: it stays zero (no cosine).
fn embedded(row: &[f32]) -> bool {
    row.iter().any(|&x| x != 0.0)
}

/// Subtracts `centroid` from `v` and scales the rest to unit length.
fn centered(v: &mut [f32], centroid: &[f32]) {
    for (x, c) in v.iter_mut().zip(centroid) {
        *x -= c;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > f32::EPSILON {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

impl Vectors {
    pub(super) fn from(
        encoder: Arc<Encoder>,
        vectors: Vec<Option<Vec<f32>>>,
        texts: &[String],
    ) -> Self {
        let dims = encoder.dims();
        let mut rows = Vec::with_capacity(vectors.len() * dims);
        for v in vectors {
            match v {
                Some(v) if v.len() == dims => rows.extend(v),
                _ => rows.extend(std::iter::repeat_n(0.0, dims)),
            }
        }
        let centered = encoder
            .multilingual()
            .then(|| Centered::of(&rows, texts, dims))
            .flatten();
        Self {
            encoder,
            rows,
            centered,
        }
    }

    /// The query's cosine with each tool: for a query in CJK characters and a multilingual
    /// encoder, with each script's mean taken out.
    pub(super) fn cosines(&self, mut query: Vec<f32>, text: &str) -> Vec<f32> {
        let rows = match &self.centered {
            Some(c) if script(text) == CJK => {
                if let Some(mean) = &c.means[CJK] {
                    centered(&mut query, mean);
                }
                &c.rows
            }
            _ => &self.rows,
        };
        rows.chunks_exact(query.len().max(1))
            .map(|row| row.iter().zip(&query).map(|(a, b)| a * b).sum())
            .collect()
    }
}

/// The index of a text written mostly in CJK characters (any other text is 0).
pub(super) const CJK: usize = 1;

/// [`CJK`] or not, as an index.
pub(super) fn script(text: &str) -> usize {
    usize::from(cjk_share(text) > 0.3)
}

/// The share of a text's non-blank characters that are CJK.
fn cjk_share(text: &str) -> f32 {
    let (cjk, all) = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .fold((0u32, 0u32), |(cjk, all), c| {
            (cjk + u32::from(crate::tokenize::is_cjk(c)), all + 1)
        });
    if all == 0 {
        0.0
    } else {
        cjk as f32 / all as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_s_mean_is_taken_out_and_an_unembedded_tool_stays_zero() {
        // Two topics (axes 0 and 1) in two scripts; the script adds its own offset (axis 2
        // for CJK, axis 3 for the rest), as a multilingual model's vectors carry language.
        let unit = |v: [f32; 4]| {
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.map(|x| x / n)
        };
        let mut rows = Vec::new();
        let mut texts = Vec::new();
        for i in 0..6 {
            let topic = if i % 2 == 0 { [1.0, 0.0] } else { [0.0, 1.0] };
            rows.extend(unit([topic[0], topic[1], 2.0, 0.0]));
            texts.push(String::from("中文工具说明"));
            rows.extend(unit([topic[0], topic[1], 0.0, 2.0]));
            texts.push(String::from("an English tool"));
        }
        rows.extend([0.0; 4]);
        texts.push(String::from("not embedded"));
        let c = Centered::of(&rows, &texts, 4).unwrap();
        assert!(c.means.iter().all(Option::is_some));
        assert_eq!(&c.rows[c.rows.len() - 4..], &[0.0; 4]);
        // Centered, a CJK tool and an English tool on the same topic point the same way.
        let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        let (zh, en) = (&c.rows[0..4], &c.rows[4..8]);
        assert!(cos(zh, en) > 0.99, "{zh:?} {en:?}");
        assert!(cos(&rows[0..4], &rows[4..8]) < 0.3);
        assert_eq!(script("知乎热榜"), CJK);
        assert_eq!(script("docker 容器的全部输出日志"), CJK);
        assert_eq!(script("docker container logs"), 0);
        // Too few tools of a script: no mean for it.
        assert!(Centered::of(&rows[..8], &texts[..2], 4).is_none());
    }
}

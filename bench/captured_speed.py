"""Part `captured` of the harness: speed on captured activations instead of Gaussian draws.

FA3's time does not depend on the data; fp8attn's does, through its O rescales, which run only
where a row's running max moves past the slack: real scores move it in several times as many
key blocks as Gaussian ones (lab/results/study/2026-12-03-rescale-slack-fp16.txt). So the sweep's
Gaussian rows can flatter the lead; these rows check it on a model's own Q, K, V.

Each capture of the pack (q (1, s, hq, 128), k and v (1, s, hkv, 128), BF16) whose softmax scale
is the kernel's default 1/sqrt(128) becomes one MHA shape (B, s, s, H, H): query head i reads the
capture's query head i % hq, key and value head i the capture's KV head of that query head, and
every batch entry the same tokens (B x s x H x 128 E4M3 per tensor stays above the L2 at the
quick pack's 2048 tokens). Pairings, head to head only: fp8attn against FA3 FP8 (both on the same
per-head E4M3 inputs) and the accurate mode against FA3 BF16 (on the BF16 tensors). The records
carry `data` (the capture's name) and live in res["speed_captured"], apart from the sweep's.
"""
from __future__ import annotations

import math

import report
import speed
import sweep

B, H = 8, 32
PAIRINGS = (("fp8attn", "fa3_fp8"), (report.ACCURATE, "fa3_bf16"))
DEFAULT_SCALE = 1.0 / math.sqrt(128)


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def tile(x, heads: list, b: int):
    """(1, s, h, d) -> (b, s, len(heads), d): the listed heads, the batch entry repeated."""
    y = x[:, :, heads]
    if _is_torch(y):
        return y.repeat(b, 1, 1, 1).contiguous()
    import numpy as np
    return np.ascontiguousarray(np.tile(y, (b, 1, 1, 1)))


def mha_inputs(qkv, b: int = B, h: int = H, shift: int = 0):
    """A capture's (q, k, v) as MHA tensors of h heads (see the module's docstring); shift: query
    head i reads capture head (i + shift) % hq (another input set of the same capture)."""
    q, k, v = qkv
    hq, hkv = q.shape[2], k.shape[2]
    q_heads = [(i + shift) % hq for i in range(h)]
    kv_heads = [qh // (hq // hkv) for qh in q_heads]
    return tile(q, q_heads, b), tile(k, kv_heads, b), tile(v, kv_heads, b)


def usable(scale) -> bool:
    """The speed runners call the kernel at its default scale: captures packed with another one
    (a head dim 64 model zero-padded to 128) are left out."""
    return scale is None or abs(scale - DEFAULT_SCALE) < 1e-9


def run(args, backend, fa3, notes, log) -> list:
    captured = [(n, qkv) for n, qkv, scale in backend.captures(args.captures, notes) if usable(scale)]
    if not captured:
        notes.append(f"captured speed: no capture at the default softmax scale in {args.captures}")
        log(notes[-1])
        return []
    names = list(dict.fromkeys(m for pair in PAIRINGS for m in pair))
    recs = []
    for name, qkv in captured:
        q, k, v = mha_inputs(qkv, B if not args.dry_run else 1, H if not args.dry_run else 2)
        s = q.shape[1]
        sets = [{"bf16": (q, k, v), "quantized": backend.quantize(q, k, v)}]
        for causal in (False, True):
            shape = sweep.Shape(q.shape[0], s, s, q.shape[2], k.shape[2], 128, causal)
            try:
                runners = backend.speed_runners(names, shape, sets, fa3, notes)
            except Exception as e:
                runners = {m: f"{type(e).__name__}: {e}" for m in names}
            for a, b in PAIRINGS:
                got = speed.run_pairing_or_failed(shape, a, b, "head_to_head", runners, None, args.runs,
                                                  args.block, {"data": name, "block": args.block},
                                                  failed_extra={"data": name})
                recs += got
                ra, rb = got
                log(f"captured {name} {shape.label():<34} {a} {report.fmt_tf(ra)} vs {b} "
                    f"{report.fmt_tf(rb)}  ratio {speed.ratio_text(ra, rb)}")
            del runners
        del sets, q, k, v
        backend.release()
    return recs


def table(recs: list) -> list[str]:
    """One line per (capture, mask): each pairing's two TFLOP/s and their ratio (report.pair, on
    each capture's own records: every capture has the same shape)."""
    head = "| data | b x s, h | causal |"
    rule = "|---|---|---|"
    for a, b in PAIRINGS:
        head += f" {a} | {b} | {a} / {b} |"
        rule += "---:|---:|---:|"
    lines = [head, rule]
    for data in dict.fromkeys(r["data"] for r in recs):
        mine = [r for r in recs if r["data"] == data]
        idx = report._index(mine)
        for row in report.rows(mine):
            (b_, s, _, h, _, _), causal = row
            cells = [data, f"{b_} x {s}, {h}/{h}", "yes" if causal else "no"]
            for a, b in PAIRINGS:
                ra, rb, ratio = report.pair(idx, row, a, b)
                cells += [report.fmt_tf(ra) if ra else "-", report.fmt_tf(rb) if rb else "-",
                          f"{ratio:.3f}" if ratio else "-"]
            lines.append("| " + " | ".join(cells) + " |")
    return lines

#!/usr/bin/env python3
"""The harness's per-head E4M3 inputs, rebuilt on the CPU in numpy: does the GPU's `floor` record
(BF16 of exact attention on the dequantized inputs vs exact attention on the BF16 data,
bench/accuracy.py) come out of python/fp8attn/quantize.py's arithmetic? No torch, no GPU.

python/fp8attn/quantize.py: descale = amax / 448 per (batch, KV head), codes = float8_e4m3fn of
clamp(x.float() / descale, +-448). On the GPU torch computes `amax / 448.0` (a CUDA tensor
divided by a Python float) as amax * fp32(1/448) (aten's div_true_kernel_cuda: a CPU-scalar
divisor becomes a reciprocal multiply), then `x.float() / descale` (a tensor divisor) as a true
FP32 division, then the cast with round-to-nearest-even. Two conventions are rebuilt:

  exact  descale = fp32(amax / 448)              (the model's default, NUMERICS' amax/448)
  torch  descale = fp32(amax * fp32(1 / 448))    (what the harness ran; the model's torch_scale=1)

For some amax (0.6015625, 10.5, 12.25: amax / 448 = a short dyadic number) the two descales are
one ulp apart, x / descale hits E4M3 midpoints exactly under `exact`, and falls just below them
under `torch`: those ties round to even in one and toward zero in the other.

  python3 tools/wgmma_accum/floor_check.py --gpu results/<date>-h200-<commit>.json \
      [--pack .carry/captures] [--out results/accum-floor-check-<commit>]

Writes <out>.json/.md (command, commit, machine, date): per capture file and mask, the GPU's
floor of fa3_fp8 (inputs per_head) and the two rebuilt floors with their ratios to it.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import pathlib
import platform
import subprocess
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
E4M3_MAX = 448.0


def load_pack_file(path: pathlib.Path) -> tuple[dict, dict]:
    """safetensors with BF16 q, k, v -> ({name: float32 array}, metadata)."""
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        if spec["dtype"] != "BF16":
            raise SystemExit(f"{path}: {name} is {spec['dtype']}, not BF16")
        a, b = spec["data_offsets"]
        bits = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.uint16).astype(np.uint32) << 16
        out[name] = bits.view(np.float32).reshape(spec["shape"])
    return out, header.get("__metadata__", {})


def to_e4m3(y: np.ndarray) -> np.ndarray:
    """FP32 values (already clamped to +-448) -> E4M3 values (float64), round to nearest even,
    subnormals kept (quantum 2^-9 below 2^-6), as torch's float8_e4m3fn cast."""
    y = np.asarray(y, dtype=np.float64)
    a = np.abs(y)
    if not np.all(np.isfinite(a)) or a.max(initial=0.0) > E4M3_MAX:
        raise ValueError("to_e4m3 takes finite values clamped to +-448")
    _, e = np.frexp(np.where(a > 0, a, 1.0))     # a = m * 2^e, m in [0.5, 1)
    quantum = np.exp2(np.maximum(e - 1, -6) - 3)  # 3 mantissa bits; normal exponents >= -6
    return np.sign(y) * np.round(a / quantum) * quantum  # a / quantum exact; np.round is RNE


def bf16(x: np.ndarray) -> np.ndarray:
    """float32 -> BF16 (round to nearest even), as float32."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)


def descale(amax: np.float32, convention: str) -> np.float32:
    if amax == 0:
        return np.float32(1.0)
    if convention == "torch":
        return np.float32(amax * np.float32(np.float32(1.0) / np.float32(E4M3_MAX)))
    return np.float32(amax / np.float32(E4M3_MAX))


def quantize_per_head(x: np.ndarray, group: int, convention: str) -> tuple[np.ndarray, np.ndarray]:
    """x (b, s, h, d) float32 -> (dequantized float64, descales (b, h // group)): one scale per
    (batch, KV head) over its `group` heads, as quantize_per_head."""
    b, s, h, d = x.shape
    out = np.empty(x.shape, dtype=np.float64)
    scales = np.empty((b, h // group), dtype=np.float32)
    for bi in range(b):
        for g in range(h // group):
            part = x[bi, :, g * group:(g + 1) * group]
            ds = descale(np.float32(np.abs(part).max()), convention)
            y = np.clip((part / ds).astype(np.float32), -E4M3_MAX, E4M3_MAX)
            out[bi, :, g * group:(g + 1) * group] = to_e4m3(y) * np.float64(ds)
            scales[bi, g] = ds
    return out, scales


def exact_attention(q, k, v, scale: float, causal: bool) -> np.ndarray:
    """FP64 attention, q (b, sq, h, d), k and v (b, sk, h_kv, d); causal bottom-right aligned."""
    b, sq, h, _ = q.shape
    sk, h_kv = k.shape[1], k.shape[2]
    group = h // h_kv
    out = np.zeros(q.shape, dtype=np.float64)
    visible = np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq)
    for bi in range(b):
        for hi in range(h):
            s = (q[bi, :, hi].astype(np.float64) @ k[bi, :, hi // group].astype(np.float64).T) * scale
            if causal:
                s = np.where(visible, s, -np.inf)
            s -= s.max(axis=1, keepdims=True)
            p = np.exp(s)
            out[bi, :, hi] = (p @ v[bi, :, hi // group].astype(np.float64)) / p.sum(axis=1, keepdims=True)
    return out


def rmse(a, b) -> float:
    return float(np.sqrt(np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2)))


def tie_fraction(x: np.ndarray, ds: np.float32) -> float:
    """Share of x / descale (FP32) exactly on an E4M3 midpoint."""
    a = np.abs(np.clip((x / ds).astype(np.float32), -E4M3_MAX, E4M3_MAX).astype(np.float64))
    _, e = np.frexp(np.where(a > 0, a, 1.0))
    t = a / np.exp2(np.maximum(e - 1, -6) - 3)
    return float(np.mean(t - np.floor(t) == 0.5))


def git(*a) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True).stdout.strip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", type=pathlib.Path, required=True, help="bench/harness.py results JSON")
    ap.add_argument("--pack", type=pathlib.Path, default=ROOT / ".carry/captures")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "results/accum-floor-check")
    ap.add_argument("--method", default="fa3_fp8", help="a method on the per_head inputs")
    args = ap.parse_args(argv)
    gpu = {(r["dataset"], bool(r["causal"])): r["rmse"]
           for r in json.loads(args.gpu.read_text()).get("accuracy", [])
           if r["method"] == args.method and r["reference"] == "floor" and r.get("inputs") == "per_head"}
    rows = []
    for f in sorted(args.pack.glob("*.safetensors")):
        t, meta = load_pack_file(f)
        q, k, v = t["q"], t["k"], t["v"]
        scale = float(meta["softmax_scale"]) if meta.get("softmax_scale") else 1.0 / math.sqrt(q.shape[-1])
        group = q.shape[2] // k.shape[2]
        deq, info = {}, {}
        for conv in ("exact", "torch"):
            (dq, sq_), (dk, sk_), (dv, sv_) = (quantize_per_head(q, group, conv),
                                               quantize_per_head(k, 1, conv), quantize_per_head(v, 1, conv))
            deq[conv] = (dq, dk, dv)
            info[conv] = {n: {"descale": float(s.reshape(-1)[0]).hex(),
                              "ties": tie_fraction(x[:, :, :group if n == "q" else 1], s.reshape(-1)[0])}
                          for n, x, s in (("q", q, sq_), ("k", k, sk_), ("v", v, sv_))}
        for causal in (False, True):
            ref = exact_attention(q, k, v, scale, causal)
            row = {"dataset": f.stem, "causal": causal, "softmax_scale": scale,
                   "gpu_floor": gpu.get((f"captured:{f.stem}", causal))}
            for conv in ("exact", "torch"):
                o = exact_attention(*deq[conv], scale, causal)
                row[f"{conv}_floor"] = rmse(bf16(o.astype(np.float32)), ref)
                row[f"{conv}_ratio"] = row[f"{conv}_floor"] / row["gpu_floor"] if row["gpu_floor"] else None
            row["scales"] = info
            rows.append(row)
            print(f"{f.stem} causal={int(causal)}: GPU {row['gpu_floor']}, exact {row['exact_floor']:.7g}, "
                  f"torch {row['torch_floor']:.7g}", flush=True)
    prov = {"command": " ".join(sys.argv),
            "commit": git("rev-parse", "HEAD"), "machine": platform.node(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "gpu_results": str(args.gpu), "pack": str(args.pack), "method": args.method}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps({"provenance": prov, "rows": rows}, indent=1) + "\n")
    fmt = lambda x: "-" if x is None else f"{x:.7g}"
    lines = ["# The per-head inputs' floor: the GPU's records vs quantize.py rebuilt in numpy", "",
             f"Written by `{prov['command']}` at {prov['commit'][:12]} on {prov['machine']}, {prov['date']}; "
             f"GPU records from `{args.gpu}` (method {args.method}, reference floor); pack `{args.pack}`.", "",
             "exact: descale = fp32(amax / 448); torch: descale = fp32(amax * fp32(1/448)), as torch "
             "runs `amax / 448.0` on a CUDA tensor. Ties: share of x / descale exactly on an "
             "E4M3 midpoint (batch 0, KV head 0).", "",
             "| dataset | causal | GPU floor | exact | exact / GPU | torch | torch / GPU | ties under exact (Q, K, V) | descale exact / torch of the most tied |",
             "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        s = r["scales"]
        most = max("qkv", key=lambda n: s["exact"][n]["ties"])
        ties = ", ".join(f"{s['exact'][n]['ties']:.4f}" for n in "qkv")
        lines.append(f"| {r['dataset']} | {'yes' if r['causal'] else 'no'} | {fmt(r['gpu_floor'])} | "
                     f"{fmt(r['exact_floor'])} | {fmt(r['exact_ratio'])} | {fmt(r['torch_floor'])} | "
                     f"{fmt(r['torch_ratio'])} | "
                     f"{ties} | "
                     f"{most}: {s['exact'][most]['descale']} / {s['torch'][most]['descale']} |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}.json/.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())

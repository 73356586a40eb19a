#!/usr/bin/env python3
"""Lab probe (GPU): where a causal tile's extra time goes, fp8attn and FA3 FP8 black box.

At the seed shape Nsight Compute put fp8attn ~1.5% behind FA3 FP8 in cycles non-causal and ~8%
causal, with the same 4096 tiles either way: the causal excess is ~3-5k cycles a tile, more than
one 192-key block. This probe separates a tile's costs for both kernels alike, from timings only:
  - one query block per (batch, head) (sq = 128), b x h = 1056 tiles = 8 per SM on 132 SMs,
    sk in multiples of 1344 (= 7 x 192 = 6 x 224, whole blocks for both kernels' block sizes);
  - non-causal: time per tile = a + b * sk: a is the per-tile fixed cost (Q load, prologue QK^T
    and softmax alone, drain P V, epilogue), b the per-key cost;
  - causal (bottom-right, so the tile's rows see sk - 127 .. sk keys): the same keys visited, one
    block masked, and that block first: causal - non-causal is the masked block's extra cost.
Each sk row times fp8attn and FA3 FP8 head to head (both masks), so the two fits share clocks.

  python3 lab/probes/tile_cost.py --lib .carry/libfp8attn.so [--variant-lib L --variant-tags a,b] --out DIR
Writes DIR/tile_cost.json (command, commit, GPU, date, records, fits).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import probe_doc  # noqa: E402

import fp8attn_calls as fc  # noqa: E402
import methods  # noqa: E402
import speed  # noqa: E402
from kernel_ab import inputs  # noqa: E402  (the same Gaussian per-head inputs)
from sweep import Shape  # noqa: E402

B, H, SQ = 33, 32, 128
# 32 query heads on one KV head: the 32 tiles of a batch share K and V, read from L2 (with one
# head per KV head the probe ran near HBM bandwidth: lab/results/probe/*-tile-cost-mha.json).
H_KV = 1
TILES_PER_SM = B * H // 132
SKS = (1344, 2688, 5376, 8064, 10752)


def fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - slope * mx, slope


def child(args, fa3) -> list:
    lib = fc.load(args.lib)
    records = []
    for sk in SKS:
        for causal in (False, True):
            shape = Shape(B, SQ, sk, H, args.h_kv, 128, causal)
            sets = inputs(shape, args.seed)
            mine = methods.rotating([fc.kernel_runner(lib, qz, causal, "fp8attn") for qz in sets])
            theirs = methods.rotating([methods._fa3_fp8(fa3, qz, causal) for qz in sets])
            ta, tb = speed.head_to_head(mine, theirs, args.runs)
            for name, t in ((args.tag, ta), ("fa3_fp8", tb)):
                r = speed.record(name, shape, t, f"head_to_head:{'fa3_fp8' if name == args.tag else args.tag}",
                                 lib=args.tag)
                r["us_per_tile"] = r["ms_median"] * 1e3 / TILES_PER_SM
                records.append(r)
            print(f"  sk={sk:6d} causal={int(causal)} {args.tag:14s} {records[-2]['us_per_tile']:7.3f} us/tile"
                  f"  fa3_fp8 {records[-1]['us_per_tile']:7.3f}  ratio(time) "
                  f"{records[-2]['ms_median'] / records[-1]['ms_median']:.3f}", flush=True)
            del sets, mine, theirs
            torch.cuda.empty_cache()
    return records


def fits(records) -> list:
    out = []
    for lib in sorted({r["lib"] for r in records}):
        for method in (lib, "fa3_fp8"):
            rows = [r for r in records if r["lib"] == lib and r["method"] == method]
            nc = {r["sk"]: r["us_per_tile"] for r in rows if not r["causal"] and r["sk"] > 2048}
            c = {r["sk"]: r["us_per_tile"] for r in rows if r["causal"]}
            ncall = {r["sk"]: r["us_per_tile"] for r in rows if not r["causal"]}
            a, b = fit(list(nc), list(nc.values()))
            delta = {sk: c[sk] - ncall[sk] for sk in c if sk in ncall}
            out.append({"lib": lib, "method": method, "fixed_us_per_tile": a, "us_per_1k_keys": 1e3 * b,
                        "masked_block_extra_us": delta, "fit_rows_sk": sorted(nc)})
            print(f"fit {lib:14s} {method:14s} fixed {a:6.3f} us/tile, {1e3 * b:6.3f} us per 1k keys;"
                  f" causal - full per tile: " + " ".join(f"{sk}:{d:+.3f}" for sk, d in sorted(delta.items())))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--variant-lib", action="append", default=[])
    ap.add_argument("--variant-tags", default="fp8attn")
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--h-kv", type=int, default=H_KV)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--tag", default="fp8attn", help=argparse.SUPPRESS)
    ap.add_argument("--child-json", help=argparse.SUPPRESS)
    args = ap.parse_args()
    fa3 = methods.load_fa3()
    if isinstance(fa3, str):
        print(f"tile_cost: {fa3}")
        return 1
    if args.child_json:
        Path(args.child_json).write_text(json.dumps(child(args, fa3)))
        return 0
    records = []
    tags = args.variant_tags.split(",")
    for tag, path in zip(tags, [args.lib] + args.variant_lib):
        out = Path(args.out, f".{tag}.json")
        rc = subprocess.call([sys.executable, __file__, "--lib", path, "--out", args.out, "--runs",
                              str(args.runs), "--h-kv", str(args.h_kv), "--seed", str(args.seed), "--tag", tag, "--child-json", str(out)])
        if rc == 0 and out.exists():
            records += json.loads(out.read_text())
            out.unlink()
        else:
            records.append({"lib": tag, "error": f"child exited {rc}"})
    ok = [r for r in records if "error" not in r]
    doc_fits = fits(ok) if ok else []
    path = probe_doc.write(args.out, "tile_cost.json", records + [{"fits": doc_fits}], torch.cuda.get_device_name())
    print(f"tile_cost: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Lab probe (GPU; the library of lab/variants/tile-times.patch): how long each tile takes on
each SM, for issue 13's sq 2k x sk 16k GQA non-causal row (512 tiles, 3.9 per SM) beside
16k x 16k GQA (4096 tiles of the same length) and 16 x 1k.

Nsight Compute (lab/results/ncu/2026-12-04-h200-waves-2k-vs-16k.*) showed that at sq 2k the
busiest SM's active cycles are 8% above the SMs' mean for fp8attn and 3% for FA3 FP8 (the 4-vs-3
tiles per SM account for 3%): fp8attn's SMs take different times for the same tiles. This
records, per (tile, warpgroup), the start and end (globaltimer ns) and the SM, and prints per
shape: the launch's span, the per-SM mean tile time (spread, slowest and fastest SMs, by SM id's
parity and by blocks of SM ids), and what the span would be if every SM ran at the median.

usage: FP8ATTN lab library; python3 lab/probes/tile_times.py LIB OUT.json
"""
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import fp8attn_calls as fc  # noqa: E402

SHAPES = [(1, 2048, 16384, 32, 8), (1, 16384, 16384, 32, 8), (16, 1024, 1024, 32, 32)]


def one(lib, b, sq, sk, h, hkv, path):
    torch.manual_seed(0)
    q = torch.randn(b, sq, h, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, sk, hkv, 128, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, sk, hkv, 128, device="cuda", dtype=torch.bfloat16)
    qz = fc.quantize_per_head(q, k, v)
    os.environ.pop("FP8ATTN_LAB_TILE_TIMES", None)
    run = fc.kernel_runner(lib, qz, False, "fp8attn")
    for _ in range(30):
        run()
    torch.cuda.synchronize()
    rows = []
    for rep in range(3):
        for _ in range(10):  # the launch before the recorded one, as in a timed stream
            run()
        os.environ["FP8ATTN_LAB_TILE_TIMES"] = path
        run()
        os.environ.pop("FP8ATTN_LAB_TILE_TIMES")
        a = np.fromfile(path, dtype=np.uint64).reshape(-1, 2, 3).astype(np.int64)
        rows.append(summary(a))
    return rows


def summary(a):
    """a: (tiles, 2 warpgroups, 3) of {start ns, end ns, SM}; the statistics of warpgroup 0's tiles."""
    rows = a.tolist()  # plain ints (JSON)
    t0 = min(min(r[0][0], r[1][0]) for r in rows)
    span = max(max(r[0][1], r[1][1]) for r in rows) - t0
    per_sm = {}
    for (start, end, sm), _ in rows:
        r = per_sm.setdefault(sm, {"n": 0, "sum": 0, "last_end": 0})
        r["n"] += 1
        r["sum"] += end - start
        r["last_end"] = max(r["last_end"], end - t0)
    means = {s: r["sum"] / r["n"] for s, r in per_sm.items()}
    vals = sorted(means.values())
    med = statistics.median(vals)
    slow = sorted(means, key=means.get)[-8:]
    fast = sorted(means, key=means.get)[:8]
    by_parity = {p: statistics.mean([m for s, m in means.items() if s % 2 == p]) for p in (0, 1)}
    by_block = {blk: statistics.mean([m for s, m in means.items() if s // 16 == blk])
                for blk in sorted({s // 16 for s in means})}
    counts = [r["n"] for r in per_sm.values()]
    ideal = max(counts) * med
    return {"tiles": len(rows), "sms": len(per_sm), "span_ns": span,
            "tile_ns_median": med, "tile_ns_min": vals[0], "tile_ns_max": vals[-1],
            "tile_ns_p10": vals[len(vals) // 10], "tile_ns_p90": vals[(9 * len(vals)) // 10],
            "tiles_per_sm": [min(counts), max(counts)],
            "slowest_sms": {s: round(means[s]) for s in slow}, "fastest_sms": {s: round(means[s]) for s in fast},
            "mean_by_sm_parity": by_parity, "mean_by_sm_id_block16": by_block,
            "span_if_every_sm_at_median_ns": ideal,
            "last_end_by_sm_ns": {s: r["last_end"] for s, r in sorted(per_sm.items())}}


def main():
    lib = fc.load(sys.argv[1])
    out = {"command": "python3 " + " ".join(sys.argv), "gpu": torch.cuda.get_device_name(),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "shapes": []}
    path = os.path.join(tempfile.mkdtemp(), "tile_times.bin")
    for b, sq, sk, h, hkv in SHAPES:
        reps = one(lib, b, sq, sk, h, hkv, path)
        out["shapes"].append({"b": b, "sq": sq, "sk": sk, "h": h, "h_kv": hkv, "reps": reps})
        for r in reps:
            print(f"b{b} sq{sq} sk{sk} h{h}/{hkv}: span {r['span_ns'] / 1e3:.1f} us, tile median "
                  f"{r['tile_ns_median'] / 1e3:.2f} us (p10 {r['tile_ns_p10'] / 1e3:.2f}, p90 "
                  f"{r['tile_ns_p90'] / 1e3:.2f}, min {r['tile_ns_min'] / 1e3:.2f}, max "
                  f"{r['tile_ns_max'] / 1e3:.2f}), tiles/SM {r['tiles_per_sm']}, span if every SM at "
                  f"the median {r['span_if_every_sm_at_median_ns'] / 1e3:.1f} us", flush=True)
        r = reps[-1]
        print("  by SM parity:", {k: round(v / 1e3, 2) for k, v in r["mean_by_sm_parity"].items()},
              " by SM id / 16:", {k: round(v / 1e3, 2) for k, v in r["mean_by_sm_id_block16"].items()})
        print("  slowest SMs:", r["slowest_sms"], " fastest:", r["fastest_sms"])
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1))
    print("wrote", sys.argv[2])


if __name__ == "__main__":
    main()

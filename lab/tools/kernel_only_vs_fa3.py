#!/usr/bin/env python3
"""Kernel-only error of fp8attn's E4M3 modes as a ratio to FA3 FP8's on the same per-head inputs,
per dataset and mask, from a harness results file (issue 14 item 2):
  python3 lab/tools/kernel_only_vs_fa3.py results/X.json [--methods fp8attn fp8attn_exact] > OUT.txt
Prints one line per (dataset, mask): RMSE and max ratios per method (<= 1.000: at or below FA3 FP8),
then per method the count of (dataset, mask) at or below on both, and the range of the ratios."""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--methods", nargs="+", default=["fp8attn", "fp8attn_exact"])
    args = ap.parse_args()
    res = json.load(open(args.results))
    ix = {(r["dataset"], r["causal"], r["method"]): r for r in res["accuracy"] if r["reference"] == "kernel_only"}
    cases = list(dict.fromkeys((ds, c) for ds, c, m in ix if m == "fa3_fp8"))
    print(f"# {args.results} (commit {res.get('commit')}, {res.get('gpu_name')}, {res.get('date')})")
    print(f"# kernel-only RMSE and max / FA3 FP8's, same per-head inputs; methods {' '.join(args.methods)}")
    stats = {m: {"ok": 0, "rmse": [], "max": []} for m in args.methods}
    for ds, c in cases:
        peer = ix[(ds, c, "fa3_fp8")]
        cells = []
        for m in args.methods:
            r = ix.get((ds, c, m))
            if not r:
                cells.append(f"{m} missing")
                continue
            rr, rm = r["rmse"] / peer["rmse"], r["max_abs"] / peer["max_abs"]
            stats[m]["rmse"].append(rr)
            stats[m]["max"].append(rm)
            stats[m]["ok"] += rr <= 1 and rm <= 1
            cells.append(f"{m} rmse {rr:.3f} max {rm:.3f}")
        print(f"{ds:40s} causal={int(c)}  " + "  ".join(cells))
    for m, s in stats.items():
        if s["rmse"]:
            print(f"{m}: at or below FA3 FP8 on both at {s['ok']} of {len(s['rmse'])}; RMSE ratio "
                  f"{min(s['rmse']):.3f}-{max(s['rmse']):.3f}, max ratio {min(s['max']):.3f}-{max(s['max']):.3f}")


if __name__ == "__main__":
    sys.exit(main())

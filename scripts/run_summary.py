#!/usr/bin/env python3
"""The few numbers of scripts/run.sh's CPU run that matter, read from the JSON fp8attn-eval wrote.

Per captured layer and mask: the error of the library's default scheme (pre-pass + kernel,
`fp8attn-default`) as a ratio to BF16-flash's error (the FA3-BF16 yardstick) and to FA3-style
FP8's error, end to end and kernel-only. Nothing is typed in: every figure is a ratio of two
records of the file; a record that is missing is reported as missing, never filled in.

    python3 scripts/run_summary.py results/run-cpu-model.json
"""
import json
import math
import sys

DEFAULT, BF16, FA3 = "fp8attn-default", "bf16-flash", "fa3-fp8"


def ratio(records, scheme, reference, base_scheme, base_reference):
    a = records.get((scheme, reference))
    b = records.get((base_scheme, base_reference))
    if a is None or b is None or a.get("rmse") is None or not b.get("rmse"):
        return None
    return a["rmse"] / b["rmse"]


def fmt(x, width, digits=2):
    if x is None or not math.isfinite(x):
        return f"{'missing':>{width}}"
    return f"{x:>{width}.{digits}f}"


def main(path):
    with open(path) as f:
        recs = json.load(f)
    if not recs:
        print(f"summary: {path} holds no records", file=sys.stderr)
        return 1
    groups = {}
    for r in recs:
        groups.setdefault((r["dataset"], r["causal"]), {})[(r["scheme"], r["reference"])] = r
    first = recs[0]
    print(f"\nSummary of {path} (commit {first.get('commit', '?')}, {first.get('date', '?')}):")
    print(f"the library's default scheme ({DEFAULT}: pre-pass + FP8 kernel), error as RMSE ratios")
    print("  e2e x BF16     its error against exact FP64 attention on the BF16 inputs (what a user")
    print("                 gets) / BF16-flash's (FA3-BF16 numerics); the project's bound is <= 2")
    print("  e2e x FA3-FP8  the same / FA3-style FP8's (per-head E4M3 scales); < 1: more accurate")
    print("  kernel x BF16  the kernel's arithmetic alone (against exact attention on its rounded")
    print("                 inputs) / BF16-flash's")
    print("  FA3-FP8 x BF16 FA3-style FP8's end-to-end error / BF16-flash's, for scale")
    name_w = max(len(d) for d, _ in groups)
    print(f"\n  {'dataset':<{name_w}}  {'mask':<6} {'e2e x BF16':>10} {'e2e x FA3-FP8':>13} "
          f"{'kernel x BF16':>13} {'FA3-FP8 x BF16':>14}")
    worst = None
    missing = False
    for (dataset, causal), g in sorted(groups.items()):
        e2e = ratio(g, DEFAULT, "end_to_end", BF16, "end_to_end")
        vs_fa3 = ratio(g, DEFAULT, "end_to_end", FA3, "end_to_end")
        kern = ratio(g, DEFAULT, "kernel_only", BF16, "kernel_only")
        fa3 = ratio(g, FA3, "end_to_end", BF16, "end_to_end")
        missing |= None in (e2e, vs_fa3, kern, fa3)
        if e2e is not None and (worst is None or e2e > worst[0]):
            worst = (e2e, dataset, "causal" if causal else "none")
        print(f"  {dataset:<{name_w}}  {'causal' if causal else 'none':<6} {fmt(e2e, 10)} "
              f"{fmt(vs_fa3, 13, 3)} {fmt(kern, 13)} {fmt(fa3, 14)}")
    if worst:
        verdict = "within" if worst[0] <= 2.0 else "above"
        print(f"\n  worst end-to-end ratio: {worst[0]:.2f}x BF16 ({worst[1]}, mask {worst[2]}): "
              f"{verdict} the 2x bound")
    if missing:
        print(f"  some ratios are missing: {path} lacks a record (a scheme or reference not run)")
    print("  every record (rmse, max_abs, rel_rmse, cosine, timings) is in the JSON; docs/numerics.md"
          " explains the schemes and references")
    return 1 if missing else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))

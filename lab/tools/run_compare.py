#!/usr/bin/env python3
"""fp8attn / FA3 FP8 (head to head) per sweep row in two harness results files, side by side,
with the second run's ratio over the first's (a product change's effect between two full runs).
usage: python3 lab/tools/run_compare.py OLD.json NEW.json"""
import datetime as dt
import json
import sys


def ratios(path):
    d = json.load(open(path))
    pair = {}
    for r in d["speed"]:
        k = (r["b"], r["sq"], r["sk"], r["h"], r["h_kv"], r["causal"])
        if r["protocol"] == "head_to_head:fa3_fp8" and r["method"] == "fp8attn":
            pair.setdefault(k, {})["ours"] = r["tflops_median"]
        elif r["protocol"] == "head_to_head:fp8attn" and r["method"] == "fa3_fp8":
            pair.setdefault(k, {})["fa3"] = r["tflops_median"]
    return d, {k: v["ours"] / v["fa3"] for k, v in pair.items() if len(v) == 2}


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    (d0, a), (d1, b) = ratios(sys.argv[1]), ratios(sys.argv[2])
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# fp8attn / FA3 FP8 head to head: {sys.argv[1]} (commit {d0['commit']}, {d0['date']}) "
          f"against {sys.argv[2]} (commit {d1['commit']}, {d1['date']}); "
          f"command: python3 lab/tools/run_compare.py {' '.join(sys.argv[1:])}; written {now}")
    print("# b sq sk h h_kv causal | old | new | new / old")
    for k in b:
        if k in a:
            print(" ".join(str(int(x)) for x in k), f"| {a[k]:.3f} | {b[k]:.3f} | {b[k] / a[k]:.3f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""fp8attn / FA3 FP8 (head to head) per sweep row in two harness results files, side by side,
with the second run's ratio over the first's (a product change's effect between two full runs).
The pairing is bench/report.py's (report.pair), as in the results' own report.
usage: python3 lab/tools/run_compare.py OLD.json NEW.json"""
import datetime as dt
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import report  # noqa: E402


def ratios(path):
    d = json.load(open(path))
    idx = report._index(d["speed"])
    out = {}
    for row in report.rows(d["speed"]):
        ratio = report.pair(idx, row, "fp8attn", "fa3_fp8")[2]
        if ratio is not None:
            out[row] = ratio
    return d, out


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    (d0, a), (d1, b) = ratios(sys.argv[1]), ratios(sys.argv[2])
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# fp8attn / FA3 FP8 head to head: {sys.argv[1]} (commit {d0['commit']}, {d0['date']}) "
          f"against {sys.argv[2]} (commit {d1['commit']}, {d1['date']}); "
          f"command: python3 lab/tools/run_compare.py {' '.join(sys.argv[1:])}; written {now}")
    print("# b sq sk h h_kv causal | old | new | new / old")
    for row in b:
        if row in a:
            (bb, sq, sk, h, h_kv, _), causal = row
            print(f"{bb} {sq} {sk} {h} {h_kv} {int(causal)} | {a[row]:.3f} | {b[row]:.3f} | "
                  f"{b[row] / a[row]:.3f}")


if __name__ == "__main__":
    main()

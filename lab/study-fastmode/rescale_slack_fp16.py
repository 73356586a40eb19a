#!/usr/bin/env python3
"""Rescale fractions at slack 3 (E4M3 P's) and 5, 8 (what FP16 P's range allows), 192-key blocks:
Gaussian 8k (heads 0 and 1 of 4) and the fixtures' 2k tokens (heads 0 and h/2), both masks, with
rescale_count.py's counting. Writes the table to stdout with its command, commit and date.
  python3 lab/study-fastmode/rescale_slack_fp16.py > lab/results/study/DATE-rescale-slack-fp16.txt"""
import datetime
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rescale_count as rc  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SLACKS = [3.0, 5.0, 8.0]


def main():
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print(f"# command: python3 lab/study-fastmode/rescale_slack_fp16.py; commit {commit}; "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; CPU (numpy)")
    print("# fraction of (warp, visited 192-key block) pairs that rescale O, by slack; the first block of a row always does")
    print("data | causal | visits | " + " | ".join(f"slack {s:g}" for s in SLACKS))
    q, k = rc.synthetic("gaussian", 8192, 4, 1)
    rows = [("gaussian s8192", q, k, [0, 1])]
    for f in sorted((ROOT / "data" / "fixtures").glob("*.safetensors")):
        q, k = rc.load_qk(f)
        rows.append((f"{f.stem} s{q.shape[0]}", q, k, [0, q.shape[1] // 2]))
    for name, q, k, heads in rows:
        for causal in (False, True):
            fr, visits = rc.rescale_fraction(q, k, causal, 192, SLACKS, heads=heads)
            print(f"{name} | {int(causal)} | {visits} | " + " | ".join(f"{fr[str(s)]:.3f}" for s in SLACKS))
    return 0


if __name__ == "__main__":
    sys.exit(main())

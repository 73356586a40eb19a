#!/usr/bin/env python3
"""Issue 17's ceiling from a harness results file: the kernel alone (fp8attn, E4M3 inputs given)
against FA3 BF16, head to head, per sweep row, beside the row's BF16-in goal (bench/report.py's
goal_of: 1.20 at >= 4096 tokens per sequence, else 1.00). A row whose kernel alone is below its goal
cannot reach it end to end whatever the pre-pass costs.
  python3 lab/tools/kernel_vs_fa3_bf16.py results/<run>.json"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import report  # noqa: E402

d = json.loads(Path(sys.argv[1]).read_text())
idx = report._index(d["speed"])
print(f"# {' '.join(['python3'] + sys.argv)}; run commit {d['commit']}, {d.get('gpu_name', d.get('gpu'))}, {d.get('date')}")
print("| b | sq | sk | h/h_kv | causal | fp8attn / FA3 BF16 (kernel alone) | goal | below it |")
print("|---:|---:|---:|---|---|---:|---:|---|")
below = 0
for row in report.rows(d["speed"]):
    ratio = report.pair(idx, row, "fp8attn", "fa3_bf16")[2]
    if ratio is None:
        continue
    (b, sq, sk, h, h_kv, _), causal = row
    goal = report.goal_of(row)
    below += ratio < goal
    print(f"| {b} | {sq} | {sk} | {h}/{h_kv} | {'yes' if causal else 'no'} | {ratio:.3f} | {goal:.2f} | "
          f"{'yes' if ratio < goal else 'no'} |")
print(f"\nrows whose kernel alone is below the row's BF16-in goal against FA3 BF16: {below}")

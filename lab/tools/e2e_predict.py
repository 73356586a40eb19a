#!/usr/bin/env python3
"""Issue 17's BF16-in ratios predicted for a kernel change measured in the lab: for each sweep row
of a full run's results file, the end-to-end call's time (pre-pass + kernel, its head-to-head
record against FA3 BF16) with the kernel's share shortened by the lab A/B's speed-up (a
lottery_ab.py JSON: NEW's mean ratio to the peer over OLD's, per shape), and the ratio
to FA3 BF16 that gives, beside the row's goal (bench/report.py's pairing and goal_of). Rows the
A/B did not measure are printed without a prediction.
usage: python3 lab/tools/e2e_predict.py RESULTS.json LOTTERY.json OLD NEW"""
import datetime as dt
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import report  # noqa: E402


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    res, lot = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
    old, new = sys.argv[3], sys.argv[4]
    # The summary records: each config's ratio to FA3 FP8 in its own pairing, mean over rounds;
    # the speed-up is NEW's over OLD's (the peer's drift between pairings cancels).
    summ = {}
    for r in lot["records"]:
        if "ratio_mean" in r and r["method"] in (old, new):
            summ.setdefault((r["b"], r["sq"], r["sk"], r["h_kv"], bool(r["causal"])), {})[r["method"]] = r["ratio_mean"]
    gain = {k: v[new] / v[old] for k, v in summ.items() if old in v and new in v}
    idx = report._index(res["speed"])
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {sys.argv[1]} (commit {res['commit']}, {res['date']}) with {sys.argv[2]} ({lot.get('date')}): "
          f"{new} over {old}; command: python3 lab/tools/e2e_predict.py {' '.join(sys.argv[1:])}; written {now}")
    print("# b sq sk h h_kv causal | end to end / FA3 BF16 now | kernel ms, end-to-end ms | kernel "
          "speed-up (A/B) | predicted end to end / FA3 BF16 | issue 17's bar")
    for row in report.rows(res["speed"]):
        e2e, _, ratio = report.pair(idx, row, "fp8attn_end_to_end", "fa3_bf16")
        kern = report.pair(idx, row, "fp8attn", "fa3_fp8")[0]
        if ratio is None or not kern:
            continue
        (b, sq, sk, h, h_kv, _), causal = row
        ms_e, ms_k = e2e["ms_median"], kern["ms_median"]
        g = gain.get((b, sq, sk, h_kv, bool(causal)))
        pred = f"{ratio * ms_e / (ms_e - ms_k * (1 - 1 / g)):.3f}" if g else "-"
        print(f"{b} {sq} {sk} {h} {h_kv} {int(causal)} | {ratio:.3f} | {ms_k:.3f} {ms_e:.3f} | "
              f"{f'{g:.3f}' if g else '-'} | {pred} | {report.goal_of(row):.1f}")


if __name__ == "__main__":
    main()

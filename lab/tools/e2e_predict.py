#!/usr/bin/env python3
"""Issue 17's BF16-in ratios predicted for a kernel change measured in the lab: for each sweep row
of a full run's results file, the end-to-end call's time (pre-pass + kernel, its head-to-head
record against FA3 BF16) with the kernel's share shortened by the lab A/B's speed-up (a
lottery_ab.py JSON: NEW's mean ratio to the peer over OLD's, per shape), and the ratio
to FA3 BF16 that gives. Rows the A/B did not measure are printed without a prediction.
usage: python3 lab/tools/e2e_predict.py RESULTS.json LOTTERY.json OLD NEW"""
import datetime as dt
import json
import sys


def key(r):
    return (r["b"], r["sq"], r["sk"], r["h"], r["h_kv"], bool(r["causal"]))


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
    e2e, fa3, kern = {}, {}, {}
    for r in res["speed"]:
        if r["protocol"] == "head_to_head:fa3_bf16" and r["method"] == "fp8attn_end_to_end":
            e2e[key(r)] = r
        elif r["protocol"] == "head_to_head:fp8attn_end_to_end" and r["method"] == "fa3_bf16":
            fa3[key(r)] = r
        elif r["protocol"] == "head_to_head:fa3_fp8" and r["method"] == "fp8attn":
            kern[key(r)] = r
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {sys.argv[1]} (commit {res['commit']}, {res['date']}) with {sys.argv[2]} ({lot.get('date')}): "
          f"{new} over {old}; command: python3 lab/tools/e2e_predict.py {' '.join(sys.argv[1:])}; written {now}")
    print("# b sq sk h h_kv causal | end to end / FA3 BF16 now | kernel ms, end-to-end ms | kernel "
          "speed-up (A/B) | predicted end to end / FA3 BF16 | issue 17's bar")
    for k in e2e:
        if k not in fa3 or k not in kern:
            continue
        ratio = e2e[k]["tflops_median"] / fa3[k]["tflops_median"]
        ms_e, ms_k = e2e[k]["ms_median"], kern[k]["ms_median"]
        g = gain.get((k[0], k[1], k[2], k[4], k[5]))
        pred = f"{ratio * ms_e / (ms_e - ms_k * (1 - 1 / g)):.3f}" if g else "-"
        bar = 1.2 if k[1] >= 4096 else 1.0
        print(" ".join(str(int(x)) for x in k), f"| {ratio:.3f} | {ms_k:.3f} {ms_e:.3f} | "
              f"{f'{g:.3f}' if g else '-'} | {pred} | {bar}")


if __name__ == "__main__":
    main()

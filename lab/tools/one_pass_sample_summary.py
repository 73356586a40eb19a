#!/usr/bin/env python3
"""Issue 17: the one-pass pre-pass's sample size, measured (thirteenth session). Reads the GPU
probes' JSON (lab/probes/sample_rows_check.sh: one_pass_seeds_gpu.py per length, one_pass_e2e.py
per library) and writes one table of the sample centre's error against the exact mean's per
sample rule and length, and one of the end-to-end speed of one pass over the exact mean's two, per
library, each pair from one process.
  python3 lab/tools/one_pass_sample_summary.py OUT.md RULE=SEEDS.json[,SEEDS.json...]... \\
      -- RULE=E2E.json...
(RULE: a label such as 'rows 128' or '1 in 8, [128, 1024]'.)
"""
import datetime
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "lab" / "study"))
from one_pass_data_seeds import SUMMARY_HEAD, summary_rows  # noqa: E402


def seeds_rows(label, path):
    """one_pass_data_seeds.summary_rows' table rows of one GPU seeds file, its sample rule and
    length in front and its commit behind."""
    d = json.loads(Path(path).read_text())
    return [f"| {label} | {d['shape'][1]} {line} {d['commit']} |"
            for line in summary_rows(d["records"], ("gaussian", "outlier"))]


def e2e_rows(label, path):
    d = json.loads(Path(path).read_text())
    pair = "fp8attn_end_to_end vs fp8attn_end_to_end_one_pass"
    recs = [r for r in d["speed"] if r.get("pair") == pair]
    out = []
    for r in recs:
        if r["method"] != "fp8attn_end_to_end":
            continue
        one = next(x for x in recs if x["method"] == "fp8attn_end_to_end_one_pass" and
                   all(x[k] == r[k] for k in ("b", "sq", "h", "h_kv", "causal")))
        out.append(f"| {label} | {r['b']} x {r['sq']}, h {r['h']}/{r['h_kv']} | "
                   f"{'yes' if r['causal'] else 'no'} | {r['tflops_median']:.1f} | "
                   f"{one['tflops_median']:.1f} | {one['tflops_median'] / r['tflops_median']:.3f} | "
                   f"{d['commit']} |")
    return out


def main():
    args = sys.argv[1:]
    out, split = Path(args[0]), args.index("--")
    seeds, e2e = args[1:split], args[split + 1:]
    lines = [f"# The one-pass sample's size: error and speed (GPU)", "",
             f"command: `python3 lab/tools/one_pass_sample_summary.py {' '.join(args)}`; "
             f"written {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}; "
             "GPU: NVIDIA H200 (the inputs' own `gpu` fields).", "",
             "End to end against FP64, sample centre / exact mean, b1 h8/2, per seed "
             "(bench/accuracy.py synthetic draws 1..N):", "",
             "| sample rule | seqlen " + SUMMARY_HEAD[0] + " commit |",
             "|---|---:" + SUMMARY_HEAD[1] + "---|"]
    for spec in seeds:
        label, paths = spec.split("=", 1)
        for p in paths.split(","):
            lines += seeds_rows(label, p)
    lines += ["", "End to end (BF16 in, fp8attn_attention), TFLOP/s, the two centres alternated in one "
              "process (lab/probes/one_pass_e2e.py, 100 calls each):", "",
              "| sample rule | shape | causal | exact mean | one pass | one pass / mean | commit |",
              "|---|---|---|---:|---:|---:|---|"]
    for spec in e2e:
        label, path = spec.split("=", 1)
        lines += e2e_rows(label, path)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

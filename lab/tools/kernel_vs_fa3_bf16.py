#!/usr/bin/env python3
"""Issue 17's ceiling from a harness results file: the kernel alone (fp8attn, E4M3 inputs given)
against FA3 BF16, head to head, per sweep row. A row whose kernel alone is below the issue's 1.20
(at >= 4096 tokens per sequence) cannot reach it end to end whatever the pre-pass costs.
  python3 lab/tools/kernel_vs_fa3_bf16.py results/<run>.json"""
import json
import sys

d = json.load(open(sys.argv[1]))
sp = [r for r in d["speed"] if r.get("protocol", "").startswith("head_to_head")]
key = ("b", "sq", "sk", "h", "h_kv", "causal")
print(f"# {' '.join(['python3'] + sys.argv)}; run commit {d['commit']}, {d.get('gpu_name', d.get('gpu'))}, {d.get('date')}")
print("| b | sq | sk | h/h_kv | causal | fp8attn / FA3 BF16 (kernel alone) | >= 4096 tokens | below 1.20 |")
print("|---:|---:|---:|---|---|---:|---|---|")
n = 0
for r in sp:
    if r["method"] != "fp8attn" or r["protocol"] != "head_to_head:fa3_bf16":
        continue
    o = next(x for x in sp if x["method"] == "fa3_bf16" and x["protocol"] == "head_to_head:fp8attn"
             and all(x[k] == r[k] for k in key))
    ratio = r["tflops_median"] / o["tflops_median"]
    long = r["sk"] >= 4096
    n += long and ratio < 1.2
    print(f"| {r['b']} | {r['sq']} | {r['sk']} | {r['h']}/{r['h_kv']} | {'yes' if r['causal'] else 'no'} | "
          f"{ratio:.3f} | {'yes' if long else 'no'} | {'yes' if ratio < 1.2 else 'no'} |")
print(f"\nrows with >= 4096 tokens whose kernel alone is below 1.20 x FA3 BF16: {n}")

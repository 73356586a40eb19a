#!/usr/bin/env python3
"""Markdown tables from fp8attn-eval JSON records (docs/numerics.md pastes its output).

usage: tools/eval/results_table.py RESULTS.json [--reference end_to_end] [--metric rel_rmse]
       tools/eval/results_table.py RESULTS.json --wide   (one row per scheme, all references)
Prints the provenance (command, commit, machine, date) of the records first.
"""
import argparse
import json
import pathlib


def fmt(x, kind):
    if x is None:
        return "-"
    if kind == "ratio":
        return f"{x:.2f}"
    return f"{x:.3g}" if kind == "max" else f"{x:.2e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", type=pathlib.Path)
    ap.add_argument("--wide", action="store_true", help="rows: scheme x dataset x mask; columns: references")
    args = ap.parse_args()
    recs = json.loads(args.json.read_text())
    prov = sorted({(r.get("command", "?"), r.get("commit", "?"), r.get("machine", "?"), r.get("date", "?")) for r in recs})
    for c, g, m, d in prov:
        print(f"<!-- {args.json.name}: `{c}` at commit {g} on {m}, {d} -->")
    if "h200_rel_rmse" in recs[0]:
        print("| data | causal | H200 kernel | H200 rel RMSE | model scheme | model rel RMSE | model / H200 | model max abs err |")
        print("|---|---|---|---:|---|---:|---:|---:|")
        for r in recs:
            print(f"| {r['dataset']} | {'yes' if r['causal'] else 'no'} | {r['h200_method']} | {r['h200_rel_rmse']:.2e} "
                  f"| {r['scheme']} | {r['rel_rmse']:.2e} | {r['ratio_to_h200']:.3f} | {r['max_abs']:.3g} |")
        return
    if not args.wide:
        print("| data | causal | scheme | rel RMSE | RMSE / bf16-flash | max abs err | max / bf16-flash | emulation s |")
        print("|---|---|---|---:|---:|---:|---:|---:|")
        for r in recs:
            if r["reference"] != "end_to_end":
                continue
            print(f"| {r['dataset']} | {'yes' if r['causal'] else 'no'} | {r['scheme']} | {fmt(r['rel_rmse'], 'e')} "
                  f"| {fmt(r['rmse_ratio'], 'ratio')} | {fmt(r['max_abs'], 'max')} | {fmt(r['max_ratio'], 'ratio')} "
                  f"| {r['seconds']:.2f} |")
        return
    print("| data | causal | scheme | end-to-end rel RMSE (x bf16) | max (x bf16) | kernel-only rel RMSE (x bf16) "
          "| max (x bf16) | floor rel RMSE (x bf16) | max (x bf16) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    rows = {}
    for r in recs:
        rows.setdefault((r["dataset"], r["causal"], r["scheme"]), {})[r["reference"]] = r
    for (d, c, s), by in rows.items():
        cells = []
        for ref in ("end_to_end", "kernel_only", "floor"):
            r = by.get(ref)
            if r is None:
                cells += ["-", "-"]
                continue
            cells.append(f"{fmt(r['rel_rmse'], 'e')} ({fmt(r['rmse_ratio'], 'ratio')})")
            cells.append(f"{fmt(r['max_abs'], 'max')} ({fmt(r['max_ratio'], 'ratio')})")
        print(f"| {d} | {'yes' if c else 'no'} | {s} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Draws fp8attn-eval's JSON records: each scheme's RMSE as a ratio to bf16-flash, per dataset and
mask, one panel per reference (log scale; the dashed line is the project's 2x bound).

usage: tools/plot_eval.py RESULTS.json [-o OUT.png] [--metric rmse_ratio|max_ratio]
"""
import argparse
import json
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", type=pathlib.Path)
    ap.add_argument("-o", "--out", type=pathlib.Path, help="PNG path (default: JSON path with .png)")
    ap.add_argument("--metric", default="rmse_ratio", choices=["rmse_ratio", "max_ratio"])
    args = ap.parse_args()
    records = json.loads(args.json.read_text())
    if isinstance(records, dict):  # tolerate {"records": [...]}
        records = records.get("records", [])
    refs = [r for r in ("end_to_end", "kernel_only", "floor") if any(x["reference"] == r for x in records)]
    groups = []  # (dataset, causal) in first-seen order
    schemes = []
    for r in records:
        g = (r["dataset"], bool(r["causal"]))
        if g not in groups:
            groups.append(g)
        if r["scheme"] not in schemes and r["scheme"] != "bf16-flash":
            schemes.append(r["scheme"])
    fig, axes = plt.subplots(len(refs), 1, figsize=(max(8, 1.2 * len(groups) * max(1, len(schemes)) / 3), 3.6 * len(refs)),
                             squeeze=False)
    width = 0.8 / max(1, len(schemes))
    for ax, ref in zip(axes[:, 0], refs):
        for si, s in enumerate(schemes):
            xs, ys = [], []
            for gi, (d, c) in enumerate(groups):
                for r in records:
                    if r["scheme"] == s and r["reference"] == ref and r["dataset"] == d and bool(r["causal"]) == c:
                        v = r.get(args.metric)
                        if v is not None and v > 0:
                            xs.append(gi - 0.4 + width * (si + 0.5))
                            ys.append(v)
            ax.bar(xs, ys, width, label=s)
        ax.axhline(2.0, color="k", linestyle="--", linewidth=1)
        ax.axhline(1.0, color="gray", linestyle=":", linewidth=1)
        ax.set_yscale("log")
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"{d}\n{'causal' if c else 'non-causal'}" for d, c in groups], fontsize=8)
        ax.set_ylabel(f"{args.metric.replace('_', ' ')} to bf16-flash")
        ax.set_title(f"reference: {ref}", fontsize=10)
    axes[0, 0].legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    out = args.out or args.json.with_suffix(".png")
    fig.savefig(out, dpi=110, bbox_inches="tight")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

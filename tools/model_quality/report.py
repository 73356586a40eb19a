#!/usr/bin/env python3
"""Table and plot of results/model-quality.json into docs/model-quality.md (between the
model-quality markers) and docs/img/model-quality.png.

  python tools/model_quality/report.py
"""
from __future__ import annotations

import json
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RESULTS = os.path.join(REPO, "results", "model-quality.json")
DOC = os.path.join(REPO, "docs", "model-quality.md")
PLOT = os.path.join(REPO, "docs", "img", "model-quality.png")
BEGIN = "<!-- model-quality:begin (tools/model_quality/report.py) -->"
END = "<!-- model-quality:end -->"
ORDER = ["exact", "bf16-flash", "fa3-fp8", "fp8attn-default", "fp8attn-accurate", "fp8attn-accurate-e4m3v"]


def table(doc: dict) -> list[str]:
    recs = sorted(doc["records"], key=lambda r: (r["model"], ORDER.index(r["scheme"])
                                                  if r["scheme"] in ORDER else 99))
    out = []
    for model in dict.fromkeys(r["model"] for r in recs):
        rs = [r for r in recs if r["model"] == model]
        prov = doc.get("provenance", {}).get(model, {})
        rule = rs[0].get("accumulator_rule", {})
        pad = f", head_dim {rs[0]['head_dim']} zero-padded to {rs[0]['padded_to']}" if rs[0].get("padded_to") else ""
        out += [f"### {model} ({rs[0]['tokens']} tokens{pad})", "",
                f"FP8 tensor-core accumulation rule: `{rule.get('tag', '?')}`, {rule.get('source', '')}." if
                isinstance(rule.get("source"), str) else
                (f"FP8 tensor-core accumulation rule: `{rule.get('tag', '?')}`, measured by "
                 f"`{rule['source'].get('command')}` at commit `{str(rule['source'].get('commit'))[:12]}`, "
                 f"{rule['source'].get('date')} (the rule section above)."), "",
                "| scheme | perplexity | change | KL mean (nats) | KL p99 (nats) | top-1 agreement |",
                "|---|---:|---:|---:|---:|---:|"]
        for r in rs:
            out.append(f"| {r['scheme']} | {r['ppl']:.4f} | {r['ppl_delta']:+.4f} | {r['kl_mean']:.2e} | "
                       f"{r['kl_p99']:.2e} | {r['top1_agree']:.4f} |")
        by = {r["scheme"]: r for r in rs}
        notes = []
        if {"fa3-fp8", "fp8attn-default"} <= by.keys():
            f3, de = by["fa3-fp8"], by["fp8attn-default"]
            kl_ratio = de["kl_mean"] / f3["kl_mean"] if f3["kl_mean"] > 0 else float("nan")
            ppl_ratio = abs(de["ppl_delta"]) / abs(f3["ppl_delta"]) if f3["ppl_delta"] else float("nan")
            notes.append(f"- fp8attn-default / FA3-FP8: KL mean {kl_ratio:.2f}x, |perplexity change| "
                         f"{ppl_ratio:.2f}x (goal: at most 0.5x each).")
        if "bf16-flash" in by:
            bf = by["bf16-flash"]
            notes.append(f"- Noise (BF16-flash against exact): KL mean {bf['kl_mean']:.2e}, perplexity "
                         f"change {bf['ppl_delta']:+.4f}, top-1 {bf['top1_agree']:.4f}.")
            for name, what in (("fp8attn-accurate", "V^T in FP16"), ("fp8attn-accurate-e4m3v", "V^T in E4M3")):
                if name in by:
                    v = by[name]
                    notes.append(f"- {name} ({what}): KL mean {v['kl_mean']:.2e} ({v['kl_mean'] / bf['kl_mean']:.2f}x "
                                 f"BF16-flash's), perplexity change {v['ppl_delta']:+.4f}, top-1 "
                                 f"{v['top1_agree']:.4f}.")
        for r in rs:
            if r.get("renamed_from"):
                notes.append(f"- {r['scheme']}: {r['renamed_from']}.")
        if notes:
            out += [""] + notes
        if prov:
            own = [r["scheme"] for r in rs if r.get("provenance")]
            out += ["", f"Written by `{prov.get('command')}` at commit `{str(prov.get('git_commit'))[:12]}` on "
                        f"{prov.get('machine')}, {prov.get('date_utc')}"
                        + (f" ({', '.join(own)}: below)." if own else ".")]
        for r in rs:  # a scheme run on its own later (run.py --schemes) carries its provenance
            p = r.get("provenance")
            if p:
                out += ["", f"{r['scheme']}: written by `{p.get('command')}` at commit "
                            f"`{str(p.get('git_commit'))[:12]}` on {p.get('machine')}, {p.get('date_utc')}."]
        out.append("")
    return out


def plot(doc: dict) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    models = list(dict.fromkeys(r["model"] for r in doc["records"]))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / max(1, len(models))
    schemes = [s for s in ORDER if s != "exact"]
    for mi, model in enumerate(models):
        by = {r["scheme"]: r for r in doc["records"] if r["model"] == model}
        xs = [i + mi * width for i in range(len(schemes))]
        axes[0].bar(xs, [by[s]["kl_mean"] if s in by else 0 for s in schemes], width, label=model)
        axes[1].bar(xs, [abs(by[s]["ppl_delta"]) if s in by else 0 for s in schemes], width, label=model)
    for ax, title in zip(axes, ("next-token KL(exact || scheme), mean (nats)", "|perplexity change|")):
        ax.set_xticks([i + width * (len(models) - 1) / 2 for i in range(len(schemes))])
        ax.set_xticklabels(schemes, rotation=20)
        ax.set_yscale("log")
        ax.set_title(title)
        ax.legend()
    fig.tight_layout()
    os.makedirs(os.path.dirname(PLOT), exist_ok=True)
    fig.savefig(PLOT, dpi=110)


def main() -> int:
    doc = json.load(open(RESULTS))
    block = [BEGIN, "", f"_Generated from `results/model-quality.json`._", "", *table(doc),
             "![KL and perplexity change per scheme](img/model-quality.png)", "", END]
    text = open(DOC).read()
    a, b = text.index(BEGIN), text.index(END) + len(END)
    with open(DOC, "w") as f:
        f.write(text[:a] + "\n".join(block) + text[b:])
    plot(doc)
    print(f"updated {os.path.relpath(DOC, REPO)} and {os.path.relpath(PLOT, REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Writes the figures of the captures from data/captures.json into results/captures-summary.md
and into the generated block of docs/captures.md (between the captures-figures markers), so that
no figure in the doc is typed by hand.

  python tools/capture/report.py
"""
from __future__ import annotations

import json
import os
import sys

import provenance

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BEGIN, END = "<!-- captures-figures:begin (tools/capture/report.py) -->", "<!-- captures-figures:end -->"


def fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1e4 else f"{x:.3e}"


def model_block(m: dict) -> list[str]:
    t = m["timings_s"]
    lines = [
        f"### {m['name']} ({m['quant']} GGUF, {m['arch']}: {m['q_heads']}/{m['kv_heads']} query/KV "
        f"heads, head_dim {m['head_dim']}, {m['n_layers']} layers, RoPE theta {m['rope_theta']:g})",
        "",
        f"- Perplexity on the {m['perplexity_tokens'] + 1}-token text: **{m['perplexity']:.3f}** "
        f"({m['perplexity_tokens']} predicted tokens; "
        f"{'BOS added' if m['bos_added'] else 'no BOS: the GGUF says add_bos_token = false'}).",
        f"- Greedy continuation of the first {m['greedy_continuation']['prompt_tokens']} tokens "
        f"({m['greedy_continuation']['new_tokens']} new tokens):",
        "",
        "  > ..." + m["greedy_continuation"]["prompt"][-120:].replace("\n", " ") + " **|** "
        + m["greedy_continuation"]["continuation"].replace("\n", " "),
        "",
        f"- Time on this machine: {t['total_s']:.0f} s in all (forward {t['forward_s']:.0f} s, "
        f"perplexity head {t['perplexity_s']:.0f} s, greedy continuation {t['continuation_s']:.0f} s, "
        f"validation {t['validate_s']:.0f} s, dequantization {t['dequantize_s']:.0f} s)"
        + (f"; {m['max_resident_mib']} MiB max resident." if "max_resident_mib" in m else "."),
        "",
        "| layer | attn reproduction rel err (FP32 on the capture vs the model) | vs FP64 | "
        "BF16 rounding of Q, K, V (rel err of the model's attention) | K amax | K max channel abs mean "
        "| K median channel std | V amax | V max channel abs mean | entropy min / max (nats) "
        "| mass on token 0 min / max |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for L in m["layers"]:
        k, v, a = L["tensors"]["k"], L["tensors"]["v"], L["attention"]
        e, s = a["entropy_nats_per_q_head"], a["mass_on_token0_per_q_head"]
        lines.append(
            f"| {L['layer']} | {L['attn_reproduction_rel_err']:.2e} | "
            f"{L['attn_reproduction_rel_err_vs_fp64']:.2e} | {L['bf16_input_rounding_rel_err']:.2e} | "
            f"{fmt(k['amax'])} | {fmt(k['channel_abs_mean_max'])} | {fmt(k['channel_std_median'])} | "
            f"{fmt(v['amax'])} | {fmt(v['channel_abs_mean_max'])} | {min(e):.2f} / {max(e):.2f} | "
            f"{min(s):.3f} / {max(s):.3f} |")
    lines += ["", "Largest per-channel |mean| of K (head, channel: mean, std, amax):", ""]
    for L in m["layers"]:
        tops = ", ".join(f"({c['head']}, {c['channel']}: {fmt(c['mean'])}, {fmt(c['std'])}, {fmt(c['amax'])})"
                         for c in L["tensors"]["k"]["top_mean_channels"])
        lines.append(f"- layer {L['layer']}: {tops}")
    return lines + [""]


def main() -> int:
    with open(os.path.join(REPO, "data", "captures.json")) as f:
        manifest = json.load(f)
    prov = provenance.record(sys.argv)
    body = [f"Text: `{manifest['text']}` (sha256 `{manifest['text_sha256'][:16]}...`), "
            f"{manifest['tokens']} tokens. Source: `data/captures.json`.", ""]
    for m in manifest["models"]:
        body += model_block(m)
        p = m["provenance"]
        body += [f"Captured by `{p['command']}` at commit `{p['git_commit']}` on {p['machine']}, "
                 f"{p['date_utc']}.", ""]
    if manifest.get("fixtures"):
        body += ["Committed fixture (`data/fixtures/`):", "",
                 "| file | tokens | q head | kv head | mean entropy (nats) | mean mass on token 0 |",
                 "|---|---:|---:|---:|---:|---:|"]
        body += [f"| `{x['file']}` | {x['tokens']} | {x['q_head']} | {x['kv_head']} | "
                 f"{x['ref_mean_entropy_nats']:.3f} | {x['ref_mean_mass_on_token0']:.3f} |"
                 for x in manifest["fixtures"]]
        body.append("")
    summary = ["# Captured activations: validation figures", "",
               f"Written by `{prov['command']}` at commit `{prov['git_commit']}` on {prov['machine']}, "
               f"{prov['date_utc']}.", ""] + body
    with open(os.path.join(REPO, "results", "captures-summary.md"), "w") as f:
        f.write("\n".join(summary))
    doc_path = os.path.join(REPO, "docs", "captures.md")
    doc = open(doc_path).read()
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{doc_path}: the captures-figures markers are missing")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    block = "\n".join(["", "_Generated from `data/captures.json`; also in `results/captures-summary.md`._", ""] + body)
    with open(doc_path, "w") as f:
        f.write(head + BEGIN + "\n" + block + "\n" + END + tail)
    print("wrote results/captures-summary.md and the figures block of docs/captures.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())

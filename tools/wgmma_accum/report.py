#!/usr/bin/env python3
"""The measured accumulation rule and the model-vs-GPU comparison, as a block of
docs/model-quality.md (between the accum-rule markers), every figure read from results/:

  python3 tools/wgmma_accum/report.py --rule results/wgmma-accum-<commit>.json \
      --compare results/accum-model-vs-gpu-<commit>.json [--baseline results/...-first-model.json]

--rule: the microbenchmark's JSON (tools/wgmma_accum/run.sh), read through rule.py;
--compare: compare.py's output with that rule; --baseline: compare.py's output with another
accumulator model (e.g. --acc-keys :acc=hopper), shown beside it.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import rule as acc_rule  # noqa: E402

DOC = ROOT / "docs" / "model-quality.md"
BEGIN = "<!-- accum-rule:begin (tools/wgmma_accum/report.py) -->"
END = "<!-- accum-rule:end -->"
ROUNDING = {"zero": "truncated toward zero", "down": "rounded toward -inf", "nearest": "rounded to nearest"}


def rel(p: pathlib.Path) -> str:
    p = p.resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p)


def summary(doc: dict) -> str:
    rows = doc["rows"]
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    n_in = sum(r["within"] for r in rows)
    rng = f", model / GPU from {min(ratios):.3f} to {max(ratios):.3f}" if ratios else ""
    return f"{n_in} of {len(rows)} rows within 10%{rng}"


def misses(doc: dict) -> list[str]:
    return [f"{r['dataset']} {'causal' if r['causal'] else 'full'} {r['method']} {r['reference']} "
            f"({'-' if r['ratio'] is None else format(r['ratio'], '.3f')})" for r in doc["rows"] if not r["within"]]


def rounding_evidence(raw: dict, f: int) -> str:
    """What 2^8 plus x units at the cut (u = 2^(8 - f)) gave (the tests "round", j = f), grouped by result."""
    unit = 2.0 ** (8 - f)
    by: dict[float, list[float]] = {}
    for t in raw["tests"]:
        if t["kind"] == "round" and t["j"] == f:
            by.setdefault((t["got"] - 256.0) / unit, []).append(t["frac"])
    return "; ".join(f"2^8 + x u for x = {', '.join(f'{x:g}' for x in sorted(xs))} gave 2^8 + {v:g} u"
                     for v, xs in sorted(by.items()))


def block(rule_path: pathlib.Path, cmp_path: pathlib.Path, base_path: pathlib.Path | None) -> list[str]:
    raw = json.loads(rule_path.read_text())
    r = acc_rule.derive(raw)
    d, prov, sc = raw["derived"], raw.get("provenance", {}), raw["self_check"]
    cmp_doc = json.loads(cmp_path.read_text())
    f, g = r["fraction_bits"], r["group"]
    out = [BEGIN, "",
           f"_Generated from `{rel(rule_path)}` and `{rel(cmp_path)}`"
           + (f" and `{rel(base_path)}`" if base_path else "") + "._", "",
           f"Measured on the {raw['device']} (sm_{raw['sm']}, `{raw['instruction']}`) by "
           f"`{prov.get('command')}` at commit `{str(prov.get('commit'))[:12]}`"
           f"{' (dirty tree)' if prov.get('dirty') else ''}, {prov.get('date')}: self-check "
           f"{'passed' if sc['ok'] else 'FAILED'} ({sc['non_uniform_outputs']} non-uniform tiles, "
           f"{sc['layout_failures']} layout failures, {sc['exact_sum_failures']} inexact small-integer sums).",
           "",
           f"- **Bits kept**: a product keeps {f} fraction bits below the leading bit of the largest "
           f"term of its group (fewest over every position pair: {d['fraction_bits_min']}, most: "
           f"{d['fraction_bits_max']}); 2^8 + 2^(8-j) is exact up to j = {f} and loses the small "
           f"term beyond" + (", wherever the two sit among the 32 products." if d["fraction_bits_min"] ==
                             d["fraction_bits_max"] else ", at the position pair that keeps fewest."),
           f"- **Alignment group**: {g} products, one k-step of the instruction: the group size whose "
           f"rule reproduces the most position-dependent tests ({r['tests_reproduced']} reproduced "
           f"exactly by `rule.adder`).",
           f"- **Rounding**: the bits below the cut are {ROUNDING[r['rounding']]}, each term on its own "
           f"({rounding_evidence(raw, f)}).",
           f"- **Where partials are promoted**: the running sum C {'joins' if r['c_aligned'] else 'does not join'} "
           f"the alignment: C = 2^8 keeps {d['c_big_bits']} bits of a product, a small C under a "
           f"product 2^8 keeps {d['c_small_bits']} bits, and two chained wgmmas keep "
           f"{d['chained_bits']}; so the accumulator is an FP32 register only in its format: every "
           f"k-step re-aligns it with the new products and cuts it at {f} bits below the largest.",
           f"- Model keys (`{r['tag']}`): `acc=aligned{acc_rule.scheme_keys(r)}`. The rule the model "
           f"assumed before the measurement (`{acc_rule.ASSUMED['tag']}`) is "
           f"{'the same rule' if acc_rule.scheme_keys(r) == acc_rule.scheme_keys(acc_rule.ASSUMED) else 'a different rule'}.",
           "",
           f"**Model vs H200** (`{rel(cmp_path)}`, {', '.join(f'`{x}`' for x in cmp_doc['provenance']['gpu_results'])}; "
           f"FA3 FP8 and fp8attn's E4M3-P kernel on per-head inputs, fp8attn's pre-pass + E4M3-P kernel; "
           f"kernel-only and end to end; every captured layer the GPU session ran, full and causal): "
           f"{summary(cmp_doc)}."]
    miss = misses(cmp_doc)
    if miss:
        out.append(f"Outside 10%: {'; '.join(miss)}.")
    if base_path:
        b = json.loads(base_path.read_text())
        out += ["", f"The same comparison with the first accumulator model (`{b['accumulator_keys']}`): "
                    f"{summary(b)}."]
    gpu_sets = sorted({row["dataset"] for row in cmp_doc["rows"]})
    out += ["", f"Captured layers compared: {', '.join(f'`{s}`' for s in gpu_sets)}.", "", END]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rule", type=pathlib.Path, required=True)
    ap.add_argument("--compare", type=pathlib.Path, required=True)
    ap.add_argument("--baseline", type=pathlib.Path)
    args = ap.parse_args(argv)
    lines = block(args.rule, args.compare, args.baseline)
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOC}: no {BEGIN} ... {END} markers")
    a, b = text.index(BEGIN), text.index(END) + len(END)
    DOC.write_text(text[:a] + "\n".join(lines) + text[b:])
    print(f"updated {rel(DOC)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Issue 14, item 2, second study on the CPU model: what separates offset 8 / slack 0 from FA3 FP8,
and the cheapest running-max rule whose kernel-only RMSE and max are <= FA3 FP8's everywhere.

Runs fp8attn-eval (the CPU model) over the harness's datasets (the FA3 outlier test and Gaussian
at 8192 tokens, --heads-subset heads of 32; every layer fixture in data/fixtures/), both masks,
on the inputs of the harness's FA3 comparison (Q, K, V in E4M3 per (batch, KV head), amax/448:
scheme fa3-fp8's operands), and lab/study-fastmode/rescale_count.py for the O rescales each rule
costs. Writes results/fastmode-study-2.json (every record, command, commit, machine, date) and
results/fastmode-study-2.md.

Two FA3 FP8 mirrors are the yardsticks: `fa3-fp8` (the model's registry entry, 128-key blocks,
exact exp2 below 2^-126, as the first study) and `fa3-fp8 224` (FA3's own tiling for FP8 at head
dim 128, 128 x 224, and its fast-math ex2.approx.ftz). A variant passes when its RMSE and max are
<= 1.00x both on every dataset and mask.

Part A (why o8 s0 is not yet FA3): from our kernel at offset 8 / slack 0 (l from the rounded P,
192-key blocks, ftz), one difference to FA3 at a time: l from the FP32 p, the block size, ftz,
FA3's exp2 argument (exp_fa3).
Part B (the rule): offset 8 with slack 0..0.8 (P <= 2^8.8 < 448), the slack tested per row (a
row moves alone) or per warp (rescale=warp: any moving row moves the warp's 16 rows to their exact
maxima, the O rescale being paid anyway), l from the rounded P or the FP32 p.

usage: lab/study-fastmode/run_fastmode_study2.py [--eval PATH] [--heads-subset N] [--seqlen N]
                                                 [--threads N] [--cache DIR] [--out STEM]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import shlex
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import rescale_count as rc  # noqa: E402
from run_fastmode_study import eval_and_fixtures, git, run_eval  # noqa: E402

FA3 = "fa3-fp8"
FA3_224 = "fa3-fp8:block=224:ftz=1"
REFS = {"fa3-fp8": FA3, "fa3-fp8 224": FA3_224}
# Our E4M3 kernel on per-head inputs (kernel_numerics(FP8ATTN_P_E4M3, kFP32, false)) at offset 8.
K8 = "fa3-fp8:p_offset=8:slack=0:l_rounded=1:block=192:ftz=1"
PART_A = {
    "fa3-fp8 224, FA3's exp2 argument": FA3_224 + ":exp_fa3=1",
    "o8 s0 (ours)": K8,
    "o8 s0, exp2 argument as FA3": K8 + ":exp_fa3=1",
    "o8 s0, l = FP32 p": K8 + ":l_rounded=0",
    "o8 s0, ftz off": K8 + ":ftz=0",
    "o8 s0, 224-key blocks": K8 + ":block=224",
    "o8 s0, 128-key blocks": K8 + ":block=128",
    "o8 s0, l = FP32 p, 224": K8 + ":l_rounded=0:block=224",
    "today (o5 s3)": "fa3-fp8:p_offset=5:slack=3:l_rounded=1:block=192:ftz=1",
}
SLACKS = [0.0, 0.25, 0.5, 0.807]
PART_B = {}
for _s in SLACKS[1:]:
    for _rule in ("row", "warp"):
        for _l in (1, 0):
            PART_B[f"o8 s{_s:g} {_rule}{'' if _l else ', l = FP32 p'}"] = (
                f"fa3-fp8:p_offset=8:slack={_s:g}:rescale={_rule}:l_rounded={_l}:block=192:ftz=1")

# Part C: the same under the H200's measured FP8 accumulator (results/accum-model-vs-gpu-*: the
# adder aligns each 32-product k-step to its largest term and keeps 13 fraction bits, toward zero),
# in both products of both kernels; the yardstick is FA3 224 under the same adder.
ACC = ":acc=aligned:acc_bits=13:acc_group=32:acc_round=zero:acc_c_aligned=1"
PART_C = {
    "fa3-fp8 224, H200 adder": FA3_224 + ACC,
    "o8 s0 (ours), H200 adder": K8 + ACC,
    "o8 s0, l = FP32 p, H200 adder": K8 + ":l_rounded=0" + ACC,
    "today (o5 s3), H200 adder": PART_A["today (o5 s3)"] + ACC,
}


def ko_table(recs, labels):
    """{(label, dataset, causal): (rmse, max)} of the kernel_only records."""
    inv = {v: k for k, v in labels.items()}
    return {(inv[r["scheme"]], r["dataset"], r["causal"]): (r["rmse"], r["max_abs"])
            for r in recs if r.get("reference") == "kernel_only" and r.get("scheme") in inv}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eval", default=str(ROOT / "build-fast14/tools/eval/fp8attn-eval"))
    ap.add_argument("--seqlen", type=int, default=8192)
    ap.add_argument("--heads-subset", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "results/fastmode-study-2"))
    ap.add_argument("--skip-rescale", action="store_true")
    ap.add_argument("--cache", help="folder keeping each fp8attn-eval run's records (reused)")
    args = ap.parse_args()
    t0 = time.time()
    exe, files = eval_and_fixtures(args.eval)
    data_groups = [["--synthetic", "outlier,gaussian", "--seqlen", str(args.seqlen), "--heads", "32",
                    "--heads-subset", str(args.heads_subset)]]
    data_groups += [["--data", str(f)] for f in files]
    labels = {**REFS, **PART_A, **PART_B, **PART_C}
    cache = Path(args.cache) if args.cache else None
    recs = []
    for dg in data_groups:
        recs += run_eval(exe, dg, list(labels.values()), args.threads, cache)
    ko = ko_table(recs, labels)
    cases = sorted({(d, c) for (_, d, c) in ko})

    def ratios(label, refs=tuple(REFS)):
        """[(rmse / ref, max / ref)] per case, the ref the smaller of the mirrors `refs`."""
        out = []
        for d, c in cases:
            rm = min(ko[(ref, d, c)][0] for ref in refs)
            mm = min(ko[(ref, d, c)][1] for ref in refs)
            out.append((ko[(label, d, c)][0] / rm, ko[(label, d, c)][1] / mm))
        return out

    verdict = {}
    for label in labels:
        if label in PART_C:
            r = [(ko[(label, d, c)][0] / ko[("fa3-fp8 224, H200 adder", d, c)][0],
                  ko[(label, d, c)][1] / ko[("fa3-fp8 224, H200 adder", d, c)][1]) for d, c in cases]
        else:
            r = ratios(label)
        worst = max(max(a, b) for a, b in r)
        verdict[label] = {"worst_ratio": worst, "pass": worst <= 1.0,
                          "worst_rmse_ratio": max(a for a, _ in r),
                          "worst_max_ratio": max(b for _, b in r)}
        if label not in PART_C:  # against FA3's own tiling alone (the GPU's FA3)
            r224 = ratios(label, ("fa3-fp8 224",))
            verdict[label].update({"worst_ratio_224": max(max(a, b) for a, b in r224),
                                   "worst_rmse_ratio_224": max(a for a, _ in r224),
                                   "worst_max_ratio_224": max(b for _, b in r224)})

    rescale = {}
    if not args.skip_rescale:
        # One head of each synthetic set (numpy's generator, same statistics) and each fixture.
        sets = [(k, rc.synthetic(k, args.seqlen, 1, 7 + i)) for i, k in enumerate(("outlier", "gaussian"))]
        sets += [(f.stem, tuple(rc.load_qk(f))) for f in files]
        sl = SLACKS + [3.0]
        for name, (q, k) in sets:
            for causal in (False, True):
                row, visits = rc.rescale_fraction(q, k, causal, 192, sl)
                warp, _ = rc.rescale_fraction(q, k, causal, 192, sl, per_warp=True)
                rescale[f"{name}|{int(causal)}"] = {"row": row, "warp": warp, "warp_block_visits": visits}
                print(f"  rescale {name} causal={int(causal)}: row {row} warp {warp}", flush=True)

    command = shlex.join([sys.executable, *sys.argv])
    res = {"command": command, "commit": git("rev-parse", "--short=12", "HEAD"),
           "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
           "machine": f"{platform.node()} ({platform.processor() or platform.machine()}, CPU model)",
           "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "seconds": round(time.time() - t0), "heads_subset": args.heads_subset,
           "references": REFS, "part_a": PART_A, "part_b": PART_B, "part_c": PART_C, "verdict": verdict,
           "rescale_fraction_192": rescale, "records": recs}
    Path(args.out + ".json").write_text(json.dumps(res, indent=1))
    Path(args.out + ".md").write_text(markdown(res, ko, cases))
    print(f"wrote {args.out}.json, .md ({res['seconds']} s)")


def mean_rescale(res, rule, slack):
    v = [x[rule][str(slack)] for x in res["rescale_fraction_192"].values()]
    return sum(v) / len(v) if v else float("nan")


def markdown(res, ko, cases):
    def short(d):
        return d.replace("qwen2.5-coder-1.5b-", "qw-").replace("smollm2-135m-", "sm-")
    cols = " | ".join(f"{short(d)} {'c' if c else 'nc'}" for d, c in cases)
    sep = "|---" * (len(cases) + 2) + "|"
    lines = [
        "# Fast-mode study 2 (issue 14, item 2), CPU model",
        f"`{res['command']}` — commit {res['commit']}{' (dirty)' if res['dirty'] else ''}, "
        f"{res['machine']}, {res['date']}, {res['seconds']} s; synthetic sets: "
        f"{res['heads_subset']} of 32 heads at 8192 tokens.", "",
        "Kernel-only RMSE / max error as multiples of FA3 FP8's on the same per-head E4M3 inputs, "
        "FA3 FP8 being the smaller of its two mirrors (`fa3-fp8`: 128-key blocks; `fa3-fp8 224`: "
        "FA3's 128 x 224 tile for FP8 at head dim 128 with ex2.approx.ftz); a variant passes when "
        "every cell is <= 1.00. Last column: the worst cell (in brackets: the worst against "
        "`fa3-fp8 224` alone, FA3's own tiling). The two mirrors' own spread (their rows) is the "
        "noise of the yardstick.", ""]

    def table(title, labels, refs=None):
        refs = refs or list(res["references"])
        out = [f"## {title}", "", f"| variant | {cols} | worst |", sep]
        for label in labels:
            r = []
            for d, c in cases:
                rm = min(ko[(ref, d, c)][0] for ref in refs)
                mm = min(ko[(ref, d, c)][1] for ref in refs)
                r.append(f"{ko[(label, d, c)][0] / rm:.2f} / {ko[(label, d, c)][1] / mm:.2f}")
            v = res["verdict"][label]
            w224 = f" ({v['worst_ratio_224']:.2f})" if "worst_ratio_224" in v else ""
            out.append(f"| {label} | {' | '.join(r)} | {v['worst_ratio']:.2f}{w224}"
                       f"{' pass' if v['pass'] else ''} |")
        return out + [""]

    lines += table("FA3 FP8's two mirrors and part A: one difference at a time from offset 8 / slack 0",
                   list(res["references"]) + list(res["part_a"]))
    lines += table("Part B: offset 8, slack per row or per warp", list(res["part_b"]))
    lines += table("Part C: both kernels under the H200's FP8 adder (yardstick: fa3-fp8 224 under it)",
                   list(res["part_c"]), ["fa3-fp8 224, H200 adder"])
    if res["rescale_fraction_192"]:
        sl = [str(s) for s in SLACKS + [3.0]]
        lines += ["## O rescales per (warp, 192-key block) visit (rescale_count.py; row / warp rule)",
                  "", "| data | " + " | ".join(f"slack {s}" for s in sl) + " |",
                  "|---" * (len(sl) + 1) + "|"]
        for key, v in res["rescale_fraction_192"].items():
            name, c = key.split("|")
            lines.append(f"| {short(name)} {'c' if c == '1' else 'nc'} | " +
                         " | ".join(f"{v['row'][s]:.3f} / {v['warp'][s]:.3f}" for s in sl) + " |")
        lines.append("| mean | " + " | ".join(f"{mean_rescale(res, 'row', s):.3f} / "
                                              f"{mean_rescale(res, 'warp', s):.3f}" for s in sl) + " |")
        lines.append("")
        passing = [(mean_rescale(res, "warp" if " warp" in lab else "row",
                                 str(float(spec.split("slack=")[1].split(":")[0]))), lab)
                   for lab, spec in {**res["part_a"], **res["part_b"]}.items()
                   if res["verdict"][lab]["pass"] and "slack=" in spec]
        if passing:
            cost, lab = min(passing)
            lines += [f"Cheapest passing variant by mean rescale fraction: **{lab}** ({cost:.3f} "
                      f"rescales per warp-block visit; slack 0: {mean_rescale(res, 'row', '0.0'):.3f}, "
                      f"today's slack 3: {mean_rescale(res, 'row', '3.0'):.3f}).", ""]
        else:
            lines += ["No variant with a slack passes every cell.", ""]
        lines += ["Every variant with a slack, by its worst cell against `fa3-fp8 224` "
                  "(worst RMSE cell / worst max cell) and its mean O rescales per warp-block visit:", "",
                  "| variant | worst vs fa3-fp8 224 | RMSE | max | rescales |", "|---|---|---|---|---|"]
        rows = []
        for lab, spec in {**res["part_a"], **res["part_b"]}.items():
            if "slack=" not in spec:
                continue
            v = res["verdict"][lab]
            cost = mean_rescale(res, "warp" if "rescale=warp" in spec else "row",
                                str(float(spec.split("slack=")[-1].split(":")[0])))
            rows.append((v["worst_ratio_224"], lab, v, cost))
        for w, lab, v, cost in sorted(rows, key=lambda x: x[0]):
            lines.append(f"| {lab} | {w:.3f} | {v['worst_rmse_ratio_224']:.3f} | "
                         f"{v['worst_max_ratio_224']:.3f} | {cost:.3f} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()

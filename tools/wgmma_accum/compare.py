#!/usr/bin/env python3
"""Does the CPU model reproduce the GPU? For every captured layer in a GPU session's results
(bench/harness.py JSON, `accuracy` records on `captured:<stem>` datasets), the RMSE of FA3 FP8 and
of fp8attn's E4M3-P kernel, kernel-only and end to end, on the H200 and in the model (fp8attn-eval
on the same capture pack, schemes below, with the tensor core's accumulation rule measured by
tools/wgmma_accum/run.sh), and their ratio. The target: every ratio model / GPU within 1 +- 0.10.

  python3 tools/wgmma_accum/compare.py --gpu results/<date>-h200-<commit>.json fa3-captured.json \
      --rule results/wgmma-accum.json [--pack .carry/captures] [--eval build-model/tools/eval/fp8attn-eval]

Writes results/accum-model-vs-gpu.{json,md} (with command, commit, machine, date). Records on
`captured:<stem>@prepass...` datasets (the pre-pass + kernel, bench/bench_prepass.py) are compared
with the fp8attn-kernel scheme of their recorded pre-pass options; `...@prepass:fixture` ones ran
on the committed fixture (data/fixtures/<stem>.safetensors), which the model then reads.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import pathlib
import platform
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import rule as acc_rule  # noqa: E402

# GPU method name -> (model scheme without the accumulator keys, products on FP8 tensor cores).
# FA3 FP8: per-(batch, KV head) descales, P * 2^8 in E4M3, O accumulated across blocks.
# fp8attn (E4M3 P) fed the harness's per-head descales: the kernel's numerics as
# model/kernel_mirror.cc's kernel_numerics gives them for per-head K descales (192-key blocks, l
# the tensor core's sum of the rounded P, O one-level, P offset 2^5 with a max slack of 2^3
# (include/fp8attn/fp8attn.h), ex2.approx.ftz).
MIRROR = {
    "fa3_fp8": "fa3-fp8",
    "fa3-fp8": "fa3-fp8",
    "fp8attn": "fa3-fp8:block=192:l_rounded=1:p_offset=5:slack=3:ftz=1",
}
# The harness's "<mode>@prepass" methods (inputs "prepass"): the library's pre-pass with its default
# options (bench/fp8attn_calls.py prepass()), then the kernel in that mode; the model's scheme of
# the library's defaults. fp8attn_end_to_end (the whole BF16-in call) is the same computation.
PREPASS_MIRROR = {
    "fp8attn@prepass": "fp8attn-default",
}
TOLERANCE = 0.10


def prepass_spec(o: dict) -> str:
    """The fp8attn-kernel scheme (model/scheme.cc) of a record's fp8attn_quant_options."""
    return (f"fp8attn-kernel:smooth_k={int(o['smooth_k'])}:smooth_v={int(o['smooth_v'])}"
            f":hadamard_qk={int(o['hadamard_qk'])}:prepass_q_block={int(o['q_scale'] == 1)}"
            f":prepass_v_head={int(o['v_scale'] == 1)}:prepass_k_head={int(o.get('k_scale', 1) == 0)}")


def git(*a) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True).stdout.strip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", type=pathlib.Path, nargs="+", required=True,
                    help="harness results and/or tools/wgmma_accum/gpu_fa3.py output")
    ap.add_argument("--rule", type=pathlib.Path, help="tools/wgmma_accum/run.sh's JSON (default: "
                    "the model's assumed rule, stated in the output)")
    ap.add_argument("--pack", type=pathlib.Path, default=ROOT / ".carry/captures")
    ap.add_argument("--eval", type=pathlib.Path, default=ROOT / "build-model/tools/eval/fp8attn-eval")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "results/accum-model-vs-gpu")
    ap.add_argument("--dry-run", action="store_true", help="list the model runs, run nothing")
    ap.add_argument("--acc-keys", help="the model's accumulator keys instead of the rule's, e.g. "
                    "':acc=hopper' (the first model) or ':acc=fp32', for a baseline")
    ap.add_argument("--fixtures-only", action="store_true", help="only the records the GPU ran on "
                    "the committed fixtures (no pack needed)")
    args = ap.parse_args(argv)
    rule = acc_rule.rule_from_file(str(args.rule)) if args.rule else acc_rule.ASSUMED
    keys = args.acc_keys if args.acc_keys else ":acc=aligned" + acc_rule.scheme_keys(rule)
    gpu_records = [r for g in args.gpu for r in json.loads(g.read_text()).get("accuracy", [])]

    # (stem, suffix, causal, method) -> {reference: rmse} from the GPU.
    want: dict[tuple, dict] = {}
    for r in gpu_records:
        ds = r["dataset"]
        if not ds.startswith("captured:") or r.get("rmse") is None:
            continue
        stem, _, suffix = ds[len("captured:"):].partition("@")
        if args.fixtures_only and "fixture" not in suffix:
            continue
        if suffix and "options" in r:
            spec = prepass_spec(r["options"])
        elif not suffix and r["method"] in MIRROR:
            spec = MIRROR[r["method"]]
        elif not suffix and r.get("inputs") == "prepass" and r["method"] in PREPASS_MIRROR:
            spec = PREPASS_MIRROR[r["method"]]
        else:
            continue
        if r["reference"] not in ("end_to_end", "kernel_only"):
            continue
        # A padded head_dim-64 capture run at its own softmax scale (gpu_fa3.py) is another
        # experiment than the same file at the harness's 1/sqrt(128): the scale is part of the key.
        scale = float(r["softmax_scale"]) if r.get("softmax_scale") else None
        key = (stem, suffix, bool(r["causal"]), r["method"], scale)
        want.setdefault(key, {"spec": spec})[r["reference"]] = r["rmse"]
    if not want:
        raise SystemExit(f"{args.gpu}: no captured-data records of {', '.join([*MIRROR, *PREPASS_MIRROR])}")

    # One fp8attn-eval run per (capture file, mask) with every scheme needed there.
    runs: dict[tuple, set] = {}
    def data_of(stem, suffix):  # "@...fixture": the committed fixture of that layer
        return (ROOT / "data" / "fixtures" if "fixture" in suffix else args.pack) / f"{stem}.safetensors"

    for (stem, suffix, causal, method, scale), v in want.items():
        runs.setdefault((str(data_of(stem, suffix)), causal, scale), set()).add(v["spec"] + keys)
    model: dict[tuple, dict] = {}
    for (data, causal, scale), specs in sorted(runs.items(), key=str):
        data = pathlib.Path(data)
        cmd = [str(args.eval), "--data", str(data), "--mask", "causal" if causal else "none",
               "--scheme", ",".join(sorted(specs)), "--quiet"]
        if scale is not None:
            cmd += ["--softmax-scale", repr(scale)]
        if args.dry_run:
            print(" ".join(cmd))
            continue
        if not data.exists():
            raise SystemExit(f"{data}: the pack the GPU session ran on is needed (tools/capture/pack.py)")
        with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
            subprocess.run(cmd + ["--json", tmp.name], check=True)
            recs = json.load(open(tmp.name))
        for rec in recs:  # fp8attn-eval --json: an array of records
            model[(str(data), causal, scale, rec["scheme"], rec["reference"])] = rec["rmse"]
    if args.dry_run:
        return 0

    rows = []
    for (stem, suffix, causal, method, scale), v in sorted(want.items(), key=str):
        spec = v["spec"] + keys
        for ref in ("kernel_only", "end_to_end"):
            if ref not in v:
                continue  # the GPU session did not record this reference
            g = v.get(ref)
            m = model.get((str(data_of(stem, suffix)), causal, scale, spec, ref))
            ratio = m / g if (g and m is not None) else None
            rows.append({"dataset": stem + ("@" + suffix if suffix else ""), "causal": causal,
                         "softmax_scale": scale,
                         "method": method, "reference": ref, "gpu_rmse": g, "model_rmse": m,
                         "model_scheme": spec, "ratio": ratio,
                         "within": ratio is not None and abs(ratio - 1) <= TOLERANCE})
    prov = {"command": " ".join(sys.argv), "commit": git("rev-parse", "HEAD"), "machine": platform.node(),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "gpu_results": [str(g) for g in args.gpu], "pack": str(args.pack)}
    doc = {"provenance": prov, "accumulator_rule": {k: v for k, v in rule.items() if k != "source"},
           "accumulator_keys": keys,
           "tolerance": TOLERANCE, "all_within": all(r["within"] for r in rows), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    fmt = lambda x: "-" if x is None else (f"{x:.3g}" if not isinstance(x, float) or math.isfinite(x) else str(x))
    lines = [f"# CPU model vs H200 (model accumulator `{keys}`)", "",
             f"From {', '.join(f'`{g}`' for g in args.gpu)} and fp8attn-eval on `{args.pack}`; written by `{prov['command']}` at "
             f"{prov['commit'][:12]} on {prov['machine']}, {prov['date']}.", "",
             "| dataset | causal | method | reference | GPU RMSE | model RMSE | model / GPU | within 10% |",
             "|---|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['dataset']} | {'yes' if r['causal'] else 'no'} | {r['method']} | {r['reference']} "
                     f"| {fmt(r['gpu_rmse'])} | {fmt(r['model_rmse'])} | {fmt(r['ratio'])} | "
                     f"{'yes' if r['within'] else 'NO'} |")
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}.json/.md: {sum(r['within'] for r in rows)}/{len(rows)} within 10%")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Does the CPU model reproduce the GPU? For every captured layer in a GPU session's results
(bench/harness.py JSON, `accuracy` records on `captured:<stem>` datasets), the RMSE of FA3 FP8 and
of fp8attn's E4M3-P kernel, kernel-only and end to end, on the H200 and in the model (fp8attn-eval
on the same capture pack, schemes below, with the tensor core's accumulation rule measured by
tools/wgmma_accum/run.sh), and their ratio. The target: every ratio model / GPU within 1 +- 0.10.

  python3 tools/wgmma_accum/compare.py --gpu results/<date>-h200-<commit>.json fa3-captured.json \
      --rule results/wgmma-accum.json [--pack .carry/captures] [--eval build-model/tools/eval/fp8attn-eval]
  # the CPU half alone, ahead of the GPU run (the harness's methods on every pack file), kept in
  # a model cache that the later comparison reads instead of re-running fp8attn-eval:
  python3 tools/wgmma_accum/compare.py --model-only [--datasets smollm2-135m] --rule ... \
      --model-cache results/accum-model-cpu-<commit>.json

Writes results/accum-model-vs-gpu.{json,md} (with command, commit, machine, date). Records on
`captured:<stem>@prepass...` datasets (the pre-pass + kernel, bench/bench_prepass.py) are compared
with the fp8attn-kernel scheme of their recorded pre-pass options; `...@prepass:fixture` ones ran
on the committed fixture (data/fixtures/<stem>.safetensors), which the model then reads.
A record's softmax_scale (a padded head-dim-64 capture: 1/8) goes to the model as --softmax-scale.
Model cache: fp8attn-eval figures keyed by (file, its sha256, mask, scale, scheme, reference), so a
cached figure is reused only for the very bytes it was computed on.
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
# Both read python/fp8attn/quantize.py's per-head inputs, whose descale torch computes as
# amax * fp32(1/448) (a CUDA tensor divided by a Python float is multiplied by its FP32 reciprocal),
# one ulp above amax/448 for some amax: torch_scale=1 makes the model's inputs those very bytes.
MIRROR = {
    "fa3_fp8": "fa3-fp8:torch_scale=1",
    "fa3-fp8": "fa3-fp8:torch_scale=1",
    "fp8attn": "fa3-fp8:torch_scale=1:block=192:l_rounded=1:p_offset=5:slack=3:ftz=1",
}
# The harness's "<mode>@prepass" methods (inputs "prepass"): the library's pre-pass with its default
# options (bench/fp8attn_calls.py prepass()), then the kernel in that mode; the model's scheme of
# the library's defaults. fp8attn_end_to_end (the whole BF16-in call) is the same computation.
PREPASS_MIRROR = {
    "fp8attn@prepass": "fp8attn-default",
}
TOLERANCE = 0.10
# What the model's schemes meant when a cache's figures were computed. A scheme's name can change
# meaning (fp8attn-default took the library's Hadamard seed in emulation 2), and the cache is keyed
# by name: a cache of another emulation is refused, not silently reused.
EMULATION = 2
# --model-only: the harness's methods on captured data (bench/methods.py, bench/accuracy.py).
HARNESS_METHODS = {"fa3_fp8": MIRROR["fa3_fp8"], "fp8attn": MIRROR["fp8attn"],
                   "fp8attn@prepass": PREPASS_MIRROR["fp8attn@prepass"]}


def file_sha256(path: pathlib.Path) -> str:
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


def pack_scale(path: pathlib.Path) -> float | None:
    """The file's own softmax_scale (tools/capture/pack.py metadata), as the harness reads it."""
    sys.path.insert(0, str(ROOT / "bench"))
    from accuracy import pack_softmax_scale
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        meta = json.loads(f.read(n)).get("__metadata__", {})
    return pack_softmax_scale(meta)


def cache_key(data: pathlib.Path, sha: str, causal: bool, scale, spec: str, ref: str) -> str:
    return json.dumps([data.name, sha, bool(causal), scale, spec, ref])


def prepass_spec(o: dict) -> str:
    """The fp8attn-kernel scheme (model/scheme.cc) of a record's fp8attn_quant_options."""
    return (f"fp8attn-kernel:smooth_k={int(o['smooth_k'])}:smooth_v={int(o['smooth_v'])}"
            f":hadamard_qk={int(o['hadamard_qk'])}:prepass_q_block={int(o['q_scale'] == 1)}"
            f":prepass_v_head={int(o['v_scale'] == 1)}:prepass_k_head={int(o.get('k_scale', 1) == 0)}")


def write_cache(path: pathlib.Path, cache: dict, keys: str) -> None:
    cache.setdefault("about", "fp8attn-eval RMSE per [file, sha256, causal, softmax_scale, scheme, "
                     "reference], written by tools/wgmma_accum/compare.py (--model-cache)")
    writes = cache.setdefault("writes", [])
    if not cache.get("_written"):  # one provenance entry per invocation, however many writes
        writes.append({"command": " ".join(sys.argv), "commit": git("rev-parse", "HEAD"),
                       "machine": platform.node(), "accumulator_keys": keys,
                       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")})
        cache["_written"] = True
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({k: v for k, v in cache.items() if k != "_written"}, indent=1) + "\n")


def git(*a) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True).stdout.strip()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", type=pathlib.Path, nargs="+",
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
    ap.add_argument("--model-cache", type=pathlib.Path, help="JSON of fp8attn-eval figures: read "
                    "(reused where the key matches) and written back with the new ones")
    ap.add_argument("--model-only", action="store_true", help="no GPU results: run the model for "
                    "the harness's methods on every pack file, fill --model-cache, write no table")
    ap.add_argument("--datasets", help="with --model-only: comma list of stem prefixes "
                    "(e.g. smollm2-135m)")
    args = ap.parse_args(argv)
    if args.model_only and (args.gpu or not args.model_cache):
        ap.error("--model-only takes --model-cache and no --gpu")
    if not args.model_only and not args.gpu:
        ap.error("--gpu is required (or --model-only)")
    rule = acc_rule.rule_from_file(str(args.rule)) if args.rule else acc_rule.ASSUMED
    keys = args.acc_keys if args.acc_keys else ":acc=aligned" + acc_rule.scheme_keys(rule)
    gpu_records = [r for g in args.gpu or [] for r in json.loads(g.read_text()).get("accuracy", [])]
    if args.model_only:
        prefixes = args.datasets.split(",") if args.datasets else [""]
        for f in sorted(args.pack.glob("*.safetensors")):
            if any(f.stem.startswith(p) for p in prefixes):
                scale = pack_scale(f)
                gpu_records += [{"dataset": f"captured:{f.stem}", "causal": c, "method": m,
                                 "reference": ref, "rmse": None, "softmax_scale": scale,
                                 "inputs": "prepass" if "@prepass" in m else "per_head"}
                                for c in (False, True) for m in HARNESS_METHODS
                                for ref in ("end_to_end", "kernel_only")]

    # (stem, suffix, causal, method) -> {reference: rmse} from the GPU.
    want: dict[tuple, dict] = {}
    for r in gpu_records:
        ds = r["dataset"]
        if not ds.startswith("captured:") or (r.get("rmse") is None and not args.model_only):
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
    cache = (json.loads(args.model_cache.read_text()) if args.model_cache and args.model_cache.exists()
             else {"figures": {}, "emulation": EMULATION})
    if cache.get("emulation") != EMULATION:
        raise SystemExit(f"{args.model_cache}: figures of model emulation {cache.get('emulation', 1)}, "
                         f"this is {EMULATION} (fp8attn-default's Hadamard seed, the harness's "
                         "per-head scales): give a new --model-cache")
    figures, reused, runs_done = cache["figures"], 0, 0
    for (data, causal, scale), specs in sorted(runs.items(), key=str):
        data = pathlib.Path(data)
        sha = file_sha256(data) if data.exists() else None
        if sha:  # figures already computed on these very bytes
            for spec in specs:
                for ref in ("kernel_only", "end_to_end"):
                    hit = figures.get(cache_key(data, sha, causal, scale, spec, ref))
                    if hit is not None:
                        model[(str(data), causal, scale, spec, ref)] = hit
            done = {sp for sp in specs if all((str(data), causal, scale, sp, ref) in model
                                              for ref in ("kernel_only", "end_to_end"))}
            reused += len(done)
            specs = specs - done
            if not specs:
                continue
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
            figures[cache_key(data, sha, causal, scale, rec["scheme"], rec["reference"])] = rec["rmse"]
        runs_done += 1
        print(f"model: {data.name} mask={'causal' if causal else 'none'} scale={scale}: "
              f"{len(specs)} scheme(s)", flush=True)
        if args.model_cache:  # after every run: an interrupted pass keeps what it computed
            write_cache(args.model_cache, cache, keys)
    if args.dry_run:
        return 0
    print(f"model: {runs_done} fp8attn-eval run(s), {reused} (file, mask, scheme) figure pair(s) "
          f"from {args.model_cache}" if args.model_cache else f"model: {runs_done} fp8attn-eval run(s)")
    if args.model_only:  # the cache was written after each run; nothing new, nothing written
        print(f"{args.model_cache}: {len(figures)} figures" + (" (new ones written)" if runs_done else ""))
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

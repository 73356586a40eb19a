#!/usr/bin/env python3
"""The kernel on the H200 against the CPU model, on the same captured data: reads a GPU session's
results (bench/harness.py JSON: `accuracy` records on `captured:<stem>` (FA3-like per-head
scales, python/fp8attn/quantize.py) and `captured:<stem>@prepass` (the pre-pass + kernel, three
option sets)), runs fp8attn-eval on the capture pack the session carried (.carry/captures/, from
tools/capture/pack.py) with the schemes that mirror each GPU method, and writes
results/numerics-gpu-vs-model.{json,txt}: per dataset, mask and method the GPU's end-to-end RMSE
over SDPA cuDNN BF16's and the model's over bf16-flash's, and the GPU/model ratio of the RMSEs.

The harness does not record which pack it ran on: run this with the pack that was carried (check
.carry/captures/pack.json). The harness names the fixtures in data/fixtures/ like the pack's files;
the pack's records come first, and only those are read.

usage: lab/study/compare_gpu.py --gpu results/<date>-h200-<commit>.json [--pack .carry/captures]
"""
import argparse
import datetime
import json
import pathlib
import platform
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import schemes as S  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
# GPU method -> (dataset suffix, model scheme). The end-to-end records of bench/bench_prepass.py
# carry their pre-pass options since the defaults changed (Hadamard on, K per head); their scheme
# comes from those (model_spec_of_options). These fixed specs are for older results, whose
# "fp8attn_end_to_end" had no rotation and 128-key K descales. "fp8attn" (E4M3 P, per-head K
# descales: 192-key blocks) sums l from the rounded P (the tensor core's row sum) since commit
# 71c468f; sessions before it ran l from the FP32 p (l_rounded=0).
MIRROR = {
    "fp8attn": ("", "fa3-fp8:block=192:l_rounded=1:acc=hopper"),
    "fp8attn_p_hilo": ("", "fa3-fp8:p=e4m3hilo:two_level=1:l_rounded=0:acc=hopper"),  # hi+lo: FP32 l
    "fp8attn_end_to_end": ("@prepass", "fp8attn-kernel:acc=hopper"),
    "fp8attn_end_to_end_hadamard": ("@prepass", "fp8attn-kernel-rot:acc=hopper"),
    "fp8attn_end_to_end_no_hadamard": ("@prepass", "fp8attn-kernel:prepass_k_head=1:acc=hopper"),
    "fp8attn_end_to_end_no_smooth": ("@prepass", "fp8attn-kernel:smooth_k=0:smooth_v=0:acc=hopper"),
}


def model_spec_of_options(o):
    """The fp8attn-kernel scheme (model/scheme.cc) of a record's fp8attn_quant_options."""
    return (f"fp8attn-kernel:smooth_k={int(o['smooth_k'])}:smooth_v={int(o['smooth_v'])}"
            f":hadamard_qk={int(o['hadamard_qk'])}:prepass_q_block={int(o['q_scale'] == 1)}"
            f":prepass_v_head={int(o['v_scale'] == 1)}:prepass_k_head={int(o.get('k_scale', 1) == 0)}"
            f":acc=hopper")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", type=pathlib.Path, required=True)
    ap.add_argument("--pack", type=pathlib.Path, default=ROOT / ".carry/captures")
    ap.add_argument("--eval", type=pathlib.Path, default=ROOT / "build-h5/tools/eval/fp8attn-eval")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "results/numerics-gpu-vs-model")
    args = ap.parse_args()
    gpu = json.loads(args.gpu.read_text())
    first = {}
    for r in gpu.get("accuracy", []):
        first.setdefault((r["dataset"], r["causal"], r["method"], r["reference"]), r)
    files = sorted(args.pack.glob("*.safetensors"))
    if not files:
        sys.exit(f"no pack in {args.pack}: python3 tools/capture/pack.py")
    tmp = ROOT / "results/.gpu-vs-model-tmp.json"
    specs = ["bf16-flash"] + [m for _, m in MIRROR.values()]
    specs += sorted({model_spec_of_options(r["options"]) for r in gpu.get("accuracy", []) if r.get("options")})
    cmd = ["nice", "-n", "10", str(args.eval), "--data", ",".join(str(f) for f in files), "--mask", "both",
           "--threads", "2", "--no-kernel-only", "--scheme", ",".join(specs), "--json", str(tmp), "--quiet"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode:
        sys.exit(r.stderr)
    model = {(x["dataset"], x["causal"], x["scheme"]): x for x in json.loads(tmp.read_text())}
    tmp.unlink()
    rows = []
    for f in files:
        for causal in (False, True):
            for method, (suffix, spec) in MIRROR.items():
                # Results written after the bench named its two sources apart carry ":pack"
                # (the carried pack this script compares with); older ones do not.
                for name in (f"captured:{f.stem}{suffix}:pack", f"captured:{f.stem}{suffix}"):
                    g = first.get((name, causal, method, "end_to_end"))
                    y = first.get((name, causal, "sdpa_cudnn_bf16", "end_to_end"))
                    if g and y:
                        break
                if g and g.get("options"):
                    spec = model_spec_of_options(g["options"])
                m = model.get((f.stem, causal, spec))
                if not (g and y and m and g.get("rmse") and y.get("rmse")):
                    continue
                rows.append({"dataset": name, "causal": causal, "method": method, "model_scheme": spec,
                             "gpu_rmse": g["rmse"], "gpu_max_abs": g["max_abs"], "gpu_rmse_ratio_to_cudnn": g["rmse"] / y["rmse"],
                             "gpu_max_ratio_to_cudnn": g["max_abs"] / y["max_abs"],
                             "model_rmse": m["rmse"], "model_max_abs": m["max_abs"], "model_rmse_ratio_to_bf16_flash": m["rmse_ratio"],
                             "model_max_ratio_to_bf16_flash": m["max_ratio"], "gpu_over_model_rmse": g["rmse"] / m["rmse"]})
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
    pack = json.loads((args.pack / "pack.json").read_text()) if (args.pack / "pack.json").exists() else None
    meta = {"command": " ".join(sys.argv), "commit": commit, "machine": platform.node(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "gpu_results": str(args.gpu), "gpu_commit": gpu.get("commit"), "gpu_date": gpu.get("date"),
            "pack": pack, "eval_command": " ".join(cmd)}
    args.out.with_suffix(".json").write_text(json.dumps({**meta, "records": rows}, indent=1) + "\n")
    lines = [f"# {json.dumps({k: meta[k] for k in ('command', 'commit', 'machine', 'date', 'gpu_results', 'gpu_commit')})}",
             f"{'dataset':<44} {'causal':<6} {'method':<30} {'GPU/cuDNN':>10} {'model/bf16':>10} {'GPU/model':>10}"]
    for x in rows:
        lines.append(f"{x['dataset']:<44} {str(x['causal']):<6} {x['method']:<30} {x['gpu_rmse_ratio_to_cudnn']:>10.2f} "
                     f"{x['model_rmse_ratio_to_bf16_flash']:>10.2f} {x['gpu_over_model_rmse']:>10.2f}")
    args.out.with_suffix(".txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

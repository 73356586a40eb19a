"""Issue 17 on the GPU, one process: the end-to-end call (fp8attn_attention, BF16 in) with today's
pre-pass (centre=mean: statistics pass + fused pass) and the one-pass pre-pass (centre=sample)
head to head with each other and each with FA3 BF16 (fa3-fwd 0.0.3); then the end-to-end error of
both against exact FP64 attention on two small synthetic sets, in the default mode (E4M3 V^T) and
the accurate mode (FP16 P on an FP16 V^T: the one-pass path with FP16 V^T, end to end).

Speed: for each shape (b, s, h, h_kv) in SHAPES and each mask, speed.head_to_head (alternating
blocks of 2, >= RUNS calls each) of (a) mean vs sample, (b) mean vs FA3 BF16, (c) sample vs FA3
BF16. Records {method, b, sq, sk, h, h_kv, causal, tflops_median, runs, protocol}, methods
fp8attn_end_to_end (centre=mean), fp8attn_end_to_end_one_pass (centre=sample), fa3_bf16.
Accuracy: gaussian and outlier (bench/accuracy.py synthetic), b=1 s=4096 h=8/2, both masks, both
modes: rmse, max_abs of each centre against exact FP64 attention, and their ratio (sample / mean;
issue 17's acceptance: <= 1.10).

usage: python3 lab/probes/one_pass_e2e.py LIB OUT.json [COMMIT_FILE]   (FA3 on PYTHONPATH; without
it the FA3 pairs are left out and the rest runs)
"""
import json
import os
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import accuracy  # noqa: E402
import fp8attn_calls as calls  # noqa: E402
import methods  # noqa: E402
import pair_timing  # noqa: E402

SHAPES = [(2, 8192, 32, 32), (16, 1024, 32, 32)]
if os.environ.get("E2E_SHAPES"):  # e.g. "1,16384,32,32 2,8192,32,32": b,s,h,h_kv per shape
    SHAPES = [tuple(int(x) for x in t.split(",")) for t in os.environ["E2E_SHAPES"].split()]
RUNS = 100
ACCURACY_SHAPE = (1, 4096, 8, 2)
MODES = ("fp8attn", "fp8attn_accurate")  # E4M3 P on E4M3 V^T; FP16 P on FP16 V^T
CENTRE = {"fp8attn_end_to_end": 0, "fp8attn_end_to_end_one_pass": 1}


def runner(lib, q, k, v, causal, centre, mode="fp8attn"):
    run = calls.end_to_end_runner(lib, q, k, v, causal, mode=mode)
    args = run.keep[0]  # the marshalled fp8attn_attention_args, passed by reference every call
    args.quant.centre = centre
    run()
    return run


def flops(b, s, h, causal):
    f = 4.0 * b * s * s * h * 128
    return f / 2 if causal else f


def main():
    lib = calls.load(sys.argv[1])
    fa3 = methods.load_fa3()
    commit = Path(sys.argv[3]) if len(sys.argv) > 3 else ROOT / ".carry" / "COMMIT"
    out = {"commit": commit.read_text().strip() if commit.exists() else "?",
           "gpu": torch.cuda.get_device_name(), "runs": RUNS, "speed": [], "accuracy": [],
           "fa3": fa3 if isinstance(fa3, str) else "fa3-fwd==0.0.3"}
    protocol = "head_to_head alternating blocks of 2, medians"
    for (b, s, h, h_kv) in SHAPES:
        for causal in (False, True):
            torch.manual_seed(0)
            q = torch.randn(b, s, h, 128, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(b, s, h_kv, 128, device="cuda", dtype=torch.bfloat16)
            v = torch.randn(b, s, h_kv, 128, device="cuda", dtype=torch.bfloat16)
            run = {m: runner(lib, q, k, v, causal, c) for m, c in CENTRE.items()}
            pairs = [("fp8attn_end_to_end", "fp8attn_end_to_end_one_pass")]  # one-pass vs mean
            if not isinstance(fa3, str):
                run["fa3_bf16"] = lambda: fa3.flash_attn_func(q, k, v, causal=causal)
                pairs += [(m, "fa3_bf16") for m in CENTRE]
            pair_timing.time_pairs(run, pairs, b, s, h, h_kv, causal, RUNS, protocol, flops, out["speed"])
            del run
            torch.cuda.empty_cache()
            Path(sys.argv[2]).write_text(json.dumps(out, indent=1) + "\n")  # so far
    b, s, h, h_kv = ACCURACY_SHAPE
    for kind in ("gaussian", "outlier"):
        q, k, v = accuracy.synthetic(kind, b, s, h, h_kv, 128, 17, "cuda")
        for causal in (False, True):
            ref, _ = accuracy.exact_attention(q, k, v, causal)
            for mode in MODES:
                errs = {}
                for m, c in CENTRE.items():
                    r = runner(lib, q, k, v, causal, c, mode)
                    torch.cuda.synchronize()
                    errs[m] = accuracy.error_metrics(r.out[0], ref)
                rec = {"set": kind, "mode": mode, "b": b, "s": s, "h": h, "h_kv": h_kv,
                       "causal": causal,
                       **{f"{m}_{key}": e[key] for m, e in errs.items() for key in ("rmse", "max_abs")}}
                mean, one = errs["fp8attn_end_to_end"], errs["fp8attn_end_to_end_one_pass"]
                pair_timing.within_10pct(rec, one, mean)
                out["accuracy"].append(rec)
                print(f"{kind} {mode} h{h}/{h_kv} causal={int(causal)}: rmse {mean['rmse']} -> "
                      f"{one['rmse']} (x{rec['rmse_ratio']}), max x{rec['max_ratio']} "
                      f"{'PASS' if rec['pass'] else 'FAIL'}", flush=True)
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", sys.argv[2])


if __name__ == "__main__":
    main()

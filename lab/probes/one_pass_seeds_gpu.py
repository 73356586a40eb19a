"""Issue 17 on the GPU: the one-pass centre's end-to-end error against the exact mean's over several
seeds (the GPU side of lab/study/one_pass_seeds.py; the earlier probe, one_pass_e2e.py, drew one
seed). Gaussian and outlier sets (bench/accuracy.py synthetic), b1 s4096 h8/2, both masks, the
default mode; RMSE and max |err| against exact FP64 attention, ratio sample / mean per seed.
  python3 lab/probes/one_pass_seeds_gpu.py LIB OUT.json [SEEDS]
"""
import json
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "lab" / "probes"))
import accuracy  # noqa: E402
import fp8attn_calls as calls  # noqa: E402
from one_pass_e2e import CENTRE, runner  # noqa: E402


def main():
    lib = calls.load(sys.argv[1])
    seeds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    b, s, h, h_kv = 1, 4096, 8, 2
    commit = ROOT / ".carry" / "COMMIT"
    out = {"command": "python3 lab/probes/one_pass_seeds_gpu.py " + " ".join(sys.argv[1:]),
           "commit": commit.read_text().strip() if commit.exists() else "?",
           "gpu": torch.cuda.get_device_name(), "shape": [b, s, h, h_kv], "records": []}
    for kind in ("gaussian", "outlier"):
        for seed in range(1, seeds + 1):
            q, k, v = accuracy.synthetic(kind, b, s, h, h_kv, 128, seed, "cuda")
            for causal in (False, True):
                ref, _ = accuracy.exact_attention(q, k, v, causal)
                errs = {}
                for m, c in CENTRE.items():
                    r = runner(lib, q, k, v, causal, c)
                    torch.cuda.synchronize()
                    errs[m] = accuracy.error_metrics(r.out[0], ref)
                mean, one = errs["fp8attn_end_to_end"], errs["fp8attn_end_to_end_one_pass"]
                out["records"].append({"set": kind, "seed": seed, "causal": causal,
                                       "mean_rmse": mean["rmse"], "sample_rmse": one["rmse"],
                                       "mean_max": mean["max_abs"], "sample_max": one["max_abs"],
                                       "rmse_ratio": one["rmse"] / mean["rmse"],
                                       "max_ratio": one["max_abs"] / mean["max_abs"]})
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1) + "\n")
    for kind in ("gaussian", "outlier"):
        for causal in (False, True):
            sel = [r for r in out["records"] if r["set"] == kind and r["causal"] == causal]
            rr, mr = [r["rmse_ratio"] for r in sel], [r["max_ratio"] for r in sel]
            print(f"{kind} causal={int(causal)} seeds {len(sel)}: rmse ratio median {statistics.median(rr):.3f} "
                  f"[{min(rr):.3f}, {max(rr):.3f}], > 1.10: {sum(x > 1.1 for x in rr)}; max ratio median "
                  f"{statistics.median(mr):.3f} [{min(mr):.3f}, {max(mr):.3f}], > 1.10: {sum(x > 1.1 for x in mr)}")
    print("wrote", sys.argv[2])


if __name__ == "__main__":
    main()

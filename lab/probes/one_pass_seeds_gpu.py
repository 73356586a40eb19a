"""Issue 17 on the GPU: the one-pass centre's end-to-end error against the exact mean's over several
seeds (the GPU side of lab/study/one_pass_data_seeds.py, whose table it prints; the earlier probe,
one_pass_e2e.py, drew one seed). Gaussian and outlier sets (bench/accuracy.py synthetic), b1 s4096 h8/2, both masks, the
default mode; RMSE and max |err| against exact FP64 attention, ratio sample / mean per seed.
SEQLEN (default 4096) changes the sequence's length, the heads kept.
  python3 lab/probes/one_pass_seeds_gpu.py LIB OUT.json [SEEDS] [SEQLEN]
"""
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "lab" / "probes"))
sys.path.insert(0, str(ROOT / "lab" / "study"))
import accuracy  # noqa: E402
import fp8attn_calls as calls  # noqa: E402
from one_pass_data_seeds import SUMMARY_HEAD, summary_rows  # noqa: E402
from one_pass_e2e import CENTRE, runner  # noqa: E402
from pair_timing import within_10pct  # noqa: E402


def main():
    lib = calls.load(sys.argv[1])
    seeds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    b, s, h, h_kv = 1, int(sys.argv[4]) if len(sys.argv) > 4 else 4096, 8, 2
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
                rec = {"set": kind, "seed": seed, "causal": causal,
                       "mean_rmse": mean["rmse"], "sample_rmse": one["rmse"],
                       "mean_max": mean["max_abs"], "sample_max": one["max_abs"]}
                within_10pct(rec, one, mean)
                out["records"].append(rec)
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1) + "\n")
    print("\n".join([*SUMMARY_HEAD, *summary_rows(out["records"], ("gaussian", "outlier"))]))
    print("wrote", sys.argv[2])


if __name__ == "__main__":
    main()

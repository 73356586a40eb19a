"""Lab probe (GPU): one library's kernel-only error in the given modes, beside FA3 FP8's on the same
per-head E4M3 inputs: a correctness screen for a kernel variant (a wrong kernel shows as an error
orders of magnitude above FA3's; NaN fails) and its numerics against the release's (run it once per
library: one library per process). Gaussian and FA3's outlier set (bench/accuracy.synthetic, seed
1), b1 h8/2 at seqlen 1000 and 4096, both masks; RMSE and max |err| against exact FP64 attention on
the dequantized inputs.
  python3 lab/probes/lib_errors_gpu.py LIB OUT.json [MODE,...]   (default fp8attn,fp8attn_exact;
  fp8attn_accurate: FP16 P on an FP16 V^T of the same V, against exact attention on those values)
"""
import json
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
import accuracy  # noqa: E402
import fp8attn_calls as calls  # noqa: E402
import methods  # noqa: E402

SHAPES = [(1, 1000, 8, 2), (1, 4096, 8, 2)]


def main():
    lib = calls.load(sys.argv[1])
    modes = sys.argv[3].split(",") if len(sys.argv) > 3 else ["fp8attn", "fp8attn_exact"]
    fa3 = methods.load_fa3()
    commit = Path(sys.argv[1]).parent / "COMMIT"
    out = {"command": "python3 lab/probes/lib_errors_gpu.py " + " ".join(sys.argv[1:]),
           "lib": sys.argv[1], "commit": commit.read_text().strip() if commit.exists() else "?",
           "gpu": torch.cuda.get_device_name(), "records": []}
    bad = 0
    for kind in ("gaussian", "outlier"):
        for (b, s, h, h_kv) in SHAPES:
            q, k, v = accuracy.synthetic(kind, b, s, h, h_kv, 128, 1, "cuda")
            qz = calls.quantize_per_head(q, k, v)
            for causal in (False, True):
                ref, _ = accuracy.exact_attention(*qz.dequantized(), causal)
                refs = {}
                outs = {}
                for m in modes:
                    if m == calls.ACCURATE:  # FP16 P on an FP16 V^T: its own reference (V in FP16)
                        qv = calls.with_fp16_v(qz, v)
                        outs[m] = calls.accurate_call(lib, qv, causal)[0]
                        refs[m] = accuracy.exact_attention(*qv.dequantized(), causal)[0]
                    else:
                        outs[m] = calls.kernel_call(lib, qz, causal, m)[0]
                if not isinstance(fa3, str):
                    outs["fa3_fp8"] = methods._out(methods._fa3_fp8(fa3, qz, causal)())
                torch.cuda.synchronize()
                for m, o in outs.items():
                    e = accuracy.error_metrics(o, refs.get(m, ref))
                    ok = math.isfinite(e["rmse"]) and math.isfinite(e["max_abs"])
                    bad += not ok
                    out["records"].append({"set": kind, "s": s, "causal": causal, "method": m,
                                           "reference": "kernel_only", "rmse": e["rmse"],
                                           "max_abs": e["max_abs"], "finite": ok})
                    print(f"{kind:8} s{s:<5} causal={int(causal)} {m:14} rmse {e['rmse']:.4e} "
                          f"max {e['max_abs']:.4e}{'' if ok else '  NOT FINITE'}", flush=True)
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", sys.argv[2])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

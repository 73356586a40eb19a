"""Issue 17 on the GPU: where the one-pass centre's extra end-to-end error on Gaussian non-causal
comes from. lab/probes/one_pass_seeds_gpu.py measured the sample centre at a median 1.095x the exact
mean's RMSE there (10 seeds), where the CPU model (lab/study/one_pass_data_seeds.py) gives at most
1.011x on 20 seeds of its own draws. For each seed and mask and each centre (mean, sample), the
pre-pass (bench/fp8attn_calls.Prepass, default options but the centre) and the default kernel on
its cache, then the split of the error:
  end_to_end   kernel output vs exact FP64 attention on the BF16 inputs
  kernel_only  kernel output vs exact FP64 attention on the cache's dequantized inputs (+ o_bias)
  floor        that exact output rounded to BF16 vs the FP64 reference (the inputs' rounding)
and whether the end-to-end call (fp8attn_attention with the same centre) gives the same bits.
Seed 1's BF16 q, k, v go to OUT_DIR/one-pass-gaussian-s1.safetensors (the layout fp8attn-eval
--data reads) and each centre's dequantized K, V and o_bias (FP32) to OUT_DIR/one-pass-gaussian-s1-{mean,sample}-kv
.safetensors, so the CPU model can be run here on the very same draw.
  python3 lab/probes/one_pass_decompose_gpu.py LIB OUT_DIR [SEEDS]
"""
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "lab" / "probes"))
import accuracy  # noqa: E402
import fp8attn_calls as calls  # noqa: E402
from one_pass_e2e import runner  # noqa: E402

SHAPE = (1, 4096, 8, 2)  # one_pass_seeds_gpu.py's
NAMES = {0: "mean", 1: "sample"}


def main():
    lib = calls.load(sys.argv[1])
    out_dir = Path(sys.argv[2])
    seeds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    b, s, h, h_kv = SHAPE
    commit = ROOT / ".carry" / "COMMIT"
    out = {"command": "python3 lab/probes/one_pass_decompose_gpu.py " + " ".join(sys.argv[1:]),
           "commit": commit.read_text().strip() if commit.exists() else "?",
           "gpu": torch.cuda.get_device_name(), "shape": list(SHAPE), "records": []}
    for kind in ("gaussian", "outlier"):
        for seed in range(1, seeds + 1):
            q, k, v = accuracy.synthetic(kind, b, s, h, h_kv, 128, seed, "cuda")
            if kind == "gaussian" and seed == 1:
                save_file({"q": q.cpu().contiguous(), "k": k.cpu().contiguous(), "v": v.cpu().contiguous()},
                          str(out_dir / "one-pass-gaussian-s1.safetensors"),
                          metadata={"layout": "(b, s, h, d)", "made_by": out["command"],
                                    "synthetic": "bench/accuracy.synthetic('gaussian', 1, 4096, 8, 2, 128, 1, 'cuda')"})
            for causal in (False, True):
                ref, _ = accuracy.exact_attention(q, k, v, causal)
                for centre, name in NAMES.items():
                    pp = calls.prepass(lib, q, k, v, centre=centre)
                    o, _ = pp.run(causal, "fp8attn")
                    dq, dk, dv, sc, ob = pp.dequantized()
                    exact, _ = accuracy.exact_attention(dq, dk, dv, causal, softmax_scale=sc)
                    exact = accuracy.add_o_bias(exact, ob)
                    e2e = runner(lib, q, k, v, causal, centre).out[0]
                    torch.cuda.synchronize()
                    rec = {"set": kind, "seed": seed, "causal": causal, "centre": name,
                           "end_to_end": accuracy.error_metrics(o, ref),
                           "kernel_only": accuracy.error_metrics(o, exact),
                           "floor": accuracy.error_metrics(exact.to(torch.bfloat16), ref),
                           "floor_fp64": accuracy.error_metrics(exact, ref),
                           "e2e_call_same_bits": bool(torch.equal(e2e, o)),
                           "v_mean_abs_max": float(ob.abs().max())}
                    out["records"].append(rec)
                    print(f"{kind:8} s{seed} c={int(causal)} {name:6} e2e {rec['end_to_end']['rmse']:.4e} "
                          f"kernel {rec['kernel_only']['rmse']:.4e} floor {rec['floor']['rmse']:.4e} "
                          f"floor64 {rec['floor_fp64']['rmse']:.4e} same_bits {rec['e2e_call_same_bits']} "
                          f"|o_bias| {rec['v_mean_abs_max']:.3e}", flush=True)
                    if kind == "gaussian" and seed == 1 and not causal:  # K, V as the kernel reads them
                        save_file({"k": dk.float().cpu().contiguous(), "v": dv.float().cpu().contiguous(),
                                   "o_bias": ob.float().cpu().contiguous()},
                                  str(out_dir / f"one-pass-gaussian-s1-{name}-kv.safetensors"))
            del q, k, v
            torch.cuda.empty_cache()
    # the ratios sample / mean per (set, seed, mask, reference)
    ix = {(r["set"], r["seed"], r["causal"], r["centre"]): r for r in out["records"]}
    print("set      seed causal  ratio sample/mean: end_to_end kernel_only floor floor_fp64")
    for (kind, seed, causal, name), r in ix.items():
        if name != "sample":
            continue
        m = ix[(kind, seed, causal, "mean")]
        ratios = {ref: r[ref]["rmse"] / m[ref]["rmse"] for ref in ("end_to_end", "kernel_only", "floor", "floor_fp64")}
        out.setdefault("ratios", []).append({"set": kind, "seed": seed, "causal": causal, **ratios})
        print(f"{kind:8} {seed:4} {int(causal):6}  " + " ".join(f"{ratios[x]:.3f}" for x in ratios))
    (out_dir / "one-pass-decompose-gpu.json").write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", out_dir / "one-pass-decompose-gpu.json")


if __name__ == "__main__":
    main()

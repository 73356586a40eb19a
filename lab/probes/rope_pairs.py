"""Issue 17 item 2 on the GPU, one process: the rope + quantize entry against the honest in-model
peer, then its end-to-end error against the non-fused path.

Speed: for each shape (b, s, h, h_kv) in SHAPES and each mask, speed.head_to_head (alternating
blocks of 2, >= RUNS calls each) of
  fp8attn_rope_quantize_pair  fp8attn_attention_rope on pre-rotary BF16 q, k, v (one C call:
                              rope + quantize pre-pass, kernel)
  fa3_bf16_rope_pair          fp8attn_rope_bf16 on q, then on k (the library's vectorized BF16
                              rotary, in place: 16-byte loads and stores, copy-speed), then FA3 BF16
and, for context, fp8attn_end_to_end (no rope) vs fa3_bf16 on the same tensors. Records
{method, b, sq, sk, h, h_kv, causal, tflops_median, ms_median, runs, protocol, pair}.
Accuracy: synthetic gaussian and outlier sets (bench/accuracy.py), b=1 s=4096 h=8/2, both masks,
a RANDOM rotary table (uniform angles in [-pi, pi), seed 5; q_pos0 = k_pos0 = 7): the captures are
post-rotary and cannot be un-rotated, so only synthetic data is used. Reference: exact FP64
attention of q, k rotated in FP64. fused = fp8attn_attention_rope; non-fused = fp8attn_rope_bf16
(rotated Q, K rounded to BF16) then fp8attn_attention. ratio = fused / non-fused for RMSE and
max |err|; pass when both <= 1.10.

usage: python3 lab/probes/rope_pairs.py LIB OUT.json [COMMIT_FILE]   (FA3 on PYTHONPATH; without
it the FA3 pairs are left out)
"""
import json
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import accuracy  # noqa: E402
import fp8attn_calls as calls  # noqa: E402
import methods  # noqa: E402
import pair_timing  # noqa: E402

SHAPES = [(2, 8192, 32, 32), (2, 8192, 32, 8), (16, 1024, 32, 32)]
RUNS = 60
ACCURACY_SHAPE = (1, 4096, 8, 2)


def tables(max_pos, random_angles, seed=5):
    """cos, sin (max_pos, 64) float32 on the GPU: Llama's inv_freq (base 10000), or random angles."""
    if random_angles:
        g = torch.Generator().manual_seed(seed)
        ang = (torch.rand(max_pos, 64, generator=g, dtype=torch.float64) * 2 - 1) * math.pi
    else:
        inv = 10000.0 ** (-torch.arange(64, dtype=torch.float64) / 64)
        ang = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv[None, :]
    return ang.cos().float().cuda().contiguous(), ang.sin().float().cuda().contiguous()


def flops(b, s, h, causal):
    f = 4.0 * b * s * s * h * 128
    return f / 2 if causal else f


def rotate64(x, cos, sin, pos0):
    """FP64 rotate_half of x (b, s, h, 128) with table rows pos0 .. pos0 + s - 1."""
    s = x.shape[1]
    c = cos[pos0:pos0 + s].double()[None, :, None, :]
    sn = sin[pos0:pos0 + s].double()[None, :, None, :]
    x = x.double()
    lo, hi = x[..., :64], x[..., 64:]
    return torch.cat([lo * c - hi * sn, hi * c + lo * sn], dim=-1)


def main():
    lib = calls.load(sys.argv[1])
    fa3 = methods.load_fa3()
    commit = Path(sys.argv[3]) if len(sys.argv) > 3 else ROOT / ".carry" / "COMMIT"
    out = {"command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
           "date": __import__("datetime").datetime.now(__import__("datetime").timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "commit": commit.read_text().strip() if commit.exists() else "?",
           "gpu": torch.cuda.get_device_name(), "runs": RUNS, "speed": [], "accuracy": [],
           "fa3": fa3 if isinstance(fa3, str) else "fa3-fwd==0.0.3"}
    protocol = "head_to_head alternating blocks of 2, medians"
    for (b, s, h, h_kv) in SHAPES:
        cos, sin = tables(s, random_angles=False)
        for causal in (False, True):
            torch.manual_seed(0)
            q = torch.randn(b, s, h, 128, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(b, s, h_kv, 128, device="cuda", dtype=torch.bfloat16)
            v = torch.randn(b, s, h_kv, 128, device="cuda", dtype=torch.bfloat16)
            run = {"fp8attn_rope_quantize_pair": calls.rope_pair_runner(lib, q, k, v, causal, cos, sin),
                   "fp8attn_end_to_end": calls.end_to_end_runner(lib, q, k, v, causal)}
            pairs = []
            if not isinstance(fa3, str):
                # In place on copies: the rotary then FA3 on what it wrote (values drift over
                # calls: timing only).
                qr, kr = q.clone(), k.clone()
                rq, rk = calls.rope_bf16_runner(lib, qr, cos, sin), calls.rope_bf16_runner(lib, kr, cos, sin)

                def peer(qr=qr, kr=kr, rq=rq, rk=rk, causal=causal):
                    rq(), rk()
                    fa3.flash_attn_func(qr, kr, v, causal=causal)
                run["fa3_bf16_rope_pair"] = peer
                run["fa3_bf16"] = lambda causal=causal: fa3.flash_attn_func(q, k, v, causal=causal)
                pairs += [("fp8attn_rope_quantize_pair", "fa3_bf16_rope_pair"),
                          ("fp8attn_end_to_end", "fa3_bf16")]
            pairs.append(("fp8attn_rope_quantize_pair", "fp8attn_end_to_end"))
            pair_timing.time_pairs(run, pairs, b, s, h, h_kv, causal, RUNS, protocol, flops, out["speed"])
            del run
            torch.cuda.empty_cache()
            Path(sys.argv[2]).write_text(json.dumps(out, indent=1) + "\n")  # so far
    b, s, h, h_kv = ACCURACY_SHAPE
    pos0 = 7
    cos, sin = tables(s + pos0, random_angles=True)
    for kind in ("gaussian", "outlier"):
        q, k, v = accuracy.synthetic(kind, b, s, h, h_kv, 128, 17, "cuda")
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        for causal in (False, True):
            ref, _ = accuracy.exact_attention(rotate64(q, cos, sin, pos0),
                                              rotate64(k, cos, sin, pos0), v, causal)
            fused = calls.rope_pair_runner(lib, q, k, v, causal, cos, sin, pos0, pos0)
            qr, kr = q.clone(), k.clone()
            calls.rope_bf16_runner(lib, qr, cos, sin, pos0)  # rotates once, in place, as it is made
            calls.rope_bf16_runner(lib, kr, cos, sin, pos0)
            plain = calls.end_to_end_runner(lib, qr, kr, v, causal)
            torch.cuda.synchronize()
            ef = accuracy.error_metrics(fused.out[0], ref)
            en = accuracy.error_metrics(plain.out[0], ref)
            rec = {"set": kind, "table": "random angles, seed 5", "pos0": pos0, "b": b, "s": s,
                   "h": h, "h_kv": h_kv, "causal": causal,
                   "fused_rmse": ef["rmse"], "fused_max_abs": ef["max_abs"],
                   "nonfused_rmse": en["rmse"], "nonfused_max_abs": en["max_abs"]}
            pair_timing.within_10pct(rec, ef, en)
            out["accuracy"].append(rec)
            print(f"{kind} causal={int(causal)}: rmse fused {ef['rmse']} non-fused {en['rmse']} "
                  f"(x{rec['rmse_ratio']}), max x{rec['max_ratio']} "
                  f"{'PASS' if rec['pass'] else 'FAIL'}", flush=True)
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1) + "\n")
    print("wrote", sys.argv[2])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Lab probe (GPU), issue 14 item 1: the accurate mode with FP16 V^T (FP8ATTN_P_FP16 +
FP8ATTN_VT_FP16, the TMA-loaded kernel) head to head with FA3 FP8 and FA3 BF16 (speed), and its
kernel-only error beside FA3 FP8's on FA3's outlier test and Gaussian data.

Inputs per (batch, KV head) as the FA3 issue's: Q, K in E4M3 with per-head scales; V^T in FP16 =
V / v_descale (the same per-head scale, |V^T| <= 448, not rounded to E4M3). The kernel-only
reference is exact attention on exactly those values (dequantized Q, K and the FP16 V * descale).
Also times the converter kernel (FP16 P from E4M3 V^T) for the before/after, and (--blocks) the
FP16 V^T kernel's two block lengths head to head in one process: the same K descale given per head
(192-key blocks where the library has kFP16VtBlock192, branch v192) and repeated per 128-key block
(128-key blocks), same values, so the only difference is the kernel.

  python3 lab/probes/accurate_v16_ab.py --lib .carry/libfp8attn.so --out DIR [--runs 100] [--blocks]
Writes DIR/accurate_v16_ab.json (command, commit, GPU, date, every record) and prints a table.
Shapes: the seed b2 s8192 h32 d128 and 16x1k, both masks.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import probe_doc  # noqa: E402

import accuracy  # noqa: E402
import fp8attn_calls as fc  # noqa: E402
import methods  # noqa: E402
import speed  # noqa: E402
from sweep import Shape, input_sets  # noqa: E402

ROWS = [(2, 8192, 32, 32), (16, 1024, 32, 32)]
VT_FP16 = 1  # FP8ATTN_VT_FP16


def vt16_of(v, v_descale, pad):
    """V (b, sk, h_kv, d) BF16 -> FP16 V^T (b, h_kv, d, pad), natural key order, zeros past sk."""
    b, sk, h_kv, d = v.shape
    vd = v_descale.reshape(b, 1, h_kv, 1).float()
    vs = (v.float() / vd).half()
    vt = torch.zeros((b, h_kv, d, pad), dtype=torch.float16, device=v.device)
    vt[..., :sk] = vs.permute(0, 2, 3, 1)
    return vt, vs


def accurate_runner(lib, qz, vt16, causal, per_block=False):
    """The FP16 V^T kernel on qz's Q, K and descales with vt16; per_block: the per-head K descale
    repeated per 128-key block (which selects the 128-key kernel)."""
    b, sq, h, d = qz.q8.shape
    out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device="cuda")
    lse = torch.empty((b, h, sq), dtype=torch.float32, device="cuda")
    kd = qz.k_descale
    if per_block:
        sk, h_kv = qz.k8.shape[1], qz.k8.shape[2]
        nblk = -(-sk // lib.c.constant("FP8ATTN_K_SCALE_BLOCK"))
        kd = kd.reshape(b, h_kv, 1).expand(b, h_kv, nblk).contiguous()
    params, keep = fc.ops.make_params(qz.q8, qz.k8, vt16, out, lse, qz.q_descale, kd,
                                      qz.v_descale, causal=causal,
                                      p_precision=lib.c.constant("FP8ATTN_P_FP16"),
                                      seqlen_k=qz.k8.shape[1])
    params.vt_dtype = VT_FP16
    run = fc.params_runner(lib, params, (params, keep, kd, out, lse, qz, vt16))
    run.out = out
    return run


def sets_for(shape, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    pad = -(-shape.sk // 32) * 32
    sets = []
    for _ in range(input_sets(shape)):
        q = torch.randn((shape.b, shape.sq, shape.h, shape.d), device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn((shape.b, shape.sk, shape.h_kv, shape.d), device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn((shape.b, shape.sk, shape.h_kv, shape.d), device="cuda", dtype=torch.bfloat16, generator=g)
        qz = fc.quantize_per_head(q, k, v)
        sets.append((qz, vt16_of(v, qz.v_descale, pad)[0], q, k, v))
    return sets


def pair(shape, a_name, a, b_name, b, runs, records):
    ta, tb = speed.head_to_head(a, b, runs)
    ra = speed.record(a_name, shape, ta, f"head_to_head:{b_name}")
    rb = speed.record(b_name, shape, tb, f"head_to_head:{a_name}")
    records += [ra, rb]
    print(f"  {shape.label():36s} {a_name:22s} {ra['tflops_median']:7.1f} vs {b_name:10s} "
          f"{rb['tflops_median']:7.1f}  ratio {ra['tflops_median'] / rb['tflops_median']:.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--blocks", action="store_true",
                    help="also the per-head (192-key) against the per-block (128-key) FP16 V^T kernel")
    ap.add_argument("--no-converter", action="store_true", help="skip the converter kernel's pairing")
    args = ap.parse_args()
    fa3 = methods.load_fa3()
    if isinstance(fa3, str):
        print(f"accurate_v16_ab: {fa3}")
        return 1
    lib = fc.load(args.lib)
    records = []
    print("speed: fp8attn_accurate (FP16 V^T) vs FA3 FP8, vs FA3 BF16; the converter kernel vs FA3 FP8")
    for (b, s, h, hkv) in ROWS:
        for causal in (False, True):
            shape = Shape(b, s, s, h, hkv, 128, causal)
            sets = sets_for(shape, args.seed)
            acc = methods.rotating([accurate_runner(lib, qz, vt, causal) for qz, vt, *_ in sets])
            conv = methods.rotating([fc.kernel_runner(lib, qz, causal, "fp8attn_p_fp16") for qz, *_ in sets])
            f8 = methods.rotating([methods._fa3_fp8(fa3, qz, causal) for qz, *_ in sets])
            bf = methods.rotating([methods._fa3_bf16(fa3, q, k, v, causal) for _, _, q, k, v in sets])
            pair(shape, "fp8attn_accurate_vt16", acc, "fa3_fp8", f8, args.runs, records)
            pair(shape, "fp8attn_accurate_vt16", acc, "fa3_bf16", bf, args.runs, records)
            if not args.no_converter:
                pair(shape, "fp8attn_accurate_e4m3v", conv, "fa3_fp8", f8, args.runs, records)
            if args.blocks:
                b128 = methods.rotating([accurate_runner(lib, qz, vt, causal, per_block=True)
                                         for qz, vt, *_ in sets])
                pair(shape, "fp8attn_accurate_vt16", acc, "fp8attn_accurate_vt16_b128", b128,
                     args.runs, records)
                pair(shape, "fp8attn_accurate_vt16_b128", b128, "fa3_bf16", bf, args.runs, records)
                del b128
            del sets, acc, conv, f8, bf
            torch.cuda.empty_cache()
    print("kernel-only error (per-head inputs), b1 s4096 h8/8")
    for name in ("outlier", "gaussian"):
        for causal in (False, True):
            q, k, v = accuracy.synthetic(name, 1, 4096, 8, 8, 128, args.seed, "cuda")
            qz = fc.quantize_per_head(q, k, v)
            vt16, vs = vt16_of(v, qz.v_descale, 4096)
            qd, kd, vd8 = qz.dequantized()
            v16 = vs.float() * qz.v_descale.reshape(1, 1, -1, 1).float()
            ref16, _ = accuracy.exact_attention(qd, kd, v16, causal)
            ref8, _ = accuracy.exact_attention(qd, kd, vd8, causal)
            run = accurate_runner(lib, qz, vt16, causal)
            run()
            outs = [("fp8attn_accurate_vt16", run.out, ref16)]
            if args.blocks:
                run128 = accurate_runner(lib, qz, vt16, causal, per_block=True)
                run128()
                outs.append(("fp8attn_accurate_vt16_b128", run128.out, ref16))
            torch.cuda.synchronize()
            outs.append(("fa3_fp8", methods._out(methods._fa3_fp8(fa3, qz, causal)()), ref8))
            for method, out, ref in outs:
                m = accuracy.error_metrics(out, ref)
                records.append({"dataset": name, "causal": causal, "method": method,
                                "reference": "kernel_only", "inputs": "per_head",
                                "shape": "b1 s4096 h8/8", **m})
                print(f"  {name:9s} causal={int(causal)} {method:22s} kernel-only rmse "
                      f"{m['rmse']} max {m['max_abs']}", flush=True)
    path = probe_doc.write(args.out, "accurate_v16_ab.json", records, torch.cuda.get_device_name())
    print(f"accurate_v16_ab: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Lab probe (GPU): one shape, one method, a few calls, for Nsight Compute to profile side by side.
Methods: fp8attn and fa3_fp8 (issue 13), fp8attn_accurate and fa3_bf16 (issue 14: where the FP16-P
kernel's cycles go against FA3 in BF16, the pipeline it would have to match).

  ncu -k regex:'attention_fwd_kernel|FlashAttnFwd' --launch-skip 3 --launch-count 1 ... \
      python3 lab/probes/ncu_vs_fa3.py --lib .carry/libfp8attn.so --method fp8attn|fa3_fp8 \
      --b 16 --s 1024 --h 32 --hkv 32 --causal 1
Gaussian BF16 inputs quantized per (batch, KV head), the harness's quantizer (bench/fp8attn_calls.py).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))

import torch  # noqa: E402

import fp8attn_calls as fc  # noqa: E402
import methods  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--method", choices=["fp8attn", "fp8attn_exact", "fa3_fp8", "fp8attn_accurate", "fa3_bf16"], required=True)
    for a in ("b", "s", "h", "hkv"):
        ap.add_argument(f"--{a}", type=int, required=True)
    ap.add_argument("--causal", type=int, default=1)
    ap.add_argument("--sq", type=int, default=0, help="query length when it differs from --s (the keys')")
    ap.add_argument("--calls", type=int, default=5)
    args = ap.parse_args()
    os.environ.setdefault("FP8ATTN_LIB", str(Path(args.lib).resolve()))
    g = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn((args.b, args.sq or args.s, args.h, 128), device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn((args.b, args.s, args.hkv, 128), device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn((args.b, args.s, args.hkv, 128), device="cuda", dtype=torch.bfloat16, generator=g)
    qz = fc.quantize_per_head(q, k, v)
    causal = bool(args.causal)
    if args.method in ("fp8attn", "fp8attn_exact"):  # the default; FA3 FP8's softmax numerics
        fn = fc.kernel_runner(fc.load(args.lib), qz, causal, args.method)
    elif args.method == "fp8attn_accurate":  # FP16 P on an FP16 V^T (issue 14's accurate mode)
        fn = fc.accurate_runner(fc.load(args.lib), fc.with_fp16_v(qz, v), causal)
    elif args.method == "fa3_bf16":
        fa3 = methods.load_fa3()
        if isinstance(fa3, str):
            print(f"ncu_vs_fa3: {fa3}")
            return 1
        fn = methods._fa3_bf16(fa3, q, k, v, causal)
    else:
        fa3 = methods.load_fa3()
        if isinstance(fa3, str):
            print(f"ncu_vs_fa3: {fa3}")
            return 1
        fn = methods._fa3_fp8(fa3, qz, causal)
    for _ in range(args.calls):
        fn()
    torch.cuda.synchronize()
    print(f"ncu_vs_fa3: {args.method} b{args.b} sq{args.sq or args.s} sk{args.s} h{args.h}/{args.hkv} "
          f"causal={causal}: {args.calls} calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())

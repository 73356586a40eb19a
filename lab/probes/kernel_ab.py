#!/usr/bin/env python3
"""Lab probe (GPU): two questions the sweep of 2026-12-01 raised, answered head to head with FA3 FP8.

1. Block size by shape. The release E4M3 kernel uses 192-key blocks, so a 1024-key row visits
   6 blocks for 5.33 blocks of keys (12% of the tensor work on padding), and every block pays the
   per-block costs. The release library also holds the 128-key E4M3 kernel (selected for a
   per-block K descale). Feeding it the same per-head K descale expanded to one value per 128-key
   block runs it on the same math: timed against the 192-key kernel and against FA3 FP8.
2. The fast mode's P offset (lab study results/fastmode-study.md): a library built with offset 8 and
   an exact running max (--variant-lib) against the release library, speed head to head with FA3
   FP8 and kernel-only error on FA3's outlier test and Gaussian data, beside FA3 FP8's.

  python3 lab/probes/kernel_ab.py --lib .carry/libfp8attn.so [--variant-lib L] --out DIR
Writes DIR/kernel_ab.json (command, commit, GPU, date, every record) and prints a table.
"""
from __future__ import annotations

import argparse
import json
import subprocess
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

ROWS = [(16, 1024, 32, 32), (8, 2048, 32, 32), (4, 4096, 32, 32), (2, 8192, 32, 32)]


def block128_runner(lib, qz, causal):
    """The release 128-key E4M3 kernel on per-head inputs: K descale repeated per 128-key block."""
    b, sq, h, d = qz.q8.shape
    sk, h_kv = qz.k8.shape[1], qz.k8.shape[2]
    blk = lib.c.constant("FP8ATTN_K_SCALE_BLOCK")
    nblk = -(-sk // blk)
    kd = qz.k_descale.reshape(b, h_kv, 1).expand(b, h_kv, nblk).contiguous()
    out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device="cuda")
    lse = torch.empty((b, h, sq), dtype=torch.float32, device="cuda")
    params, keep = fc.ops.make_params(qz.q8, qz.k8, qz.vt8, out, lse, qz.q_descale, kd,
                                      qz.v_descale, causal=causal, p_precision=lib.mode("fp8attn"))
    run = fc.params_runner(lib, params, (params, keep, kd, out, lse, qz))
    run.out = out
    return run


def inputs(shape: Shape, seed: int, with_bf16: bool = False):
    """Per-head E4M3 input sets from Gaussian BF16 draws; with_bf16: each as (qz, q, k, v), the BF16
    tensors it was quantized from kept (FA3 BF16, the accurate mode's FP16 V)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    sets = []
    for _ in range(input_sets(shape)):
        q = torch.randn((shape.b, shape.sq, shape.h, shape.d), device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn((shape.b, shape.sk, shape.h_kv, shape.d), device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn((shape.b, shape.sk, shape.h_kv, shape.d), device="cuda", dtype=torch.bfloat16, generator=g)
        qz = fc.quantize_per_head(q, k, v)
        sets.append((qz, q, k, v) if with_bf16 else qz)
    return sets


def pair(shape, a_name, a, b_name, b, runs, records, note=""):
    ta, tb = speed.head_to_head(a, b, runs)
    ra = speed.record(a_name, shape, ta, f"head_to_head:{b_name}", note=note)
    rb = speed.record(b_name, shape, tb, f"head_to_head:{a_name}", note=note)
    records += [ra, rb]
    print(f"  {shape.label():36s} {a_name:18s} {ra['tflops_median']:7.1f} vs {b_name:10s} "
          f"{rb['tflops_median']:7.1f}  ratio {ra['tflops_median'] / rb['tflops_median']:.3f}", flush=True)


def variant_main(args, fa3, records):
    """Runs in a child process: one library per process (fp8attn.load)."""
    lib = fc.load(args.lib)
    for (b, s, h, hkv) in [ROWS[i] for i in args.variant_rows]:
        for causal in (False, True):
            shape = Shape(b, s, s, h, hkv, 128, causal)
            sets = inputs(shape, args.seed)
            mine = methods.rotating([fc.kernel_runner(lib, qz, causal, "fp8attn") for qz in sets])
            theirs = methods.rotating([methods._fa3_fp8(fa3, qz, causal) for qz in sets])
            pair(shape, args.tag, mine, "fa3_fp8", theirs, args.runs, records)
    for name in ("outlier", "gaussian"):
        for causal in (False, True):
            q, k, v = accuracy.synthetic(name, 1, 4096, 8, 8, 128, args.seed, "cuda")
            qz = fc.quantize_per_head(q, k, v)
            ref, _ = accuracy.exact_attention(*qz.dequantized(), causal)
            for method, out in ((args.tag, fc.kernel_call(lib, qz, causal, "fp8attn")[0]),
                                ("fa3_fp8", methods._out(methods._fa3_fp8(fa3, qz, causal)()))):
                m = accuracy.error_metrics(out, ref)
                records.append({"dataset": name, "causal": causal, "method": method,
                                "reference": "kernel_only", "inputs": "per_head", "lib": args.tag,
                                "shape": "b1 s4096 h8/8", **m})
                print(f"  {name:9s} causal={int(causal)} {method:16s} kernel-only rmse "
                      f"{m['rmse']} max {m['max_abs']}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--variant-lib", action="append", default=[],
                    help="a library built with another variant (repeatable; each in its own process)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--variant-rows", default="2,3", help="indices into ROWS timed for each library (default 4k, 8k)")
    ap.add_argument("--no-blocks", action="store_true", help="skip the 128- vs 192-key block comparison")
    ap.add_argument("--variant-tags", default="fp8attn,fp8attn_offset8", help="names of --lib and --variant-lib")
    ap.add_argument("--tag", default="fp8attn", help=argparse.SUPPRESS)
    ap.add_argument("--child-json", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.variant_rows = [int(i) for i in str(args.variant_rows).split(",")]
    fa3 = methods.load_fa3()
    if isinstance(fa3, str):
        print(f"kernel_ab: {fa3}")
        return 1
    records = []
    if args.child_json:  # the variant library's process
        variant_main(args, fa3, records)
        Path(args.child_json).write_text(json.dumps(records))
        return 0

    lib = fc.load(args.lib) if not args.no_blocks else None
    print("block size: the release 128-key E4M3 kernel vs the 192-key one, both vs FA3 FP8")
    for (b, s, h, hkv) in ROWS if lib is not None else []:
        for causal in (False, True):
            shape = Shape(b, s, s, h, hkv, 128, causal)
            sets = inputs(shape, args.seed)
            b192 = methods.rotating([fc.kernel_runner(lib, qz, causal, "fp8attn") for qz in sets])
            b128 = methods.rotating([block128_runner(lib, qz, causal) for qz in sets])
            fa = methods.rotating([methods._fa3_fp8(fa3, qz, causal) for qz in sets])
            pair(shape, "fp8attn_block128", b128, "fp8attn", b192, args.runs, records)
            pair(shape, "fp8attn_block128", b128, "fa3_fp8", fa, args.runs, records)
            del sets, b192, b128, fa
            torch.cuda.empty_cache()
    if args.variant_lib:
        print("P offset: each library's kernel vs FA3 FP8 (speed), and kernel-only error")
        out = Path(args.out)
        tags = args.variant_tags.split(",")
        for tag, path in zip(tags, [args.lib] + args.variant_lib):
            child = out / f".{tag}.json"
            rc = subprocess.call([sys.executable, __file__, "--lib", path, "--out", str(out),
                                  "--runs", str(args.runs), "--seed", str(args.seed), "--tag", tag,
                                  "--variant-rows", ",".join(map(str, args.variant_rows)),
                                  "--child-json", str(child)])
            if rc == 0 and child.exists():
                records += json.loads(child.read_text())
                child.unlink()
            else:
                records.append({"method": tag, "error": f"child exited {rc}"})
    path = probe_doc.write(args.out, "kernel_ab.json", records, torch.cuda.get_device_name())
    print(f"kernel_ab: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

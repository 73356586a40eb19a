#!/usr/bin/env python3
"""Lab probe (GPU): does the accurate mode's power at the cap depend on V's mantissa bits?

Twenty-eighth session (lab/perf-log.md): back to back at the 700 W cap the accurate kernel runs
at a lower SM clock than FA3 FP8 (clock_power.py --accurate). The FP16 P V multiplies full
10-bit mantissas; a V^T whose low mantissa bits are zero (rounded to fewer bits when the cache is
written, an input rounding) may toggle less and draw less power. For each number of low bits
cleared (round to nearest at that precision), the accurate mode runs back to back while
nvidia-smi samples clock and power (clock_power.measure), and alternated call by call with FA3
FP8 (medians of per-call times), at 2 x 8k x 32 heads.

  python3 lab/probes/v16_bits_power.py --lib L --out DIR [--bits 0,3,5] [--seconds 4]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import clock_power as cp  # noqa: E402
import probe_doc  # noqa: E402

import fp8attn_calls as fc  # noqa: E402
import methods  # noqa: E402
from sweep import Shape  # noqa: E402


def round_low_bits(vt16: torch.Tensor, bits: int) -> torch.Tensor:
    """FP16 values rounded to nearest with their `bits` low mantissa bits zero (ties away)."""
    if bits == 0:
        return vt16
    i = vt16.view(torch.int16).to(torch.int32)
    half = 1 << (bits - 1)
    sign = i & 0x8000
    mag = i & 0x7FFF
    mag = ((mag + half) >> bits) << bits  # a carry into the exponent is the correct rounding
    return (sign | mag).to(torch.int16).view(torch.float16)


def alternate(fns, shape, rounds=120):
    times = [[] for _ in fns]
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in fns]
    for _ in range(10):
        for f in fns:
            f()
    torch.cuda.synchronize()
    for _ in range(rounds):
        for j, f in enumerate(fns):
            ev[j][0].record()
            f()
            ev[j][1].record()
        torch.cuda.synchronize()
        for j in range(len(fns)):
            times[j].append(ev[j][0].elapsed_time(ev[j][1]))
    return [shape.flops() / (statistics.median(t) * 1e-3) / 1e12 for t in times]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bits", default="0,3,5")
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()
    b, sq, sk, h, hkv = 2, 8192, 8192, 32, 32
    lib = fc.load(args.lib)
    fa3 = methods.load_fa3()
    records = []
    for causal in (False, True):
        shape = Shape(b, sq, sk, h, hkv, 128, causal)
        q, k, v = cp.inputs(b, sq, sk, h, hkv)
        qz = fc.quantize_per_head(q, k, v)
        qv0 = fc.with_fp16_v(qz, v)
        fa3_fn = methods._fa3_fp8(fa3, qz, causal)
        for bits in map(int, args.bits.split(",")):
            qv = fc.PerHeadV16(qz, round_low_bits(qv0.vt16, bits))
            run = fc.accurate_runner(lib, qv, causal)
            r = cp.measure(run, shape, args.seconds)
            acc, ref = alternate([run, fa3_fn], shape)
            r.update({"method": "fp8attn_accurate", "v16_low_bits_zero": bits, "causal": causal,
                      "alternating_tflops": acc, "alternating_fa3_fp8_tflops": ref,
                      "alternating_ratio": acc / ref})
            records.append(r)
            print(f"causal={int(causal)} bits={bits} back-to-back {r['tflops']:6.1f} TFLOP/s clock "
                  f"{r['sm_clock_mhz_median']:5.0f} MHz power {r['power_w_median']:4.0f} W "
                  f"{r['mcycles_per_call']:.3f} Mcycles | alternating with FA3 FP8 {acc:6.1f} / {ref:6.1f} "
                  f"= {acc / ref:.3f}", flush=True)
        r = cp.measure(fa3_fn, shape, args.seconds)
        r.update({"method": "fa3_fp8", "causal": causal})
        records.append(r)
        print(f"causal={int(causal)} fa3_fp8 back-to-back {r['tflops']:6.1f} TFLOP/s clock "
              f"{r['sm_clock_mhz_median']:5.0f} MHz power {r['power_w_median']:4.0f} W {r['mcycles_per_call']:.3f} Mcycles", flush=True)
    path = probe_doc.write(args.out, "v16_bits_power.json", records, torch.cuda.get_device_name())
    print(f"v16_bits_power: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

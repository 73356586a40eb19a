#!/usr/bin/env python3
"""Lab probe (GPU): a kernel's SM clock and power while it runs back to back.

Question (lab/perf-log.md, 2026-12-01 third session): a variant that takes fewer cycles per tile
(clock64 stamps) ran slower in wall time. If the H200 is at its power cap during attention, the
clock, not the cycle count, moves: then time = cycles / clock, and a change that raises the
power per cycle can lose time while it saves cycles. For each method (fp8attn from each library,
FA3 FP8), at one shape, the kernel runs back to back for --seconds while nvidia-smi samples the
SM clock, power and temperature; reported: TFLOP/s, the median clock and power, and the cycles
per call (time x clock).

  python3 lab/probes/clock_power.py --lib L [--lib L2 ...] --tags a,b --out DIR
  python3 lab/probes/clock_power.py --lib L --tags rel --accurate --out DIR
    (one library: its accurate mode on FP16 V^T too, and FA3 BF16 beside FA3 FP8; twenty-eighth
    session: is the accurate mode's gap to FA3 FP8 cycles or clock?)
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import probe_doc  # noqa: E402

import fp8attn_calls as fc  # noqa: E402
import methods  # noqa: E402
from sweep import Shape  # noqa: E402


def sample(stop, out):
    while not stop.is_set():
        r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True)
        try:
            f = [x.strip() for x in r.stdout.strip().split(",")]
            out.append((float(f[0]), float(f[1]), float(f[2]), f[3]))
        except (ValueError, IndexError):
            pass
        time.sleep(0.05)


def inputs(b, sq, sk, h, hkv):
    """Gaussian BF16 q, k, v (seed 1) for one shape: the same in the parent and each child."""
    g = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn((b, sq, h, 128), device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn((b, sk, hkv, 128), device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn((b, sk, hkv, 128), device="cuda", dtype=torch.bfloat16, generator=g)
    return q, k, v


def measure(fn, shape, seconds):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    samples, stop = [], threading.Event()
    th = threading.Thread(target=sample, args=(stop, samples))
    th.start()
    time.sleep(0.3)  # the sampler's first reading before the load
    samples.clear()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    n, t0 = 0, time.time()
    start.record()
    while time.time() - t0 < seconds:
        for _ in range(20):
            fn()
        n += 20
        torch.cuda.synchronize()
    end.record()
    torch.cuda.synchronize()
    stop.set()
    th.join()
    ms = start.elapsed_time(end) / n
    clk = statistics.median(s[0] for s in samples) if samples else float("nan")
    pw = statistics.median(s[1] for s in samples) if samples else float("nan")
    temp = statistics.median(s[2] for s in samples) if samples else float("nan")
    reasons = sorted({s[3] for s in samples})
    return {"calls": n, "ms_per_call": ms, "tflops": shape.flops() / (ms * 1e-3) / 1e12, "sm_clock_mhz_median": clk,
            "power_w_median": pw, "temp_c_median": temp, "throttle_reasons": reasons, "samples": len(samples),
            "mcycles_per_call": ms * 1e-3 * clk * 1e6 / 1e6}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", action="append", required=True)
    ap.add_argument("--tags", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--shape", default="2,8192,8192,32,32")
    ap.add_argument("--accurate", action="store_true")
    args = ap.parse_args()
    b, sq, sk, h, hkv = map(int, args.shape.split(","))
    fa3 = methods.load_fa3()
    first = fc.load(args.lib[0])  # the quantizer's constants; each library is timed in its own child
    records = []
    for causal in (False, True):
        shape = Shape(b, sq, sk, h, hkv, 128, causal)
        qkv = inputs(b, sq, sk, h, hkv)
        qz = fc.quantize_per_head(*qkv)
        runs = []
        for tag, path in zip(args.tags.split(","), args.lib):
            lib = first if len(args.lib) == 1 else None
            if lib is None:  # one library per process: a child for each
                child = subprocess.run([sys.executable, "-c", CHILD, path, args.shape, str(int(causal)),
                                        str(args.seconds), str(ROOT)], capture_output=True, text=True)
                try:
                    r = json.loads(child.stdout.strip().splitlines()[-1])
                except (ValueError, IndexError):
                    r = {"error": child.stderr[-2000:]}
            else:
                r = measure(fc.kernel_runner(lib, qz, causal, "fp8attn"), shape, args.seconds)
            runs.append((tag, r))
            if args.accurate and lib is not None:
                qv = fc.with_fp16_v(qz, qkv[2])
                runs.append((tag + "_accurate", measure(fc.accurate_runner(lib, qv, causal), shape, args.seconds)))
        if not isinstance(fa3, str):
            runs.append(("fa3_fp8", measure(methods._fa3_fp8(fa3, qz, causal), shape, args.seconds)))
            if args.accurate:
                runs.append(("fa3_bf16", measure(methods._fa3_bf16(fa3, *qkv, causal), shape, args.seconds)))
        for tag, r in runs:
            r.update({"method": tag, "causal": causal, "shape": args.shape})
            records.append(r)
            print(f"causal={int(causal)} {tag:20s} " + (f"{r['tflops']:7.1f} TFLOP/s  clock {r['sm_clock_mhz_median']:6.0f} MHz"
                  f"  power {r['power_w_median']:5.0f} W  temp {r['temp_c_median']:3.0f}  {r['mcycles_per_call']:.3f} Mcycles/call"
                  f"  throttle {r['throttle_reasons']}" if "error" not in r else f"error {r['error']}"), flush=True)
    path = probe_doc.write(args.out, "clock_power.json", records, torch.cuda.get_device_name())
    print(f"clock_power: wrote {path}")
    return 0


CHILD = r"""
import json, sys
from pathlib import Path
root = Path(sys.argv[5]); sys.path.insert(0, str(root / "bench")); sys.path.insert(0, str(root / "python"))
sys.path.insert(0, str(root / "lab" / "probes"))
import torch
import fp8attn_calls as fc
import clock_power as cp
from sweep import Shape
b, sq, sk, h, hkv = map(int, sys.argv[2].split(",")); causal = bool(int(sys.argv[3]))
shape = Shape(b, sq, sk, h, hkv, 128, causal)
lib = fc.load(sys.argv[1])
qz = fc.quantize_per_head(*cp.inputs(b, sq, sk, h, hkv))
print(json.dumps(cp.measure(fc.kernel_runner(lib, qz, causal, "fp8attn"), shape, float(sys.argv[4]))))
"""

if __name__ == "__main__":
    sys.exit(main())

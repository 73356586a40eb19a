"""Speed part of the harness: every method on the same data, CUDA events, median of >= 100 runs.

Runs are enqueued back to back (event, launch, event, ...) so the GPU's queue stays ahead of the
host; each run is timed by its own pair of events, so host-side launch overhead is not counted
unless the kernel is shorter than the launch itself.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Shape:
    b: int
    sq: int
    sk: int
    h: int
    h_kv: int
    d: int
    causal: bool

    def flops(self) -> float:
        full = 4.0 * self.b * self.h * self.sq * self.sk * self.d
        return full / 2 if self.causal else full


def speed_shapes(seed_b=2, seed_s=8192, h=32, d=128, tokens=16384, seqlens=(1024, 2048, 4096, 8192, 16384),
                 gqa_h_kv=8) -> list[Shape]:
    """The seed shape, the seqlen sweep at `tokens` tokens per batch, and GQA h/h_kv at the seed
    shape; causal and not. Duplicates (the sweep's 8k point is the seed shape) are dropped."""
    shapes = []
    for causal in (False, True):
        shapes.append(Shape(seed_b, seed_s, seed_s, h, h, d, causal))
        for s in seqlens:
            shapes.append(Shape(max(1, tokens // s), s, s, h, h, d, causal))
        shapes.append(Shape(seed_b, seed_s, seed_s, h, gqa_h_kv, d, causal))
    return list(dict.fromkeys(shapes))


def time_ms(fn, warmup: int, runs: int) -> list[float]:
    if not torch.cuda.is_available():  # dry run on the CPU: wall clock per run
        import time
        fn()
        out = []
        for _ in range(runs):
            t = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t) * 1e3)
        return out
    return time_ms_alternating((fn,), warmup, runs)[0]


def time_ms_alternating(fns, warmup: int, runs: int) -> list[list[float]]:
    """Each of fns timed by its own pair of CUDA events around each call, the calls alternating
    (f0, f1, f0, ...; one fn: back to back), after `warmup` rounds: alternated, all see the same
    power and clock state (the H200 runs fp8attn at its power cap, lab/perf-log.md)."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    torch.cuda.synchronize()
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
               for _ in range(runs)] for _ in fns]  # made up front: none between launches
    for r in range(runs):
        for fn, ev in zip(fns, events):
            ev[r][0].record()
            fn()
            ev[r][1].record()
    torch.cuda.synchronize()
    return [[s.elapsed_time(e) for s, e in ev] for ev in events]


def record(method: str, shape: Shape, times_ms: list[float]) -> dict:
    median_ms = statistics.median(times_ms)
    return {"method": method, "b": shape.b, "sq": shape.sq, "sk": shape.sk, "h": shape.h,
            "h_kv": shape.h_kv, "d": shape.d, "causal": shape.causal,
            "tflops_median": shape.flops() / (median_ms * 1e-3) / 1e12, "runs": len(times_ms)}


def run_speed(shapes, methods: dict, make_inputs, warmup: int, runs: int, log, notes: list) -> list:
    """methods: name -> factory(shape, inputs) returning a no-argument callable that launches one
    run (all allocation and argument marshalling happen in the factory, outside the timing)."""
    records = []
    for shape in shapes:
        inputs = make_inputs(shape)
        for name, factory in methods.items():
            try:
                fn = factory(shape, inputs)
                rec = record(name, shape, time_ms(fn, warmup, runs))
                records.append(rec)
                log(f"  {name:<18} b={shape.b:<2} s={shape.sq:<5} h={shape.h}/{shape.h_kv} "
                    f"causal={int(shape.causal)}  {rec['tflops_median']:7.1f} TFLOP/s")
            except Exception as e:  # a method that cannot run is reported, the table goes on
                msg = f"speed {name} {shape}: FAILED {type(e).__name__}: {e}"
                log("  " + msg)
                notes.append(msg)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        del inputs
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    return records

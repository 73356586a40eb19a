"""Timing protocols of the harness: CUDA events around each call, medians.

head_to_head(a, b): fp8attn and one peer alternated in one process, in short blocks, the order
  reversed each round, so that both see the same power and clock state (on the H200 a kernel's
  figure moves by up to 10% with what ran before it: issue 13). Each call is timed by its own pair
  of events; blocks are enqueued back to back, so host overhead is hidden while calls are longer
  than their launch.
in_context(a, b): the same alternation, each timed call right after a GEMM of the model's
  QKV-projection size (untimed), as inside a model.
The callables rotate through several input sets themselves when one set fits in L2 (methods.py).
Without CUDA (harness --dry-run) a wall-clock timer stands in for the events.
"""
from __future__ import annotations

import statistics
import time

try:
    import torch
except ImportError:  # --dry-run on a machine without torch
    torch = None

from sweep import Shape, speed_shapes  # noqa: F401  (re-exported: bench_prepass, tools/kernel_probe)


def _cuda() -> bool:
    return torch is not None and torch.cuda.is_available()


class _CudaMarks:
    """Events made up front, none created between launches."""

    def __init__(self, n: int):
        self.ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                   for _ in range(n)]

    def start(self, i):
        self.ev[i][0].record()

    def stop(self, i):
        self.ev[i][1].record()

    def ms(self) -> list[float]:
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in self.ev]


class _WallMarks:
    def __init__(self, n: int):
        self.t = [[0.0, 0.0] for _ in range(n)]

    def start(self, i):
        self.t[i][0] = time.perf_counter()

    def stop(self, i):
        self.t[i][1] = time.perf_counter()

    def ms(self) -> list[float]:
        return [(b - a) * 1e3 for a, b in self.t]


def _marks(n: int):
    return _CudaMarks(n) if _cuda() else _WallMarks(n)


def _sync():
    if _cuda():
        torch.cuda.synchronize()


def time_ms_alternating(fns, warmup: int, runs: int) -> list[list[float]]:
    """Each of fns timed by its own pair of CUDA events around each call, the calls alternating
    (f0, f1, f0, ...; one fn: back to back), after `warmup` rounds: alternated, all see the same
    power and clock state (the H200 runs fp8attn at its power cap, lab/perf-log.md)."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    _sync()
    marks = [_marks(runs) for _ in fns]
    for r in range(runs):
        for fn, m in zip(fns, marks):
            m.start(r)
            fn()
            m.stop(r)
    return [m.ms() for m in marks]


def time_ms(fn, warmup: int, runs: int) -> list[float]:
    return time_ms_alternating((fn,), warmup, runs)[0]


def head_to_head(a, b, runs: int, block: int = 2, warmup: int = 5, before=None):
    """(times of a, times of b) in ms, >= `runs` calls each: rounds of one block of `block` calls
    per method, a first in even rounds and b first in odd ones. `before`, if given, runs
    (untimed) right before every timed call: the in-context protocol's GEMM."""
    for _ in range(warmup):
        for fn in (a, b):
            if before:
                before()
            fn()
    _sync()
    rounds = -(-runs // block)
    rounds += rounds % 2  # as many rounds with a first as with b first
    n = rounds * block
    marks = {0: _marks(n), 1: _marks(n)}
    fns = (a, b)
    for r in range(rounds):
        for which in ((0, 1) if r % 2 == 0 else (1, 0)):
            fn, m = fns[which], marks[which]
            for j in range(block):
                if before:
                    before()
                m.start(r * block + j)
                fn()
                m.stop(r * block + j)
    return marks[0].ms(), marks[1].ms()


def record(method: str, shape: Shape, times_ms: list[float], protocol: str, **extra) -> dict:
    med = statistics.median(times_ms)
    q = statistics.quantiles(times_ms, n=10) if len(times_ms) >= 10 else [med] * 9
    return {"method": method, "b": shape.b, "sq": shape.sq, "sk": shape.sk, "h": shape.h,
            "h_kv": shape.h_kv, "d": shape.d, "causal": shape.causal,
            "tflops_median": shape.flops() / (med * 1e-3) / 1e12, "runs": len(times_ms),
            "protocol": protocol, "ms_median": med, "ms_p10": q[0], "ms_p90": q[-1], **extra}


def failed_record(method: str, shape: Shape, protocol: str, error: str) -> dict:
    return {"method": method, "b": shape.b, "sq": shape.sq, "sk": shape.sk, "h": shape.h,
            "h_kv": shape.h_kv, "d": shape.d, "causal": shape.causal, "tflops_median": None,
            "runs": 0, "protocol": protocol, "error": error}


PROTOCOLS = ("head_to_head", "in_context")


def run_pairing(shape: Shape, a: str, b: str, protocol: str, runners: dict, gemm, runs: int,
                block: int, extra: dict) -> list[dict]:
    """Two records (a's and b's) of one pairing at one shape. runners: name -> callable or an
    exception (the method could not be built: both records say why, neither is dropped)."""
    fa, fb = runners.get(a), runners.get(b)
    for name, fn in ((a, fa), (b, fb)):
        if not callable(fn):
            why = f"{name} unavailable: {fn}"
            return [failed_record(a, shape, f"{protocol}:{b}", why),
                    failed_record(b, shape, f"{protocol}:{a}", why)]
    ta, tb = head_to_head(fa, fb, runs, block, before=gemm if protocol == "in_context" else None)
    return [record(a, shape, ta, f"{protocol}:{b}", **extra),
            record(b, shape, tb, f"{protocol}:{a}", **extra)]


def run_pairing_or_failed(shape: Shape, a: str, b: str, protocol: str, runners: dict, gemm, runs: int,
                          block: int, extra: dict, failed_extra: dict | None = None) -> list[dict]:
    """run_pairing; an exception while timing gives both methods' failed records (with
    failed_extra's fields), so that a sweep goes on and the failure is recorded."""
    try:
        return run_pairing(shape, a, b, protocol, runners, gemm, runs, block, extra)
    except Exception as e:
        why = f"{type(e).__name__}: {str(e)[:300]}"
        return [failed_record(a, shape, f"{protocol}:{b}", why) | (failed_extra or {}),
                failed_record(b, shape, f"{protocol}:{a}", why) | (failed_extra or {})]


def ratio_text(ra: dict, rb: dict) -> str:
    """a / b of a pairing's two records for a progress line, '-' where either failed."""
    return (f"{ra['tflops_median'] / rb['tflops_median']:.3f}"
            if ra["tflops_median"] and rb["tflops_median"] else "-")

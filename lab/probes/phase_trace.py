"""Lab probe (GPU; the library of lab/variants/wg1-delay.patch + phase-trace.patch): the phase
offset between the two consumer warpgroups' ping-pong, block by block, and the speed it goes
with (lab/perf-log.md, twenty-third session: the offset a tile starts with persists through the
tile and sets the speed).

For each shape and each FP8ATTN_LAB_WG1_DELAY value (ns; negative: warpgroup 0 delayed), one
traced launch records, per (tile, warpgroup), the SM's clock64 when each steady-state block's S
is ready (after the QK^T wait). Per block j of a tile: the period T_j (warpgroup 0's S to its next
S) and the offset d_j (warpgroup 1's S of block j minus warpgroup 0's), printed as the phase
d_j / T_j (0.5: the two warpgroups half a period apart). The same process times the untraced
call (CUDA events, median of 60) for each delay, so phase and speed are read side by side.
The tile's start is stamped too (slot 1): per warpgroup, over consecutive tiles of one SM, the
tile's cycles split into head (start to the first steady-state S), loop and tail (the last S to
the next tile's start), and the SM clock the call ran at (the busiest SM's tiles over its time).
On a build with lab/variants/tile-parts-trace.patch too, the head and the tail in steps: the Q
wait, the first (trimmed) block, the first loop QK^T; the last softmax, the drain's turn wait,
its P V, the epilogue, the step to the next tile's wait, and that wait (the tile handed over).

usage: python3 lab/probes/phase_trace.py LIB OUT.json [DELAY ...]   (default delays: 0)
"""
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import fp8attn_calls as fc  # noqa: E402

SHAPES = [(2, 8192, 8192, 32, 32), (8, 2048, 2048, 32, 32), (16, 1024, 1024, 32, 32)]
SLOTS = 64
LOOP = slice(2, 54)  # the steady-state S stamps (tile-parts-trace.patch keeps 54-63 for its own)
# tile-parts-trace.patch's stamps: Q ready, the wait for this tile begun (the previous tile's
# end), the loop left, the drain's turn taken, the drain's P V done, the epilogue done, the
# first block done.
Q_READY, PRE_WAIT, LOOP_EXIT, DRAIN_TURN, DRAIN_PV, EPI_DONE, FIRST_DONE = 54, 55, 56, 57, 58, 59, 60


def quantiles(xs, qs=(0.1, 0.25, 0.5, 0.75, 0.9)):
    if not xs:
        return {}
    s = sorted(xs)
    return {str(q): s[min(len(s) - 1, int(q * len(s)))] for q in qs}


def phases(a):
    """a: (tiles, 2, SLOTS) int64. Per block position: periods and phases over all tiles."""
    per_pos, periods, tile_cycles = {}, [], []
    for t in a:
        w0, w1 = t[0, LOOP], t[1, LOOP]
        n = int(min(np.count_nonzero(w0), np.count_nonzero(w1)))
        if n < 3:
            continue
        tile_cycles.append(int(w0[n - 1] - w0[0]))
        for j in range(n - 1):
            T = int(w0[j + 1] - w0[j])
            d = int(w1[j] - w0[j])
            if T <= 0:
                continue
            periods.append(T)
            pos = "first" if j == 0 else ("second" if j == 1 else ("last" if j == n - 2 else "middle"))
            per_pos.setdefault(pos, []).append(d / T)
    out = {"period_cycles": quantiles(periods), "tile_loop_cycles": quantiles(tile_cycles)}
    for pos, xs in per_pos.items():
        out["phase_" + pos] = quantiles(xs)
        hist, _ = np.histogram(np.clip(xs, -0.5, 1.5), bins=8, range=(-0.5, 1.5))
        out["phase_" + pos + "_hist_-0.5..1.5_by_0.25"] = hist.tolist()
    return out


def tile_parts(a):
    """Per warpgroup, over consecutive tiles of one SM (slot 0 the SM, slot 1 the tile's start):
    the whole tile (start to the SM's next tile start, this warpgroup's), its head (start to the
    first steady-state S), its loop (first to last steady-state S) and its tail (last S to the
    next tile's start: the last softmax, the drain's P V, the epilogue, the next claim), cycles."""
    out = {}
    for wg in (0, 1):
        by_sm = {}
        for t in a:
            w = t[wg]
            n = int(np.count_nonzero(w[LOOP]))
            if n >= 1 and w[1] > 0:
                by_sm.setdefault(int(w[0]), []).append((int(w[1]), int(w[2]), int(w[2 + n - 1]), w))
        parts = {"tile": [], "head": [], "loop": [], "tail": []}
        for tiles in by_sm.values():
            tiles.sort(key=lambda x: x[0])
            for (s0, f0, l0, w), (s1, _, _, w1) in zip(tiles, tiles[1:]):
                parts["tile"].append(s1 - s0)
                parts["head"].append(f0 - s0)
                parts["loop"].append(l0 - f0)
                parts["tail"].append(s1 - l0)
                # tile-parts-trace.patch: head and tail in steps (absent from older trace builds).
                st = [int(x) for x in w[Q_READY:FIRST_DONE + 1]]
                if all(st) and w1[PRE_WAIT] > 0:
                    q, _, ex, turn, pv, epi, first = st
                    steps = {"head_q_wait": q - s0, "head_first_block": first - q,
                             "head_first_loop_qk": f0 - first, "tail_last_softmax": ex - l0,
                             "tail_drain_turn_wait": turn - ex, "tail_drain_pv": pv - turn,
                             "tail_epilogue": epi - pv, "tail_to_next_wait": int(w1[PRE_WAIT]) - epi,
                             "tail_next_tile_wait": s1 - int(w1[PRE_WAIT])}
                    for k, v in steps.items():
                        parts.setdefault(k, []).append(v)
        out[f"tile_parts_wg{wg}"] = {k: quantiles(v) for k, v in parts.items() if v}
        out[f"tiles_per_sm_max_wg{wg}"] = max((len(v) for v in by_sm.values()), default=0)
    return out


def time_ms(run, n=60):
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in ev:
        s.record()
        run()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in ev)


def main():
    lib = fc.load(sys.argv[1])
    delays = [int(x) for x in sys.argv[3:]] or [0]
    out = {"command": "python3 " + " ".join(sys.argv), "gpu": torch.cuda.get_device_name(),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "shapes": []}
    path = os.path.join(tempfile.mkdtemp(), "phase.bin")
    for b, sq, sk, h, hkv in SHAPES:
        torch.manual_seed(0)
        q = torch.randn(b, sq, h, 128, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, sk, hkv, 128, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, sk, hkv, 128, device="cuda", dtype=torch.bfloat16)
        qz = fc.quantize_per_head(q, k, v)
        run = fc.kernel_runner(lib, qz, False, "fp8attn")
        flops = 4 * b * h * sq * sk * 128
        for d in delays:
            os.environ["FP8ATTN_LAB_WG1_DELAY"] = str(d)
            for _ in range(20):
                run()
            ms = time_ms(run)
            for _ in range(5):
                run()
            os.environ["FP8ATTN_LAB_PHASE_TRACE"] = path
            run()
            os.environ.pop("FP8ATTN_LAB_PHASE_TRACE")
            a = np.fromfile(path, dtype=np.uint64).reshape(-1, 2, SLOTS).astype(np.int64)
            rec = {"b": b, "sq": sq, "sk": sk, "h": h, "h_kv": hkv, "delay_ns": d, "ms": ms,
                   "tflops": flops / ms / 1e9, **phases(a), **tile_parts(a)}
            # The SM clock the untimed call ran at: the busiest SM's tiles over the call's time.
            rec["clock_ghz_est"] = (rec["tile_parts_wg0"]["tile"].get("0.5", 0) *
                                    rec["tiles_per_sm_max_wg0"] / (ms * 1e6))
            out["shapes"].append(rec)
            ph = {k[6:]: round(v.get("0.5", float("nan")), 3) for k, v in rec.items()
                  if k.startswith("phase_") and "hist" not in k}
            print(f"b{b} s{sq} delay {d:5d}: {rec['tflops']:.1f} TFLOP/s, period median "
                  f"{rec['period_cycles'].get('0.5')} cycles, phase medians {ph}", flush=True)
            for wg in (0, 1):
                tp = {k: v.get("0.5") for k, v in rec[f"tile_parts_wg{wg}"].items()}
                print(f"    warpgroup {wg} tile parts (median cycles): {tp}")
            print(f"    clock estimate {rec['clock_ghz_est']:.3f} GHz "
                  f"({rec['tiles_per_sm_max_wg0']} tiles on the busiest SM)")
            for k2 in sorted(rec):
                if k2.endswith("_hist_-0.5..1.5_by_0.25"):
                    print(f"    {k2[6:-23]:7s} phase histogram (-0.5..1.5 by 0.25): {rec[k2]}")
        os.environ.pop("FP8ATTN_LAB_WG1_DELAY", None)
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1))
    print("wrote", sys.argv[2])


if __name__ == "__main__":
    main()

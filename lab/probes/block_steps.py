"""Lab probe (GPU; the library of lab/variants/wg1-delay.patch + phase-trace.patch +
tile-parts-trace.patch + block-steps-trace.patch): one steady-state key block of the ping-pong in
steps, per warpgroup, for the default (E4M3 P) and the accurate mode (FP16 P on an FP16 V^T).

Per steady block j < 16 of a tile the traced build stamps (warp 0, lane 0 of each warpgroup):
the turn taken (after the ping-pong barrier), the QK^T issued, V's slot waited for, O rescaled, the P V issued (QK^T and P V both queued;
the issue split at those three stamps), S ready
(after the QK^T wait), the exponentials done, the P V waited for. With the previous block's P V
wait as the block's start, a block is:
  turn_wait   start -> turn taken (the other warpgroup's issue, the K block's arrival)
  issue       turn taken -> P V issued (the O rescale between the two issues)
  qk_wait     P V issued -> S ready (this QK^T's time, and whatever the tensor pipe ran before it)
  softmax     S ready -> exponentials done
  pv_wait     exponentials done -> P V done (this P V still running)
  to_turn     P V done -> next turn requested is the next block's start (P's conversion, etc.)
and the other warpgroup's turn relative to this one's. Also the period, the phase and the tile
parts of phase_trace.py (slots 0..63), the untraced call's TFLOP/s and the clock estimate.

usage: python3 lab/probes/block_steps.py LIB OUT.json
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
sys.path.insert(0, str(ROOT / "lab" / "probes"))
import fp8attn_calls as fc  # noqa: E402
import phase_trace as pt  # noqa: E402

SLOTS = 176
TURN, PV_ISSUED, EXP_DONE, PV_DONE = 64, 80, 96, 112
QK_ISSUED, V_WAITED, O_RESCALED = 128, 144, 160
SHAPES = [(2, 8192, 8192, 32, 32, False), (2, 8192, 8192, 32, 32, True),
          (16, 1024, 1024, 32, 32, False)]


def block_steps(a):
    """a: (tiles, 2, SLOTS). Median cycles of each step over blocks 1..14 of every tile."""
    out = {}
    for wg in (0, 1):
        steps = {k: [] for k in ("turn_wait", "issue", "issue_qk", "issue_v_wait", "issue_o_rescale",
                                 "issue_pv", "qk_wait", "softmax", "pv_wait", "block",
                                 "other_turn_after_mine")}
        for t in a:
            w, o = t[wg], t[1 - wg]
            for j in range(1, 15):
                turn, iss, s, e, pv = (int(w[TURN + j]), int(w[PV_ISSUED + j]), int(w[2 + j]),
                                       int(w[EXP_DONE + j]), int(w[PV_DONE + j]))
                prev_pv = int(w[PV_DONE + j - 1])
                if min(turn, iss, s, e, pv, prev_pv) <= 0:
                    continue
                steps["turn_wait"].append(turn - prev_pv)
                steps["issue"].append(iss - turn)
                qi, vw, orr = int(w[QK_ISSUED + j]), int(w[V_WAITED + j]), int(w[O_RESCALED + j])
                if min(qi, vw, orr) > 0:
                    steps["issue_qk"].append(qi - turn)
                    steps["issue_v_wait"].append(vw - qi)
                    steps["issue_o_rescale"].append(orr - vw)
                    steps["issue_pv"].append(iss - orr)
                steps["qk_wait"].append(s - iss)
                steps["softmax"].append(e - s)
                steps["pv_wait"].append(pv - e)
                steps["block"].append(pv - prev_pv)
                ot = int(o[TURN + j])
                if ot > 0:
                    steps["other_turn_after_mine"].append(ot - turn)
        out[f"steps_wg{wg}"] = {k: pt.quantiles(v) for k, v in steps.items() if v}
    return out


def main():
    lib = fc.load(sys.argv[1])
    out = {"command": "python3 " + " ".join(sys.argv), "gpu": torch.cuda.get_device_name(),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "shapes": []}
    path = os.path.join(tempfile.mkdtemp(), "steps.bin")
    for b, sq, sk, h, hkv, causal in SHAPES:
        torch.manual_seed(0)
        q = torch.randn(b, sq, h, 128, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, sk, hkv, 128, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, sk, hkv, 128, device="cuda", dtype=torch.bfloat16)
        qz = fc.quantize_per_head(q, k, v)
        runs = {"fp8attn": fc.kernel_runner(lib, qz, causal, "fp8attn"),
                "fp8attn_accurate": fc.accurate_runner(lib, fc.with_fp16_v(qz, v), causal)}
        flops = 4 * b * h * sq * sk * 128 * (0.5 if causal else 1.0)  # sq == sk here
        for mode, run in runs.items():
            for _ in range(20):
                run()
            ms = pt.time_ms(run)
            for _ in range(5):
                run()
            os.environ["FP8ATTN_LAB_PHASE_TRACE"] = path
            run()
            torch.cuda.synchronize()
            os.environ.pop("FP8ATTN_LAB_PHASE_TRACE")
            a = np.fromfile(path, dtype=np.uint64).reshape(-1, 2, SLOTS).astype(np.int64)
            rec = {"mode": mode, "b": b, "sq": sq, "sk": sk, "h": h, "h_kv": hkv, "causal": causal,
                   "ms": ms, "tflops": flops / ms / 1e9, **pt.phases(a[:, :, :64]),
                   **pt.tile_parts(a[:, :, :64]), **block_steps(a)}
            rec["clock_ghz_est"] = (rec["tile_parts_wg0"]["tile"].get("0.5", 0) *
                                    rec["tiles_per_sm_max_wg0"] / (ms * 1e6))
            out["shapes"].append(rec)
            print(f"{mode:17s} b{b} s{sq} causal {int(causal)}: {rec['tflops']:.1f} TFLOP/s, period "
                  f"median {rec['period_cycles'].get('0.5')} cycles, clock estimate "
                  f"{rec['clock_ghz_est']:.3f} GHz", flush=True)
            for wg in (0, 1):
                st = {k: v.get("0.5") for k, v in rec[f"steps_wg{wg}"].items()}
                print(f"    warpgroup {wg} block steps (median cycles): {st}")
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1))
    print("wrote", sys.argv[2])


if __name__ == "__main__":
    main()

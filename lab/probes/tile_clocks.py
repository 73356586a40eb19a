#!/usr/bin/env python3
"""Lab probe (GPU, branch tileclk): where a tile's cycles go inside the 192-key E4M3 kernels.

The tileclk library's consumers stamp clock64 at each stage of every tile (first warp of each
consumer warpgroup, up to 128 tiles per CTA):
  0 before the tile handoff wait   1 tile published        2 first QK^T completed
  3 first softmax done (P ready)   4 steady-state loop done  5 last P V completed
  6 epilogue done                  7 blocks | masked blocks << 16 | m_block << 32
Per shape, one call after warm-up; the segments' means (cycles), the loop's cycles per block and
the tile's fixed cost (everything but the loop, plus the handoff from the previous tile).

  python3 lab/probes/tile_clocks.py --lib LIBTILECLK --out DIR
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import probe_doc  # noqa: E402

import fp8attn_calls as fc  # noqa: E402

MAX_TILES, NSM = 128, 132
SHAPES = [  # (b, sq, sk, h, h_kv, causal)
    (2, 8192, 8192, 32, 32, False), (2, 8192, 8192, 32, 32, True), (16, 1024, 1024, 32, 32, True),
    (33, 128, 8064, 32, 1, False), (33, 128, 8064, 32, 1, True),
]
SEG = ["handoff", "first_qk", "first_softmax", "loop", "drain_pv", "epilogue"]


def run_shape(lib, setters, shape, seed):
    b, sq, sk, h, hkv, causal = shape
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn((b, sq, h, 128), device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn((b, sk, hkv, 128), device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn((b, sk, hkv, 128), device="cuda", dtype=torch.bfloat16, generator=g)
    qz = fc.quantize_per_head(q, k, v)
    run = fc.kernel_runner(lib, qz, causal, "fp8attn")
    buf = torch.zeros(NSM * MAX_TILES * 2 * 8, dtype=torch.int64, device="cuda")
    for _ in range(5):
        run()
    torch.cuda.synchronize()
    for s in setters:
        assert s(ctypes.c_void_p(buf.data_ptr())) == 0
    run()
    torch.cuda.synchronize()
    for s in setters:
        s(ctypes.c_void_p(0))
    rec = buf.view(NSM, MAX_TILES, 2, 8).cpu().tolist()
    # Sanity: batch 0, heads 0-1 against the exact attention of the dequantized inputs.
    out = fc.kernel_call(lib, qz, causal, "fp8attn")[0]
    dq, dk, dv = (x[:1].double() for x in qz.dequantized())
    qh, kh, vh = dq[:, :, :2].transpose(1, 2), dk[:, :, [0, (1 * hkv) // h]].transpose(1, 2), dv[:, :, [0, (1 * hkv) // h]].transpose(1, 2)
    ref = torch.nn.functional.scaled_dot_product_attention(qh, kh, vh, is_causal=False,
        attn_mask=(torch.ones(sq, sk, dtype=torch.bool, device="cuda").tril(sk - sq) if causal else None))
    err = (out[:1, :, :2].transpose(1, 2).double() - ref).abs().max().item()
    segs = {wg: {k: [] for k in SEG + ["loop_per_block", "fixed", "total"]} for wg in (0, 1)}
    blocks, masked = [], []
    for cta in rec:
        for wg in (0, 1):
            prev_end = None
            for t in cta:
                r = t[wg]
                if r[1] == 0:
                    break
                if r[3] == 0:  # a tile with no visible key
                    prev_end = r[6] if r[6] else prev_end
                    continue
                nb, nm = r[7] & 0xFFFF, (r[7] >> 16) & 0xFFFF
                s = segs[wg]
                handoff = r[1] - (prev_end if prev_end is not None else r[1])
                s["handoff"].append(handoff)
                s["first_qk"].append(r[2] - r[1])
                s["first_softmax"].append(r[3] - r[2])
                s["loop"].append(r[4] - r[3])
                s["drain_pv"].append(r[5] - r[4])
                s["epilogue"].append(r[6] - r[5])
                if nb > 1:
                    s["loop_per_block"].append((r[4] - r[3]) / (nb - 1))
                s["total"].append(r[6] - r[1] + handoff)
                if wg == 0:
                    blocks.append(nb)
                    masked.append(nm)
                prev_end = r[6]
    out = {"shape": dict(zip(("b", "sq", "sk", "h", "h_kv", "causal"), shape)), "tiles_recorded": len(blocks),
           "max_abs_err_b0_h01": err,
           "mean_blocks": statistics.mean(blocks) if blocks else 0,
           "mean_masked_blocks": statistics.mean(masked) if masked else 0}
    for wg in (0, 1):
        s = segs[wg]
        lpb = statistics.median(s["loop_per_block"]) if s["loop_per_block"] else 0.0
        # fixed cost: each tile's total less (blocks - 1) steady-state blocks at the median rate
        fixed = [tot - (nb - 1) * lpb for tot, nb in zip(s["total"], blocks)]
        out[f"wg{wg}"] = {k: statistics.mean(v) for k, v in s.items() if v and k != "fixed"}
        out[f"wg{wg}"]["loop_per_block_median"] = lpb
        out[f"wg{wg}"]["fixed_mean"] = statistics.mean(fixed) if fixed else 0.0
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args()
    lib = fc.load(args.lib)
    c = ctypes.CDLL(args.lib)
    setters = []
    for name in ("fp8attn_lab_clock_buffer_192", "fp8attn_lab_clock_buffer_192tma"):
        f = getattr(c, name)
        f.argtypes, f.restype = [ctypes.c_void_p], ctypes.c_int
        setters.append(f)
    records = []
    for shape in SHAPES:
        r = run_shape(lib, setters, shape, args.seed)
        records.append(r)
        w0, w1 = r["wg0"], r["wg1"]
        print(f"{shape}: max err {r['max_abs_err_b0_h01']:.4f} tiles {r['tiles_recorded']} blocks {r['mean_blocks']:.2f} masked {r['mean_masked_blocks']:.2f}")
        for wg, w in ((0, w0), (1, w1)):
            print(f"  wg{wg}: " + " ".join(f"{k} {w.get(k, 0):8.0f}" for k in SEG) +
                  f" | per block {w['loop_per_block_median']:6.0f} fixed {w['fixed_mean']:6.0f} total {w['total']:8.0f}",
                  flush=True)
        torch.cuda.empty_cache()
    path = probe_doc.write(args.out, "tile_clocks.json", records, torch.cuda.get_device_name())
    print(f"tile_clocks: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

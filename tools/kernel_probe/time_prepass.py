"""Times, in one process at the seed shape (b=2, s=8192, h=32/32, default options), median of 100
runs after warm-up, the calls and probe knobs of CONFIGS (at fa41305: the statistics pass by
bulk copies; at 83dca51: the rotated rows' sign
masks; at b88eecb: the statistics pass's L2 prefetch; at cb2e8d6: Q's tiles inside the K/V launch;
each knob removed after its probe).
Each variant is timed twice, interleaved (drift check). Prints one line per timing and writes
JSON to argv[2]."""
import ctypes
import json
import math
import os
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import bench_prepass as bp  # noqa: E402
import speed  # noqa: E402


def CONFIGS(dst, src, qkv, split, q_only, kv_only):
    """(name, probe-knob environment, call) of each timing; names starting q_only / kv_only
    count only that pass's bytes."""
    return (("copy", {}, lambda: dst.copy_(src)), ("qkv", {}, qkv), ("split", {}, split),
            ("q_only", {}, q_only), ("kv_only", {}, kv_only))


def main() -> None:
    lib = bp._bind(sys.argv[1])
    b, s, h, h_kv = 2, 8192, 32, 32
    q, k, v = bp._inputs(torch, b, s, s, h, h_kv, 20261130)
    stream = bp._vp(torch.cuda.current_stream().cuda_stream)
    cache_buf = torch.empty(lib.fp8attn_kv_cache_bytes(b, s, h_kv, 128, 0), dtype=torch.uint8,
                            device="cuda")
    ws = torch.empty(lib.fp8attn_quantize_kv_workspace_bytes(b, s, h_kv), dtype=torch.uint8,
                     device="cuda")
    q_buf = torch.empty(lib.fp8attn_q_quant_bytes(b, s, h, 128), dtype=torch.uint8, device="cuda")
    cache, qq = bp.KvCache(), bp.QQuant()
    bp._check(lib, lib.fp8attn_kv_cache_init(ctypes.byref(cache), cache_buf.data_ptr(),
                                             cache_buf.numel(), b, s, h_kv, 128, 0), "cache")
    bp._check(lib, lib.fp8attn_q_quant_init(ctypes.byref(qq), q_buf.data_ptr(), q_buf.numel(), b,
                                            s, h, 128), "q")
    tq, tk, tv = bp._tensor(q, b, s, h), bp._tensor(k, b, s, h_kv), bp._tensor(v, b, s, h_kv)
    scale = 1.0 / math.sqrt(128)
    o = bp.QuantOptions()
    lib.fp8attn_quant_options_init(ctypes.byref(o))
    moved, _ = bp._prepass_bytes(b, s, s, h, h_kv, o)

    def qkv():
        bp._check(lib, lib.fp8attn_quantize_qkv(
            ctypes.byref(tq), ctypes.byref(tk), ctypes.byref(tv), ctypes.byref(o), scale,
            ctypes.byref(cache), ctypes.byref(qq), ws.data_ptr(), ws.numel(), stream), "qkv")

    def kv_only():
        bp._check(lib, lib.fp8attn_quantize_kv(ctypes.byref(tk), ctypes.byref(tv), ctypes.byref(o),
                                               ctypes.byref(cache), ws.data_ptr(), ws.numel(),
                                               stream), "kv")

    def q_only():
        bp._check(lib, lib.fp8attn_quantize_q(ctypes.byref(tq), ctypes.byref(cache), o.q_scale,
                                              scale, ctypes.byref(qq), stream), "q")

    def split():
        kv_only()
        q_only()

    src = torch.cat([q.reshape(-1), k.reshape(-1), v.reshape(-1)])
    dst = torch.empty_like(src)
    out = {"commit": open(ROOT / ".carry" / "COMMIT").read().strip(),
           "gpu": torch.cuda.get_device_name(), "bytes_moved": moved, "runs": 100, "timings": []}
    for rep in range(2):
        for name, env, fn in CONFIGS(dst, src, qkv, split, q_only, kv_only):
            os.environ.update(env)  # probe knobs, read by the library at every call
            try:
                ms = statistics.median(speed.time_ms(fn, 10, 100))
            finally:
                for key in env:
                    del os.environ[key]
            q_bytes = b * s * h * 128 * 3 + 8 * b * h * s
            nbytes = (2 * src.numel() * 2 if name == "copy" else q_bytes if name.startswith("q_only")
                      else moved - q_bytes if name.startswith("kv_only") else moved)
            gbps = nbytes / (ms * 1e-3) / 1e9
            out["timings"].append({"name": name, "rep": rep, "ms_median": ms, "gbps": gbps})
            print(f"{name:<20} rep {rep}: {ms * 1e3:7.1f} us  {gbps:7.0f} GB/s")
    Path(sys.argv[2]).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

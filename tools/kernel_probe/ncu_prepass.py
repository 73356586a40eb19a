"""Driver for tools/kernel_probe/ncu_prepass.sh: the pre-pass at the seed shape (b=2, s=8192,
h=32/32), warmed up, then inside the profiler range: fp8attn_quantize_qkv (statistics, finalize,
the fused Q/K/V launch), the two separate calls (statistics, finalize, K/V pass, Q pass) with the
defaults, and the separate calls without the rotation (the unrotated Q pass beside the rotated).
"""
import ctypes
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import bench_prepass as bp  # noqa: E402


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
    default = bp.QuantOptions()
    lib.fp8attn_quant_options_init(ctypes.byref(default))
    plain = bp.QuantOptions()
    lib.fp8attn_quant_options_init(ctypes.byref(plain))
    plain.hadamard_qk = 0

    def qkv(o):
        bp._check(lib, lib.fp8attn_quantize_qkv(
            ctypes.byref(tq), ctypes.byref(tk), ctypes.byref(tv), ctypes.byref(o), scale,
            ctypes.byref(cache), ctypes.byref(qq), ws.data_ptr(), ws.numel(), stream), "qkv")

    def split(o):
        bp._check(lib, lib.fp8attn_quantize_kv(ctypes.byref(tk), ctypes.byref(tv), ctypes.byref(o),
                                               ctypes.byref(cache), ws.data_ptr(), ws.numel(),
                                               stream), "kv")
        bp._check(lib, lib.fp8attn_quantize_q(ctypes.byref(tq), ctypes.byref(cache), o.q_scale,
                                              scale, ctypes.byref(qq), stream), "q")

    for _ in range(3):
        qkv(default), split(default), split(plain)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    qkv(default)
    split(default)
    split(plain)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()

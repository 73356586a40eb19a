"""The seed shape's pre-pass set up once for the probe drivers (time_prepass.py, ncu_prepass.py,
causal_context.py): BF16 Q, K, V as bench/bench_prepass.py makes them, a KV cache, a quantized Q,
the scratch, and the calls through the C ABI (each with explicit options)."""
import ctypes
import math
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import bench_prepass as bp  # noqa: E402


class SeedPrepass:
    def __init__(self, lib_path: str, b=2, s=8192, h=32, h_kv=32, seed=20261130):
        self.lib = lib = bp._bind(lib_path)
        self.b, self.s, self.h, self.h_kv = b, s, h, h_kv
        self.q, self.k, self.v = bp._inputs(torch, b, s, s, h, h_kv, seed)
        self.stream = bp._vp(torch.cuda.current_stream().cuda_stream)
        self.cache_buf = torch.empty(lib.fp8attn_kv_cache_bytes(b, s, h_kv, 128, 0),
                                     dtype=torch.uint8, device="cuda")
        self.ws = torch.empty(lib.fp8attn_quantize_kv_workspace_bytes(b, s, h_kv),
                              dtype=torch.uint8, device="cuda")
        self.q_buf = torch.empty(lib.fp8attn_q_quant_bytes(b, s, h, 128), dtype=torch.uint8,
                                 device="cuda")
        self.cache, self.qq = bp.KvCache(), bp.QQuant()
        bp._check(lib, lib.fp8attn_kv_cache_init(ctypes.byref(self.cache), self.cache_buf.data_ptr(),
                                                 self.cache_buf.numel(), b, s, h_kv, 128, 0), "cache")
        bp._check(lib, lib.fp8attn_q_quant_init(ctypes.byref(self.qq), self.q_buf.data_ptr(),
                                                self.q_buf.numel(), b, s, h, 128), "q")
        self.tq = bp._tensor(self.q, b, s, h)
        self.tk, self.tv = bp._tensor(self.k, b, s, h_kv), bp._tensor(self.v, b, s, h_kv)
        self.scale = 1.0 / math.sqrt(128)

    def options(self, **overrides) -> "bp.QuantOptions":
        o = bp.QuantOptions()
        self.lib.fp8attn_quant_options_init(ctypes.byref(o))
        for f, val in overrides.items():
            setattr(o, f, val)
        return o

    def qkv(self, o):
        bp._check(self.lib, self.lib.fp8attn_quantize_qkv(
            ctypes.byref(self.tq), ctypes.byref(self.tk), ctypes.byref(self.tv), ctypes.byref(o),
            self.scale, ctypes.byref(self.cache), ctypes.byref(self.qq), self.ws.data_ptr(),
            self.ws.numel(), self.stream), "qkv")

    def kv_only(self, o):
        bp._check(self.lib, self.lib.fp8attn_quantize_kv(
            ctypes.byref(self.tk), ctypes.byref(self.tv), ctypes.byref(o), ctypes.byref(self.cache),
            self.ws.data_ptr(), self.ws.numel(), self.stream), "kv")

    def q_only(self, o):
        bp._check(self.lib, self.lib.fp8attn_quantize_q(
            ctypes.byref(self.tq), ctypes.byref(self.cache), o.q_scale, self.scale,
            ctypes.byref(self.qq), self.stream), "q")

    def split(self, o):
        self.kv_only(o)
        self.q_only(o)

"""Why the causal kernel alone on the pre-pass's outputs times slower than the same kernel inside
the end-to-end call (results/e2e-bound-e2b31d4.txt): at the seed shape, causal, median of 100 runs
after warm-up, one process, the kernel timed by CUDA events around each launch:
  A  the kernel alone, back to back (as bench/bench_prepass.py's kernel_on_prepass_inputs)
  B  the end-to-end call (pre-pass + kernel)
  C  the pre-pass then the kernel, alternating, only the kernel timed
  D  the kernel alone with an idle gap (torch.cuda._sleep) between launches
The phases' wall-clock spans are written with the medians, to be read beside an nvidia-smi log
of the SM clock and power (tools/kernel_probe/amax_tree.sh samples one).
Usage: python3 causal_context.py LIB OUT.json"""
import ctypes
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import bench_prepass as bp  # noqa: E402


def timed(fn, runs=100, warmup=10, before=None):
    for _ in range(warmup):
        if before:
            before()
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(runs):
        if before:
            before()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        out.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in out)


def main():
    lib = bp._bind(sys.argv[1])
    b, s, h, d = 2, 8192, 32, 128
    q, k, v = bp._inputs(torch, b, s, s, h, h, 20261130)
    o = torch.empty((b, s, h, d), dtype=torch.bfloat16, device="cuda")
    lse = torch.empty((b, h, s), dtype=torch.float32, device="cuda")
    stream = bp._vp(torch.cuda.current_stream().cuda_stream)
    ws = bp._vp(lib.fp8attn_workspace_create())
    bp._check(lib, lib.fp8attn_workspace_reserve(ws, lib.fp8attn_attention_workspace_bytes(b, s, s, h, h, d)), "reserve")
    args = bp.AttentionArgs()
    lib.fp8attn_attention_args_init(ctypes.byref(args))
    args.q, args.k, args.v = bp._tensor(q, b, s, h), bp._tensor(k, b, s, h), bp._tensor(v, b, s, h)
    args.o, args.lse, args.causal = o.data_ptr(), lse.data_ptr(), 1
    cache_buf = torch.empty(lib.fp8attn_kv_cache_bytes(b, s, h, d, 0), dtype=torch.uint8, device="cuda")
    kv_ws = torch.empty(lib.fp8attn_quantize_kv_workspace_bytes(b, s, h), dtype=torch.uint8, device="cuda")
    q_buf = torch.empty(lib.fp8attn_q_quant_bytes(b, s, h, d), dtype=torch.uint8, device="cuda")
    cache, qq = bp.KvCache(), bp.QQuant()
    bp._check(lib, lib.fp8attn_kv_cache_init(ctypes.byref(cache), cache_buf.data_ptr(), cache_buf.numel(), b, s, h, d, 0), "cache")
    bp._check(lib, lib.fp8attn_q_quant_init(ctypes.byref(qq), q_buf.data_ptr(), q_buf.numel(), b, s, h, d), "q")

    def prepass():
        bp._check(lib, lib.fp8attn_quantize_qkv(
            ctypes.byref(args.q), ctypes.byref(args.k), ctypes.byref(args.v), ctypes.byref(args.quant),
            1.0 / math.sqrt(d), ctypes.byref(cache), ctypes.byref(qq), kv_ws.data_ptr(), kv_ws.numel(),
            stream), "qkv")

    prepass()
    params = ctypes.create_string_buffer(1024)
    bp._check(lib, lib.fp8attn_fwd_params_from_quant(params, ctypes.byref(qq), ctypes.byref(cache), o.data_ptr(), lse.data_ptr()), "params")
    bp._set_causal(params, 1)

    def kernel(p=params):
        if lib.fp8attn_attention_fwd(p, stream) != 0:
            raise RuntimeError(lib.fp8attn_last_error().decode())

    def e2e():
        bp._check(lib, lib.fp8attn_attention(ctypes.byref(args), ws, stream), "attention")

    phases = {}
    marks = []

    def phase(name, fn, **kw):
        t0 = time.time()
        ms = timed(fn, **kw)
        marks.append((name, t0, time.time()))
        phases[name] = ms
        flops = 4 * b * h * s * s * d / 2
        print(f"{name}: {ms * 1e3:8.1f} us  {flops / (ms * 1e-3) / 1e12:6.1f} TFLOP/s", flush=True)

    phase("A_kernel_back_to_back", kernel)
    phase("B_end_to_end", e2e)
    phase("C_prepass_then_kernel", kernel, before=prepass)
    phase("D_kernel_with_idle_gap", kernel, before=lambda: torch.cuda._sleep(300_000))
    phase("A2_kernel_back_to_back", kernel)
    torch.cuda.synchronize()
    lib.fp8attn_workspace_destroy(ws)
    Path(sys.argv[2]).write_text(json.dumps({"commit": (ROOT / ".carry" / "COMMIT").read_text().strip(),
                                             "gpu": torch.cuda.get_device_name(), "median_ms": phases,
                                             "phase_wall": marks}, indent=1))


if __name__ == "__main__":
    main()

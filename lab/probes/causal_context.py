"""Why the causal kernel alone on the pre-pass's outputs times slower than the same kernel inside
the end-to-end call (lab/results/e2e-bound-e2b31d4.txt): at the seed shape, causal, median of 100 runs
after warm-up, one process, the kernel timed by CUDA events around each launch:
  A  the kernel alone, back to back (as bench/bench_prepass.py's kernel_on_prepass_inputs)
  B  the end-to-end call (pre-pass + kernel)
  C  the pre-pass then the kernel, alternating, only the kernel timed
  D  the kernel alone with an idle gap (torch.cuda._sleep) between launches
The phases' wall-clock spans are written with the medians, to be read beside an nvidia-smi log
of the SM clock and power (lab/probes/amax_tree.sh samples one).
Usage: python3 causal_context.py LIB OUT.json"""
import ctypes
import json
import statistics
import sys
from pathlib import Path
import time

import torch

from prepass_setup import ROOT, SeedPrepass, bp  # puts bench/ on the path
import speed  # noqa: E402  (bench/speed.py)


def timed(fn, before=None):
    """Median of 100 runs of fn after 10 warm-up ones; `before` (not counted) runs before each."""
    if before is None:
        return statistics.median(speed.time_ms(fn, 10, 100))
    return statistics.median(speed.time_ms_alternating((before, fn), 10, 100)[1])


def main():
    sp = SeedPrepass(sys.argv[1])
    lib, stream, cache, qq = sp.lib, sp.stream, sp.cache, sp.qq
    b, s, h, d = sp.b, sp.s, sp.h, 128
    o = torch.empty((b, s, h, d), dtype=torch.bfloat16, device="cuda")
    lse = torch.empty((b, h, s), dtype=torch.float32, device="cuda")
    ws = bp._vp(lib.fp8attn_workspace_create())
    bp._check(lib, lib.fp8attn_workspace_reserve(ws, lib.fp8attn_attention_workspace_bytes(b, s, s, h, h, d)), "reserve")
    args = bp.AttentionArgs()
    lib.fp8attn_attention_args_init(ctypes.byref(args))
    args.q, args.k, args.v = sp.tq, sp.tk, sp.tv
    args.o, args.lse, args.causal = o.data_ptr(), lse.data_ptr(), 1
    defaults = sp.options()

    def prepass():
        sp.qkv(defaults)

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

"""PyTorch SDPA BF16 timing (cuDNN and flash backends) at one shape, same method as the probe:
CUDA events, warm-up, median. Prints one line per backend. Usage: sdpa_ref.py b s h causal iters"""
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

b, s, h, causal, iters = (int(x) for x in sys.argv[1:6])
q, k, v = (torch.randn(b, h, s, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
flops = 4 * b * h * s * s * 128 * (0.5 if causal else 1.0)
for name, backend in (("sdpa_cudnn_bf16", SDPBackend.CUDNN_ATTENTION), ("sdpa_flash_bf16", SDPBackend.FLASH_ATTENTION)):
    with sdpa_kernel(backend):
        for _ in range(5):
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        torch.cuda.synchronize()
        ts = []
        for _ in range(iters):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1))
    ts.sort()
    med = ts[len(ts) // 2]
    print(f"{name} b={b} s={s} h={h} causal={causal} | median {med:.4f} ms {flops / (med * 1e-3) / 1e12:.1f} TFLOP/s")

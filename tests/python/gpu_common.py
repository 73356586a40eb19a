"""Helpers of the GPU tests: the sm_90 guard, fresh random inputs, the FP64 reference."""
from __future__ import annotations

import os
import time

import pytest

from conftest import have_torch, library_available

if have_torch():
    import torch


def has_sm90() -> bool:
    return (have_torch() and library_available() and torch.cuda.is_available()
            and torch.cuda.get_device_capability() == (9, 0))


needs_sm90 = pytest.mark.skipif(not has_sm90(), reason="needs torch, libfp8attn.so and an sm_90 GPU")

# Fresh inputs every run (printed, so that a failure can be replayed with FP8ATTN_TEST_SEED).
SEED = int(os.environ.get("FP8ATTN_TEST_SEED", time.time_ns() % 2**31))
print(f"tests/python: FP8ATTN_TEST_SEED={SEED}")


def randn_qkv(b, sq, sk, h, h_kv, dtype=None, seed_offset=0, device="cuda"):
    g = torch.Generator(device=device).manual_seed(SEED + seed_offset)
    dt = dtype or torch.bfloat16
    q = torch.randn((b, sq, h, 128), generator=g, device=device).to(dt)
    k = torch.randn((b, sk, h_kv, 128), generator=g, device=device).to(dt)
    v = torch.randn((b, sk, h_kv, 128), generator=g, device=device).to(dt)
    return q, k, v


def exact_attention(q, k, v, causal: bool, scale: float | None = None):
    """FP64 attention on (b, s, h, d) tensors, GQA by repetition, causal bottom-right aligned.
    Returns O (b, sq, h, d) float64 and LSE (b, h, sq) float64."""
    b, sq, h, d = q.shape
    sk, h_kv = k.shape[1], k.shape[2]
    scale = d ** -0.5 if scale is None else scale
    qh = q.double().permute(0, 2, 1, 3)
    kh = k.double().repeat_interleave(h // h_kv, dim=2).permute(0, 2, 1, 3)
    vh = v.double().repeat_interleave(h // h_kv, dim=2).permute(0, 2, 1, 3)
    s = (qh @ kh.transpose(-1, -2)) * scale
    if causal:
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(sk, device=q.device)[None, :]
        s = s.masked_fill(j > i + (sk - sq), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    o = torch.softmax(s, dim=-1) @ vh
    return o.permute(0, 2, 1, 3), lse


def rel_rmse(x, ref) -> float:
    x, ref = x.double(), ref.double()
    assert torch.isfinite(x).all(), "non-finite values in the output"
    return float(((x - ref).pow(2).mean() / ref.pow(2).mean()).sqrt())

"""A torch emulation of the kernel's numerics, used only by `harness.py --dry-run` (no GPU) to
exercise the harness end to end. Not an oracle: the C++ model (model/) is the one the GPU tests
use. Order of operations as the kernel's contract states it (KV blocks of 128 visited last to
first, exp2 with a row-max offset of 5 and a max that moves only past a slack of 3 (fp8attn.h), P rounded to E4M3, l the sum of the rounded P for E4M3 P
(the kernel's tensor-core row sum) and of the FP32 p for hi+lo P)."""
from __future__ import annotations

import math
import re
from pathlib import Path

import torch

LOG2E = 1.4426950408889634


def _header_constant(name: str) -> float:
    """A #define of include/fp8attn/fp8attn.h, read from the header itself (the dry run needs no
    built library; with one, fp8attn.load().constant(name) gives the same value)."""
    header = Path(__file__).resolve().parents[1] / "include" / "fp8attn" / "fp8attn.h"
    m = re.search(rf"^#define {name} ([0-9.]+)f?$", header.read_text(), re.M)
    if not m:
        raise RuntimeError(f"{name} not found in {header}")
    return float(m.group(1))


P_OFFSET_LOG2 = _header_constant("FP8ATTN_P_OFFSET_LOG2")
RESCALE_SLACK_LOG2 = _header_constant("FP8ATTN_RESCALE_SLACK_LOG2")


def _e4m3(x: torch.Tensor) -> torch.Tensor:
    return x.clamp(-448, 448).to(torch.float8_e4m3fn).float()


def fp8attn_emulated(qz, causal: bool, p_precision: int = 0, block_n: int = 128):
    q8, k8, v8 = qz.q8.float(), qz.k8.float(), qz.v8.float()
    b, sq, h, d = q8.shape
    sk, h_kv = k8.shape[1], k8.shape[2]
    group = h // h_kv
    kh = k8.repeat_interleave(group, dim=2).permute(0, 2, 1, 3)   # (b, h, sk, d)
    vh = v8.repeat_interleave(group, dim=2).permute(0, 2, 1, 3)
    qh = q8.permute(0, 2, 1, 3)                                    # (b, h, sq, d)
    kd = qz.k_descale.repeat_interleave(group, dim=1)[:, :, None, None]
    vd = qz.v_descale.repeat_interleave(group, dim=1)[:, :, None, None]
    row_scale = (1 / math.sqrt(d)) * LOG2E * qz.q_descale[:, :, None, None]  # (b, h, 1, 1)
    m = torch.full((b, h, sq, 1), float("-inf"))
    l = torch.zeros((b, h, sq, 1))
    o = torch.zeros((b, h, sq, d))
    rows = torch.arange(sq)[:, None]
    for k0 in reversed(range(0, sk, block_n)):
        k1 = min(sk, k0 + block_n)
        s_raw = qh @ kh[:, :, k0:k1].transpose(-1, -2)
        scale = (row_scale * kd).float()
        t = s_raw * scale
        if causal:
            t = t.masked_fill(torch.arange(k0, k1)[None, :] > rows + (sk - sq), float("-inf"))
        cand = torch.maximum(m, t.amax(dim=-1, keepdim=True))
        m_new = torch.where(cand > m + RESCALE_SLACK_LOG2, cand, m)
        m_safe = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
        p = torch.exp2(t - (m_safe - P_OFFSET_LOG2))
        alpha = torch.where(torch.isfinite(m), torch.exp2(m - m_safe), torch.zeros_like(m))
        p8 = _e4m3(p)
        if p_precision == 1:
            p8 = p8 + _e4m3(p - p8)
        if p_precision == 2:  # FP16 P; l from the FP32 p as hi+lo
            p8 = p.half().float()
        l = l * alpha + (p if p_precision in (1, 2) else p8).sum(dim=-1, keepdim=True)
        o = o * alpha + p8 @ vh[:, :, k0:k1]
        m = m_new
    visible = l > 0
    out = torch.where(visible, o * vd / torch.where(visible, l, torch.ones_like(l)), torch.zeros_like(o))
    lse = torch.where(visible, math.log(2) * (m + torch.log2(l) - P_OFFSET_LOG2), torch.full_like(l, float("-inf")))
    return out.permute(0, 2, 1, 3).to(torch.bfloat16), lse.squeeze(-1)

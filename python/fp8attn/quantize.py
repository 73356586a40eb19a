"""A small torch quantizer for the kernel's inputs: FA3-like per (batch, kv-head) scales.

This is not the pre-pass (src/quant/; fp8attn.attention and fp8attn.quantize_kv run it): it exists
so the harness and users can feed the kernel without it. Scales are amax/448 per (batch, kv head) for Q (over the query heads of that
kv head), K and V, as FlashAttention-3's FP8 path takes them; on a CUDA tensor torch computes
`amax / 448.0` as amax * fp32(1/448), one ulp above fp32(amax / 448) for some amax (the CPU
model mirrors that with its scheme key torch_scale=1). Rounding is torch's float ->
float8_e4m3fn cast (round-to-nearest-even); values are clamped to +-448 first because torch
turns out-of-range values into NaN instead of saturating.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from . import capi

E4M3_MAX = float(torch.finfo(torch.float8_e4m3fn).max)  # 448


_KEY_INDEX: dict[tuple[int, str], torch.Tensor] = {}


def vt_key_index(sk_pad: int, device=None) -> torch.Tensor:
    """index[p] = the key stored at V^T position p (fp8attn_vt_key_at within each group of 32,
    read from the library). Cached per (sk_pad, device): a call inside a CUDA graph capture
    must not copy from the host, so the first call (the warm-up) makes it."""
    key = (sk_pad, str(torch.device(device) if device is not None else "cpu"))
    if key not in _KEY_INDEX:
        _KEY_INDEX[key] = _make_key_index(sk_pad, device)
    return _KEY_INDEX[key]


def _make_key_index(sk_pad: int, device) -> torch.Tensor:
    lib = capi.load()
    group = lib.constant("FP8ATTN_VT_KEY_GROUP")
    if sk_pad % group:
        raise ValueError(f"sk_pad ({sk_pad}) must be a multiple of {group}")
    in_group = torch.tensor(lib.vt_key_order(), dtype=torch.long)
    groups = torch.arange(0, sk_pad, group, dtype=torch.long)
    return (groups[:, None] + in_group[None, :]).reshape(-1).to(device)


def make_vt(v8: torch.Tensor, pad: int | None = None) -> torch.Tensor:
    """V (b, sk, h_kv, d) E4M3 -> V^T (b, h_kv, d, sk_pad) E4M3, zero padded, keys permuted.
    sk_pad: sk rounded up to `pad` (default: the library's FP8ATTN_VT_PAD)."""
    b, sk, h_kv, d = v8.shape
    pad = capi.load().constant("FP8ATTN_VT_PAD") if pad is None else pad
    sk_pad = (sk + pad - 1) // pad * pad
    # Byte view: indexing and zero-fill are not implemented for float8 everywhere.
    vt = torch.zeros((b, h_kv, d, sk_pad), dtype=torch.uint8, device=v8.device)
    vt[..., :sk] = v8.view(torch.uint8).permute(0, 2, 3, 1)
    vt = vt.index_select(3, vt_key_index(sk_pad, v8.device))
    return vt.contiguous().view(torch.float8_e4m3fn)


def unpermute_vt(vt8: torch.Tensor, sk: int) -> torch.Tensor:
    """Inverse of make_vt: V^T (b, h_kv, d, sk_pad) -> V (b, sk, h_kv, d)."""
    sk_pad = vt8.shape[3]
    inverse = torch.argsort(vt_key_index(sk_pad, vt8.device))
    v = vt8.view(torch.uint8).index_select(3, inverse)[..., :sk]
    return v.permute(0, 3, 1, 2).contiguous().view(torch.float8_e4m3fn)


def _to_e4m3(x: torch.Tensor, descale_per_token_head: torch.Tensor) -> torch.Tensor:
    return (x.float() / descale_per_token_head).clamp_(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)


@dataclass
class Quantized:
    q8: torch.Tensor   # (b, sq, h, d) E4M3
    k8: torch.Tensor   # (b, sk, h_kv, d) E4M3
    v8: torch.Tensor   # (b, sk, h_kv, d) E4M3 (not transposed; for references)
    vt8: torch.Tensor  # (b, h_kv, d, sk_pad) E4M3, the kernel's V operand
    q_descale: torch.Tensor  # (b, h) float32
    k_descale: torch.Tensor  # (b, h_kv) float32
    v_descale: torch.Tensor  # (b, h_kv) float32

    def dequantized(self, dtype=torch.float64):
        """(q, k, v) in `dtype` exactly as the kernel reads them (x_fp8 * descale)."""
        q = self.q8.to(dtype) * self.q_descale.to(dtype)[:, None, :, None]
        k = self.k8.to(dtype) * self.k_descale.to(dtype)[:, None, :, None]
        v = self.v8.to(dtype) * self.v_descale.to(dtype)[:, None, :, None]
        return q, k, v


def _amax_scale(amax: torch.Tensor) -> torch.Tensor:
    # An all-zero head gets scale 1 (any scale represents zeros exactly).
    return torch.where(amax > 0, amax / E4M3_MAX, torch.ones_like(amax)).float()


def quantize_per_head(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> Quantized:
    """q (b, sq, h, d), k and v (b, sk, h_kv, d), any float dtype -> E4M3 with per (b, kv-head)
    amax/448 scales."""
    b, sq, h, d = q.shape
    h_kv = k.shape[2]
    group = h // h_kv
    q_scale_kv = _amax_scale(q.abs().reshape(b, sq, h_kv, group, d).amax(dim=(1, 3, 4)).float())
    q_scale = q_scale_kv.repeat_interleave(group, dim=1)  # (b, h)
    k_scale = _amax_scale(k.abs().amax(dim=(1, 3)).float())
    v_scale = _amax_scale(v.abs().amax(dim=(1, 3)).float())
    q8 = _to_e4m3(q, q_scale[:, None, :, None])
    k8 = _to_e4m3(k, k_scale[:, None, :, None])
    v8 = _to_e4m3(v, v_scale[:, None, :, None])
    return Quantized(q8, k8, v8, make_vt(v8), q_scale.contiguous(), k_scale.contiguous(),
                     v_scale.contiguous())

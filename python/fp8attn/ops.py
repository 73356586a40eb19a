"""fp8attn on torch CUDA tensors: a direct call (`attention_fwd`) and a torch.library custom op
(`torch.ops.fp8attn.attention_fwd`) with a fake implementation so torch.compile can trace it.

Shapes (the C ABI's, see include/fp8attn/fp8attn.h):
  q  (b, sq, h, 128)  float8_e4m3fn       k (b, sk, h_kv, 128) float8_e4m3fn
  vt (b, h_kv, 128, sk_pad) float8_e4m3fn, keys permuted in groups of 32 (see quantize.make_vt)
  q_descale broadcastable to (b, h, sq); k_descale to (b, h_kv, ceil(sk/128)); v_descale to
  (b, h_kv, 128); lse_bias (b, h, sq); o_bias broadcastable to (b, h_kv, 128); all float32.
Returns O (b, sq, h, 128) bfloat16 and LSE (b, h, sq) float32 (natural log).
"""
from __future__ import annotations

import math
from typing import Optional

import torch

from . import _abi


def _ptr(t: Optional[torch.Tensor]) -> Optional[int]:
    return None if t is None else t.data_ptr()


def _broadcast_f32(t: Optional[torch.Tensor], shape: tuple[int, ...], name: str):
    """Returns (tensor, strides) with broadcast dims at stride 0, as the ABI allows."""
    if t is None:
        return None, (0,) * len(shape)
    if t.dtype != torch.float32:
        raise TypeError(f"{name} must be float32, got {t.dtype}")
    # Missing trailing dims broadcast: a (b, h_kv) descale is one value per (batch, kv head).
    e = t.reshape(tuple(t.shape) + (1,) * (len(shape) - t.dim())).expand(*shape)
    return e, tuple(e.stride())


def _make_params(q, k, vt, o, lse, q_descale, k_descale, v_descale, lse_bias, o_bias,
                 softmax_scale, causal, p_precision, seqlen_k):
    b, sq, h, d = q.shape
    sk = k.shape[1] if seqlen_k is None else seqlen_k
    h_kv = k.shape[2]
    p = _abi.FwdParams()
    p.batch, p.seqlen_q, p.seqlen_k, p.heads, p.heads_kv, p.head_dim = b, sq, sk, h, h_kv, d
    p.q, (p.q_stride_b, p.q_stride_s, p.q_stride_h) = q.data_ptr(), q.stride()[:3]
    p.k, (p.k_stride_b, p.k_stride_s, p.k_stride_h) = k.data_ptr(), k.stride()[:3]
    p.vt, (p.vt_stride_b, p.vt_stride_h, p.vt_stride_d) = vt.data_ptr(), vt.stride()[:3]
    p.vt_seqlen_pad = vt.shape[3]
    p.o, (p.o_stride_b, p.o_stride_s, p.o_stride_h) = o.data_ptr(), o.stride()[:3]
    p.lse = _ptr(lse)
    n_kblk = (sk + _abi.K_SCALE_BLOCK - 1) // _abi.K_SCALE_BLOCK
    qd, (p.qd_stride_b, p.qd_stride_h, p.qd_stride_s) = _broadcast_f32(q_descale, (b, h, sq), "q_descale")
    kd, (p.kd_stride_b, p.kd_stride_h, p.kd_stride_blk) = _broadcast_f32(k_descale, (b, h_kv, n_kblk), "k_descale")
    vd, (p.vd_stride_b, p.vd_stride_h, p.vd_stride_d) = _broadcast_f32(v_descale, (b, h_kv, d), "v_descale")
    ob, ob_strides = _broadcast_f32(o_bias, (b, h_kv, d), "o_bias")
    if ob is not None and ob.stride(-1) != 1:  # the ABI has no channel stride for o_bias
        ob = ob.contiguous()
        ob_strides = ob.stride()
    p.ob_stride_b, p.ob_stride_h = ob_strides[:2]
    p.q_descale, p.k_descale, p.v_descale = _ptr(qd), _ptr(kd), _ptr(vd)
    p.o_bias, p.lse_bias = _ptr(ob), _ptr(lse_bias)
    p.softmax_scale = 1.0 / math.sqrt(d) if softmax_scale is None else float(softmax_scale)
    p.causal = int(bool(causal))
    p.p_precision = int(p_precision)
    return p, (qd, kd, vd, ob)  # the caller keeps these alive until the launch is enqueued


def attention_fwd(q: torch.Tensor, k: torch.Tensor, vt: torch.Tensor, *,
                  q_descale: Optional[torch.Tensor] = None, k_descale: Optional[torch.Tensor] = None,
                  v_descale: Optional[torch.Tensor] = None, lse_bias: Optional[torch.Tensor] = None,
                  o_bias: Optional[torch.Tensor] = None, softmax_scale: Optional[float] = None,
                  causal: bool = False, p_precision: int = _abi.P_E4M3,
                  out: Optional[torch.Tensor] = None, lse: Optional[torch.Tensor] = None,
                  seqlen_k: Optional[int] = None, lib=None):
    """Calls the kernel on the current CUDA stream. Raises _abi.Fp8AttnError with the library's
    message on any invalid argument (the library validates; this only marshals)."""
    b, sq, h, d = q.shape
    if out is None:
        out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device=q.device)
    if lse is None:
        lse = torch.empty((b, h, sq), dtype=torch.float32, device=q.device)
    params, _keepalive = _make_params(q, k, vt, out, lse, q_descale, k_descale, v_descale, lse_bias, o_bias,
                          softmax_scale, causal, p_precision, seqlen_k)
    stream = torch.cuda.current_stream(q.device).cuda_stream
    _abi.call(params, stream, lib)
    return out, lse


@torch.library.custom_op("fp8attn::attention_fwd", mutates_args=(), device_types="cuda")
def _attention_fwd_op(q: torch.Tensor, k: torch.Tensor, vt: torch.Tensor,
                      q_descale: Optional[torch.Tensor], k_descale: Optional[torch.Tensor],
                      v_descale: Optional[torch.Tensor], lse_bias: Optional[torch.Tensor],
                      o_bias: Optional[torch.Tensor], softmax_scale: float, causal: bool,
                      p_precision: int) -> tuple[torch.Tensor, torch.Tensor]:
    return attention_fwd(q, k, vt, q_descale=q_descale, k_descale=k_descale, v_descale=v_descale,
                         lse_bias=lse_bias, o_bias=o_bias, softmax_scale=softmax_scale,
                         causal=causal, p_precision=p_precision)


@_attention_fwd_op.register_fake
def _attention_fwd_fake(q, k, vt, q_descale, k_descale, v_descale, lse_bias, o_bias,
                        softmax_scale, causal, p_precision):
    b, sq, h, d = q.shape
    return (q.new_empty((b, sq, h, d), dtype=torch.bfloat16),
            q.new_empty((b, h, sq), dtype=torch.float32))


def attention_fwd_op(q, k, vt, *, q_descale=None, k_descale=None, v_descale=None, lse_bias=None,
                     o_bias=None, softmax_scale=None, causal=False, p_precision=_abi.P_E4M3):
    """torch.compile-friendly entry: torch.ops.fp8attn.attention_fwd with keyword defaults."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if softmax_scale is None else float(softmax_scale)
    return torch.ops.fp8attn.attention_fwd(q, k, vt, q_descale, k_descale, v_descale, lse_bias,
                                           o_bias, scale, bool(causal), int(p_precision))

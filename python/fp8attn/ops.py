"""The kernel on E4M3 inputs, as torch.library custom ops (each with a fake implementation, so
torch.compile traces them):

  torch.ops.fp8attn.attention_fwd  the C ABI's own operands: q, k, V^T (the kernel's layout, see
                                   quantize.make_vt), descales of any broadcastable granularity
  torch.ops.fp8attn.attention_fp8  FlashAttention-3's FP8 convention: q, k, v (V not transposed,
                                   (b, s, h_kv, d)) and (b, h_kv) descales

Shapes (include/fp8attn/fp8attn.h):
  q  (b, sq, h, 128) float8_e4m3fn       k (b, sk, h_kv, 128) float8_e4m3fn
  vt (b, h_kv, 128, sk_pad) float8_e4m3fn, keys permuted in groups of 32
  q_descale broadcastable to (b, h, sq); k_descale to (b, h_kv, ceil(sk/128)); v_descale to
  (b, h_kv, 128); lse_bias (b, h, sq); o_bias broadcastable to (b, h_kv, 128); all float32.
Returns O (b, sq, h, 128) bfloat16 and LSE (b, h, sq) float32 (natural log).
"""
from __future__ import annotations

import ctypes
from typing import Optional

import torch

from . import _validate, capi
from .quantize import make_vt

E4M3 = (torch.float8_e4m3fn,)


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


def make_params(q, k, vt, o, lse, q_descale=None, k_descale=None, v_descale=None, lse_bias=None,
                o_bias=None, softmax_scale=None, causal=False, p_precision=0, seqlen_k=None):
    """fp8attn_fwd_params for torch tensors. Returns (params, keepalive): keep the second alive
    until the launch is enqueued (the broadcast views the params point into)."""
    lib = capi.load()
    b, sq, h, d = q.shape
    sk = k.shape[1] if seqlen_k is None else seqlen_k
    h_kv = k.shape[2]
    p = capi.FwdParams()
    lib.fp8attn_fwd_params_init(ctypes.byref(p), b, sq, sk, h, h_kv, d)
    p.q, (p.q_stride_b, p.q_stride_s, p.q_stride_h) = q.data_ptr(), q.stride()[:3]
    p.k, (p.k_stride_b, p.k_stride_s, p.k_stride_h) = k.data_ptr(), k.stride()[:3]
    p.vt, (p.vt_stride_b, p.vt_stride_h, p.vt_stride_d) = vt.data_ptr(), vt.stride()[:3]
    p.vt_seqlen_pad = vt.shape[3]
    p.o, (p.o_stride_b, p.o_stride_s, p.o_stride_h) = o.data_ptr(), o.stride()[:3]
    p.lse = _ptr(lse)
    blk = lib.constant("FP8ATTN_K_SCALE_BLOCK")
    n_kblk = (sk + blk - 1) // blk
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
    p.softmax_scale = _validate.softmax_scale(softmax_scale, d)
    p.causal = int(bool(causal))
    p.p_precision = int(p_precision)
    return p, (qd, kd, vd, ob)


def _launch(params: capi.FwdParams, device: torch.device) -> None:
    lib = capi.load()
    stream = torch.cuda.current_stream(device).cuda_stream
    lib.check(lib.fp8attn_attention_fwd(ctypes.byref(params), ctypes.c_void_p(stream)), "kernel")


def attention_fwd(q: torch.Tensor, k: torch.Tensor, vt: torch.Tensor, *,
                  q_descale: Optional[torch.Tensor] = None, k_descale: Optional[torch.Tensor] = None,
                  v_descale: Optional[torch.Tensor] = None, lse_bias: Optional[torch.Tensor] = None,
                  o_bias: Optional[torch.Tensor] = None, softmax_scale: Optional[float] = None,
                  causal: bool = False, p_precision: int = 0,
                  out: Optional[torch.Tensor] = None, lse: Optional[torch.Tensor] = None,
                  seqlen_k: Optional[int] = None, lib=None):
    """The kernel alone on the C ABI's operands, on the current stream of q's device; writes
    `out` / `lse` when given. `lib` is accepted for older callers and ignored (one library a
    process: fp8attn.load)."""
    del lib
    _validate.tensor(q, "q", E4M3)
    _validate.tensor(k, "k", E4M3)
    _validate.tensor(vt, "vt", E4M3)
    device = _validate.same_device({"q": q, "k": k, "vt": vt, "q_descale": q_descale,
                                    "k_descale": k_descale, "v_descale": v_descale,
                                    "lse_bias": lse_bias, "o_bias": o_bias})
    b, sq, h, d = q.shape
    for n, t in (("q", q), ("k", k), ("vt", vt)):
        if t.stride(-1) != 1:
            raise ValueError(f"{n}: the last dim must be contiguous (stride 1)")
    if k.shape[0] != b or vt.shape[0] != b:
        raise ValueError(f"k and vt must have q's batch {b}, got {k.shape[0]} and {vt.shape[0]}")
    if vt.shape[1] != k.shape[2]:
        raise ValueError(f"vt's heads ({vt.shape[1]}) must equal k's heads ({k.shape[2]})")
    _validate.outputs(out, lse, b, sq, h, device)
    if out is None:
        out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device=device)
    if lse is None:
        lse = torch.empty((b, h, sq), dtype=torch.float32, device=device)
    with torch.cuda.device(device):
        params, _keepalive = make_params(q, k, vt, out, lse, q_descale, k_descale, v_descale,
                                         lse_bias, o_bias, softmax_scale, causal, p_precision,
                                         seqlen_k)
        _launch(params, device)
    return out, lse


def prepare_attention_fwd(q, k, vt, out, lse, *, q_descale=None, k_descale=None,
                          v_descale=None, softmax_scale=None, causal=False, p_precision=0):
    """A zero-argument launcher of the kernel on fixed tensors (validated once, parameters built
    once), for benchmarks that time the kernel alone: each call launches on the current stream
    of q's device and raises Fp8AttnError if the library refuses."""
    _validate.tensor(q, "q", E4M3)
    _validate.tensor(k, "k", E4M3)
    _validate.tensor(vt, "vt", E4M3)
    device = _validate.same_device({"q": q, "k": k, "vt": vt, "out": out, "lse": lse})
    b, sq, h, _ = q.shape
    _validate.outputs(out, lse, b, sq, h, device)
    params, keepalive = make_params(q, k, vt, out, lse, q_descale, k_descale, v_descale, None,
                                    None, softmax_scale, causal, p_precision)
    lib, ref = capi.load(), ctypes.byref(params)
    tensors = (q, k, vt, out, lse, keepalive)

    def launch():
        stream = ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)
        with torch.cuda.device(device):
            lib.check(lib.fp8attn_attention_fwd(ref, stream), "kernel")
        return tensors  # holds everything the launch points at

    launch.params = params
    return launch


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
                     o_bias=None, softmax_scale=None, causal=False, p_precision=0):
    """torch.compile-friendly entry: torch.ops.fp8attn.attention_fwd with keyword defaults."""
    scale = _validate.softmax_scale(softmax_scale, q.shape[-1])
    return torch.ops.fp8attn.attention_fwd(q, k, vt, q_descale, k_descale, v_descale, lse_bias,
                                           o_bias, scale, bool(causal), int(p_precision))


# ---- FlashAttention-3's FP8 convention -------------------------------------------------------

def check_fp8_args(q, k, v, q_descale, k_descale, v_descale):
    """Validation of attention_fp8's arguments; returns q's device."""
    _validate.tensor(q, "q", E4M3)
    _validate.tensor(k, "k", E4M3)
    _validate.tensor(v, "v", E4M3)
    device = _validate.same_device({"q": q, "k": k, "v": v, "q_descale": q_descale,
                                    "k_descale": k_descale, "v_descale": v_descale})
    b, sq, sk, h, h_kv = _validate.qkv_shapes(q, k, v)
    for n, t in (("q_descale", q_descale), ("k_descale", k_descale), ("v_descale", v_descale)):
        _validate.descale(t, n, (b, h_kv), device)
    return device


def _fp8_impl(q, k, v, q_descale, k_descale, v_descale, softmax_scale, causal, p_precision):
    b, sq, h, d = q.shape
    h_kv = k.shape[2]
    device = q.device
    out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device=device)
    lse = torch.empty((b, h, sq), dtype=torch.float32, device=device)
    if b == 0 or sq == 0:
        return out, lse
    with torch.cuda.device(device):
        vt = make_vt(v)  # (b, h_kv, 128, sk_pad), the kernel's V^T layout
        # FA3's q_descale is one value per (batch, kv head), shared by that head's query heads.
        qd = None if q_descale is None else q_descale.repeat_interleave(h // h_kv, dim=1)
        kd = None if k_descale is None else k_descale.contiguous()
        vd = None if v_descale is None else v_descale.contiguous()
        params, _keepalive = make_params(q, k, vt, out, lse, qd, kd, vd, None, None,
                                         softmax_scale, causal, p_precision)
        _launch(params, device)
    return out, lse


@torch.library.custom_op("fp8attn::attention_fp8", mutates_args=(), device_types="cuda")
def _attention_fp8_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      q_descale: Optional[torch.Tensor], k_descale: Optional[torch.Tensor],
                      v_descale: Optional[torch.Tensor], softmax_scale: float, causal: bool,
                      p_precision: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _fp8_impl(q, k, v, q_descale, k_descale, v_descale, softmax_scale, causal, p_precision)


@_attention_fp8_op.register_fake
def _attention_fp8_fake(q, k, v, q_descale, k_descale, v_descale, softmax_scale, causal,
                        p_precision):
    check_fp8_args(q, k, v, q_descale, k_descale, v_descale)
    b, sq, h, d = q.shape
    return (q.new_empty((b, sq, h, d), dtype=torch.bfloat16),
            q.new_empty((b, h, sq), dtype=torch.float32))

"""The public PyTorch API. Every entry validates its arguments (fp8attn._validate), then calls
one torch.library custom op, so it works eagerly, under torch.compile and in CUDA graphs.

  out, lse = fp8attn.attention(q, k, v, causal=True)          # BF16/FP16 (b, s, h, 128)
  cache = fp8attn.quantize_kv(k, v)                            # FP8 KV cache, once
  out, lse = fp8attn.attention(q, cache, causal=True)         # BF16 q against the cache
  out, lse = fp8attn.attention_fp8(q8, k8, v8, q_descale=qd, k_descale=kd, v_descale=vd)
  out, lse = fp8attn.attention_rope(q, k, v, cos, sin, causal=True)   # pre-rotary q, k: the
                                                               # rotary fused into the pre-pass
  q_rot = fp8attn.rope(q, cos, sin)                            # the rotary alone (BF16)

mode picks the precision of the softmax probabilities P in P @ V (fp8attn_p_precision):
'e4m3' (fastest), 'e4m3_exact' (FlashAttention-3 FP8's softmax numerics: its kernel-only error,
a few percent slower; one K scale per head), 'fp16' or 'e4m3_hilo' (BF16-level kernel error). `quant` overrides the
pre-pass's defaults (fp8attn_quant_options: smooth_k, smooth_v, hadamard_qk, q_scale, v_scale,
k_scale, hadamard_seed).
Outputs: O (b, sq, h, 128) in q's dtype for BF16/FP16 q (BF16 for FP8 q), LSE (b, h, sq) float32
(natural log of the softmax denominator of the scaled scores).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import torch

from . import _validate, ops, prepass_ops, rope_ops  # noqa: F401  (rope_ops registers its ops)
from .ops import check_fp8_args

_BF16 = _validate.BF16_INPUTS


@dataclass(frozen=True)
class KvCache:
    """An FP8 KV cache made by quantize_kv (fp8attn_kv_cache): E4M3 K (b, sk, h_kv, 128), E4M3
    V^T (b, h_kv, 128, sk_pad, keys permuted per 32), float32 descales and the channel means
    that the smoothing subtracted, and the options it was made with."""
    k: torch.Tensor
    vt: torch.Tensor
    k_descale: torch.Tensor
    v_descale: torch.Tensor
    k_mean: torch.Tensor
    v_mean: torch.Tensor
    quant: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, int, int]:
        """(batch, seqlen_k, heads_kv)."""
        b, sk, h_kv, _ = self.k.shape
        return b, sk, h_kv

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return self.k, self.vt, self.k_descale, self.v_descale, self.k_mean, self.v_mean


def _to_bf16(t: torch.Tensor) -> torch.Tensor:
    # The pre-pass reads BF16; FP16 fits BF16's range (its 3 extra mantissa bits are far below
    # the E4M3 rounding that follows).
    return t if t.dtype == torch.bfloat16 else t.to(torch.bfloat16)


def _quant(quant: Optional[dict]) -> list[int]:
    if quant is not None and not isinstance(quant, dict):
        raise TypeError(f"quant must be a dict of option overrides, got {type(quant).__name__}")
    return prepass_ops.quant_list(quant)


def _check_cache(cache: KvCache, q: torch.Tensor, device) -> None:
    for n, t in zip(("k", "vt", "k_descale", "v_descale", "k_mean", "v_mean"), cache.tensors()):
        if t.device != device:
            raise ValueError(f"cache.{n} is on {t.device} but q is on {device}")
    b, sk, h_kv = cache.shape
    if q.shape[0] != b:
        raise ValueError(f"q's batch ({q.shape[0]}) differs from the cache's ({b})")
    if q.shape[2] % h_kv:
        raise ValueError(f"q's heads ({q.shape[2]}) must be a multiple of the cache's heads_kv "
                         f"({h_kv}) (GQA)")
    if q.shape[-1] != _validate.head_dim() or q.stride(-1) != 1:
        raise ValueError(f"q: head dim must be {_validate.head_dim()} with a contiguous last dim, "
                         f"got shape {tuple(q.shape)} strides {tuple(q.stride())}")


def attention(q: torch.Tensor, k: Union[torch.Tensor, KvCache], v: Optional[torch.Tensor] = None,
              *, causal: bool = False, softmax_scale: Optional[float] = None,
              mode: str = "e4m3", quant: Optional[dict] = None):
    """Attention on BF16 (or FP16) q (b, sq, h, 128) and k, v (b, sk, h_kv, 128): the pre-pass
    (the library's default scheme: K and V smoothing, Hadamard rotation of Q and K, per-token Q
    scales) and the FP8 kernel. With a KvCache in place of k (and no v), only Q is quantized.
    causal: bottom-right aligned, as FlashAttention. Returns (out, lse)."""
    _validate.tensor(q, "q", _BF16)
    scale = _validate.softmax_scale(softmax_scale)
    p = _validate.p_precision(mode)
    if isinstance(k, KvCache):
        if v is not None:
            raise TypeError("attention(q, cache) takes no v: the cache holds V")
        if quant is not None:
            raise TypeError("quant belongs to quantize_kv: the cache was made with its options")
        device = _validate.same_device({"q": q, "cache.k": k.k})
        _check_cache(k, q, device)
        out, lse = torch.ops.fp8attn.attention_kvcache(_to_bf16(q), *k.tensors(), list(k.quant),
                                                       scale, bool(causal), p)
    else:
        if v is None:
            raise TypeError("attention(q, k, v): v is missing (or pass a KvCache as k)")
        _check_qkv(q, k, v)
        out, lse = torch.ops.fp8attn.attention(_to_bf16(q), _to_bf16(k), _to_bf16(v),
                                               _quant(quant), scale, bool(causal), p)
    return (out if q.dtype == torch.bfloat16 else out.to(q.dtype)), lse


def _check_qkv(q, k, v):
    """BF16 / FP16 q, k, v of one dtype on one device, shapes that agree, keys present; returns
    the device."""
    _validate.tensor(k, "k", _BF16)
    _validate.tensor(v, "v", _BF16)
    device = _validate.same_device({"q": q, "k": k, "v": v})
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k and v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    _validate.qkv_shapes(q, k, v)
    if k.shape[1] == 0:
        raise ValueError("k and v have no keys (seqlen 0): attention over no keys is undefined")
    return device


def attention_rope(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cos: torch.Tensor,
                   sin: torch.Tensor, q_pos0: int = 0, k_pos0: int = 0, *, causal: bool = False,
                   softmax_scale: Optional[float] = None, mode: str = "e4m3",
                   quant: Optional[dict] = None):
    """attention() on PRE-rotary q and k: the rotary embedding (NeoX / Llama rotate_half) is
    applied in FP32 where the pre-pass loads Q and K (never rounded to BF16 in between), so a
    model calls this in place of its rotary kernel + attention. cos, sin: float32 (positions, 64)
    tables, row p = cos / sin(p * inv_freq), contiguous, on q's device (e.g. Llama's
    `cos[:, :64].float().contiguous()` of its (positions, 128) cache); query row i uses table row
    q_pos0 + i, key row j row k_pos0 + j (a chunk of a prefill continues a sequence: q_pos0 = the
    tokens before it). V is not rotated. Returns (out, lse) as attention()."""
    _validate.tensor(q, "q", _BF16)
    device = _check_qkv(q, k, v)
    _validate.rope_tables(cos, sin, device, {"q_pos0": (q_pos0, q.shape[1]),
                                             "k_pos0": (k_pos0, k.shape[1])})
    scale = _validate.softmax_scale(softmax_scale)
    p = _validate.p_precision(mode)
    out, lse = torch.ops.fp8attn.attention_rope(_to_bf16(q), _to_bf16(k), _to_bf16(v), cos, sin,
                                                int(q_pos0), int(k_pos0), _quant(quant), scale,
                                                bool(causal), p)
    return (out if q.dtype == torch.bfloat16 else out.to(q.dtype)), lse


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, pos0: int = 0) -> torch.Tensor:
    """The rotary embedding alone on BF16 x (b, s, heads, 128) with the tables of
    attention_rope (row s uses table row pos0 + s): the library's FP32 rotation, rounded once to
    BF16, into a new contiguous tensor (x is not written). For a BF16 attention after it."""
    _validate.tensor(x, "x", (torch.bfloat16,))
    device = _validate.same_device({"x": x})
    if x.shape[-1] != _validate.head_dim():
        raise ValueError(f"x: head dim must be {_validate.head_dim()}, got shape {tuple(x.shape)}")
    _validate.rope_tables(cos, sin, device, {"pos0": (pos0, x.shape[1])})
    return torch.ops.fp8attn.rope_bf16(x, cos, sin, int(pos0))


def quantize_kv(k: torch.Tensor, v: torch.Tensor, *, quant: Optional[dict] = None) -> KvCache:
    """BF16 (or FP16) k, v (b, sk, h_kv, 128) -> an FP8 KV cache for attention(q, cache)."""
    _validate.tensor(k, "k", _BF16)
    _validate.tensor(v, "v", _BF16)
    _validate.same_device({"k": k, "v": v})
    _validate.qkv_shapes(k, k, v, names=("k", "k", "v"))
    if k.shape[0] == 0 or k.shape[1] == 0:
        raise ValueError(f"k and v must have batch and seqlen > 0, got shape {tuple(k.shape)}")
    qlist = _quant(quant)
    tensors = torch.ops.fp8attn.quantize_kv(_to_bf16(k), _to_bf16(v), qlist)
    return KvCache(*tensors, quant=tuple(qlist))


def attention_fp8(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                  q_descale: Optional[torch.Tensor] = None,
                  k_descale: Optional[torch.Tensor] = None,
                  v_descale: Optional[torch.Tensor] = None, causal: bool = False,
                  softmax_scale: Optional[float] = None, mode: str = "e4m3"):
    """FlashAttention-3's FP8 call: E4M3 q (b, sq, h, 128), k and v (b, sk, h_kv, 128) (V not
    transposed), float32 (b, h_kv) descales (x = x_fp8 * descale; None means 1). V is
    transposed into the kernel's V^T layout on the way (an extra pass over V). Returns
    (out BF16, lse)."""
    check_fp8_args(q, k, v, q_descale, k_descale, v_descale)
    if k.shape[1] == 0:
        raise ValueError("k and v have no keys (seqlen 0)")
    return torch.ops.fp8attn.attention_fp8(q, k, v, q_descale, k_descale, v_descale,
                                           _validate.softmax_scale(softmax_scale), bool(causal),
                                           _validate.p_precision(mode))


attention_fwd = ops.attention_fwd
attention_fwd_op = ops.attention_fwd_op

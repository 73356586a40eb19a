"""The rope entry (include/fp8attn/rope.h) as torch.library custom ops, each with a fake
implementation (torch.compile):

  torch.ops.fp8attn.attention_rope  BF16 pre-rotary q, k, v + FP32 cos / sin tables -> the rope +
                                    quantize pre-pass (fp8attn_quantize_qkv_rope: Q and K rotated
                                    in FP32 where the pre-pass loads them) + the kernel
  torch.ops.fp8attn.rope_bf16       BF16 x + the tables -> x rotated, rounded once to BF16
                                    (fp8attn_rope_bf16 on a contiguous copy; x is not written)

Tables: cos, sin float32 (positions, 64), contiguous, on the inputs' device; query row i uses
table row q_pos0 + i, key row j row k_pos0 + j (NeoX / Llama rotate_half: channel c < 64 pairs
with c + 64). Arguments are checked by fp8attn.api before these run; the library checks the
tables again (fp8attn_check_rope_tables) before any device work.
"""
from __future__ import annotations

import ctypes

import torch

from . import capi
from .prepass_ops import _bf16, _stream, end_to_end, _fake_outputs


def tables_struct(cos: torch.Tensor, sin: torch.Tensor, q_pos0: int = 0,
                  k_pos0: int = 0) -> capi.RopeTables:
    """fp8attn_rope_tables for torch tables (style NeoX, the only one the library takes)."""
    lib = capi.load()
    r = capi.RopeTables()
    lib.fp8attn_rope_tables_init(ctypes.byref(r))
    r.cos, r.sin, r.max_positions = cos.data_ptr(), sin.data_ptr(), cos.shape[0]
    r.q_pos0, r.k_pos0 = int(q_pos0), int(k_pos0)
    return r


@torch.library.custom_op("fp8attn::attention_rope", mutates_args=(), device_types="cuda")
def attention_rope_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cos: torch.Tensor,
                      sin: torch.Tensor, q_pos0: int, k_pos0: int, quant: list[int],
                      softmax_scale: float, causal: bool,
                      p_precision: int) -> tuple[torch.Tensor, torch.Tensor]:
    return end_to_end(q, k, v, quant, softmax_scale, causal, p_precision,
                      rope=tables_struct(cos, sin, q_pos0, k_pos0))


@attention_rope_op.register_fake
def _attention_rope_fake(q, k, v, cos, sin, q_pos0, k_pos0, quant, softmax_scale, causal,
                         p_precision):
    return _fake_outputs(q)


@torch.library.custom_op("fp8attn::rope_bf16", mutates_args=(), device_types="cuda")
def rope_bf16_op(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                 pos0: int) -> torch.Tensor:
    out = torch.empty(x.shape, dtype=torch.bfloat16, device=x.device)
    if out.numel() == 0:
        return out
    out.copy_(x)
    lib = capi.load()
    with torch.cuda.device(x.device):
        t, r = _bf16(out), tables_struct(cos, sin)
        lib.check(lib.fp8attn_rope_bf16(ctypes.byref(t), ctypes.byref(r), int(pos0),
                                        _stream(x.device)), "quant")
    return out


@rope_bf16_op.register_fake
def _rope_bf16_fake(x, cos, sin, pos0):
    return x.new_empty(x.shape, dtype=torch.bfloat16)

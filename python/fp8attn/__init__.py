"""fp8attn: FP8 (E4M3) attention forward for NVIDIA Hopper (sm_90a), on PyTorch CUDA tensors.

  import torch, fp8attn
  q = torch.randn(1, 4096, 12, 128, device="cuda", dtype=torch.bfloat16)
  k = torch.randn(1, 4096, 2, 128, device="cuda", dtype=torch.bfloat16)
  v = torch.randn_like(k)
  out, lse = fp8attn.attention(q, k, v, causal=True)       # pre-pass + FP8 kernel

Entries (fp8attn.api): attention (BF16/FP16 q, k, v, or q and a KvCache), attention_rope (the
same on pre-rotary q, k with cos / sin tables: the rotary fused into the pre-pass), rope (the
rotary alone, BF16), quantize_kv, attention_fp8 (FlashAttention-3's FP8 convention),
attention_fwd (the kernel's own operands).
Each is a torch.library custom op with a fake implementation (torch.compile, CUDA graphs).
libfp8attn.so is the one inside this package; $FP8ATTN_LIB (or fp8attn.load(path) before the
first call) points at another build, for development.
"""
try:
    import torch  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised by tests/python/test_no_torch.py
    raise ImportError(
        "fp8attn needs PyTorch (>= 2.4, with CUDA, for an sm_90 GPU): install it first, e.g. "
        "`pip install torch`, then `pip install fp8attn` (or `pip install .` in the repository). "
        f"The import failed with: {e}") from None

from .capi import Fp8AttnError, load  # noqa: E402,F401
from .api import (KvCache, attention, attention_fp8, attention_fwd, attention_fwd_op,  # noqa: E402,F401
                  attention_rope, quantize_kv, rope)
from .quantize import make_vt, quantize_per_head, unpermute_vt, vt_key_index  # noqa: E402,F401

__all__ = ["attention", "attention_rope", "rope", "quantize_kv", "KvCache", "attention_fp8", "attention_fwd",
           "attention_fwd_op", "Fp8AttnError", "load", "make_vt", "quantize_per_head",
           "unpermute_vt", "vt_key_index"]

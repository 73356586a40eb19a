"""fp8attn: FP8 (E4M3) attention forward for Hopper, on torch CUDA tensors.

  from fp8attn import attention_fwd, make_vt, quantize_per_head
  o, lse = attention_fwd(q8, k8, vt8, q_descale=qs, k_descale=ks, v_descale=vs, causal=True)

The library is found through FP8ATTN_LIB, .carry/libfp8attn.so or build*/src/libfp8attn.so.
"""
from ._abi import (P_E4M3, P_E4M3_HILO, P_FP16, Fp8AttnError, load, vt_key_at)  # noqa: F401
from .ops import attention_fwd, attention_fwd_op  # noqa: F401
from .quantize import make_vt, quantize_per_head, vt_key_index  # noqa: F401

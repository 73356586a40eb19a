"""fp8attn as a Hugging Face transformers attention implementation (AttentionInterface).

  import fp8attn.hf
  name = fp8attn.hf.register()                      # "fp8attn"
  model = AutoModelForCausalLM.from_config(cfg, attn_implementation=name)

The attention function takes what transformers gives every implementation: query
(b, h, sq, d), key and value (b, h_kv, sk, d), BF16 or FP16, head dim 128, and returns
(attn_output (b, sq, h, d), None). Masks: the registered mask function is transformers' SDPA
one, which yields no mask when the attention is plainly causal (or full); any other mask
(padding, sliding windows) is refused with a clear error, never silently dropped.
transformers is imported only by register().
"""
from __future__ import annotations

from typing import Optional

import torch

from .api import attention


def make_attention_forward(mode: str = "e4m3", quant: Optional[dict] = None):
    """An attention function in transformers' AttentionInterface signature."""

    def fp8attn_attention_forward(module: torch.nn.Module, query: torch.Tensor,
                                  key: torch.Tensor, value: torch.Tensor,
                                  attention_mask: Optional[torch.Tensor],
                                  scaling: Optional[float] = None, dropout: float = 0.0,
                                  **kwargs):
        if attention_mask is not None:
            raise NotImplementedError(
                "fp8attn: an explicit attention mask (padding, sliding window) is not supported; "
                "only causal or full attention over unpadded sequences")
        if dropout:
            raise NotImplementedError("fp8attn: dropout is not supported (inference only)")
        for unsupported in ("sliding_window", "softcap", "position_bias"):
            if kwargs.get(unsupported) is not None:
                raise NotImplementedError(f"fp8attn: {unsupported} is not supported")
        is_causal = kwargs.get("is_causal")
        if is_causal is None:
            is_causal = getattr(module, "is_causal", True)
        # SDPA's is_causal is top-left aligned, fp8attn's bottom-right (FlashAttention's): the
        # same when sq == sk, and one query row (sq == 1) sees every key either way.
        sq, sk = query.shape[2], key.shape[2]
        causal = bool(is_causal) and sq > 1
        if causal and sq != sk:
            raise NotImplementedError(f"fp8attn: causal attention with sq ({sq}) != sk ({sk}) "
                                      "needs a mask transformers would build; not supported")
        out, _ = attention(query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2),
                           causal=causal, softmax_scale=scaling, mode=mode, quant=quant)
        return out, None

    return fp8attn_attention_forward


def register(name: str = "fp8attn", mode: str = "e4m3", quant: Optional[dict] = None) -> str:
    """Registers fp8attn under `name` with transformers (attention and mask functions); returns
    the name to pass as attn_implementation."""
    from transformers import AttentionInterface
    AttentionInterface.register(name, make_attention_forward(mode, quant))
    try:
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
    except ImportError:  # older transformers: masks follow the implementation's defaults
        return name
    AttentionMaskInterface.register(name, sdpa_mask)
    return name

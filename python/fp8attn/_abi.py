"""Names of the former binding module, kept for callers written against it (bench/harness.py):
load(path) -> the library, Fp8AttnError, the status and P-precision values (read from the
library), vt_key_at. New code uses fp8attn.capi (the binding) and the public API."""
from __future__ import annotations

from .capi import FwdParams, Fp8AttnError, load  # noqa: F401

_FROM_LIBRARY = {
    "SUCCESS": "FP8ATTN_SUCCESS", "ERROR_INVALID_ARGUMENT": "FP8ATTN_ERROR_INVALID_ARGUMENT",
    "ERROR_UNSUPPORTED_DEVICE": "FP8ATTN_ERROR_UNSUPPORTED_DEVICE",
    "ERROR_CUDA": "FP8ATTN_ERROR_CUDA", "P_E4M3": "FP8ATTN_P_E4M3",
    "P_E4M3_HILO": "FP8ATTN_P_E4M3_HILO", "P_FP16": "FP8ATTN_P_FP16",
    "P_E4M3_EXACT": "FP8ATTN_P_E4M3_EXACT",
    "VT_KEY_GROUP": "FP8ATTN_VT_KEY_GROUP", "VT_PAD": "FP8ATTN_VT_PAD",
    "K_SCALE_BLOCK": "FP8ATTN_K_SCALE_BLOCK", "HEAD_DIM": "FP8ATTN_HEAD_DIM",
}


def __getattr__(name: str):
    if name in _FROM_LIBRARY:
        return load().constant(_FROM_LIBRARY[name])
    raise AttributeError(name)


def vt_key_at(p: int) -> int:
    """fp8attn_vt_key_at(p), from the library."""
    return load().vt_key_order()[p]


def last_error(lib=None) -> str:
    return (lib or load()).last_error("kernel")

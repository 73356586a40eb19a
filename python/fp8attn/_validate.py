"""Argument checks for what the C ABI cannot see: dtypes, devices, shapes that must agree across
tensors, the contiguity of the last dim, the mode. The library checks the rest (alignment,
strides, sizes) and answers with its own message (Fp8AttnError).

Errors: TypeError for a wrong type or dtype, ValueError for a wrong shape, device, layout or
value, each naming the argument. A machine without a usable CUDA device gets the library's
FP8ATTN_ERROR_UNSUPPORTED_DEVICE (Fp8AttnError), as the C calls would answer.
"""
from __future__ import annotations

import math
from typing import Optional

import torch

from . import capi

BF16_INPUTS = (torch.bfloat16, torch.float16)
E4M3 = torch.float8_e4m3fn

# mode -> the library's fp8attn_p_precision enum name.
MODES = {"e4m3": "FP8ATTN_P_E4M3", "e4m3_hilo": "FP8ATTN_P_E4M3_HILO", "fp16": "FP8ATTN_P_FP16",
         "e4m3_exact": "FP8ATTN_P_E4M3_EXACT"}


@torch.compiler.assume_constant_result
def const(name: str) -> int:
    """A constant of the library (torch.compile folds it into the graph)."""
    return capi.load().constant(name)


def head_dim() -> int:
    """The one head dim the library takes (FP8ATTN_HEAD_DIM)."""
    return const("FP8ATTN_HEAD_DIM")


def p_precision(mode) -> int:
    """The library's fp8attn_p_precision value of `mode` ('e4m3', 'e4m3_exact', 'e4m3_hilo', 'fp16')."""
    if not isinstance(mode, str):
        raise TypeError(f"mode must be one of {sorted(MODES)}, got {type(mode).__name__}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {sorted(MODES)}, got {mode!r}")
    return const(MODES[mode])


def _is_fake(t: torch.Tensor) -> bool:
    return isinstance(t, torch._subclasses.FakeTensor) or t.device.type == "meta"


def require_cuda(*tensors: torch.Tensor) -> None:
    """Raises the library's UNSUPPORTED_DEVICE when there is no CUDA device at all."""
    if torch.compiler.is_compiling() or any(_is_fake(t) for t in tensors):
        return
    if not torch.cuda.is_available():
        lib = capi.load()
        raise capi.Fp8AttnError(lib.constant("FP8ATTN_ERROR_UNSUPPORTED_DEVICE"),
                                "fp8attn: no CUDA device (fp8attn runs on an sm_90 Hopper GPU)")


def tensor(t, name: str, dtypes: tuple, ndim: int = 4) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        names = ", ".join(str(d).replace("torch.", "") for d in dtypes)
        raise TypeError(f"{name} must be {names}, got {str(t.dtype).replace('torch.', '')}")
    if t.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dims, got shape {tuple(t.shape)}")
    return t


def same_device(named: dict[str, Optional[torch.Tensor]]) -> torch.device:
    """All tensors on one CUDA device; returns it."""
    items = [(n, t) for n, t in named.items() if t is not None]
    first_name, first = items[0]
    require_cuda(*(t for _, t in items))
    if first.device.type not in ("cuda", "meta"):
        raise ValueError(f"{first_name} must be on a CUDA device, got {first.device}")
    for n, t in items[1:]:
        if t.device != first.device:
            raise ValueError(f"{n} is on {t.device} but {first_name} is on {first.device}: all "
                             "tensors must be on the same CUDA device")
    return first.device


def qkv_shapes(q, k, v, names=("q", "k", "v")) -> tuple[int, int, int, int, int]:
    """(b, sq, sk, h, h_kv) of q (b, sq, h, 128), k and v (b, sk, h_kv, 128)."""
    qn, kn, vn = names
    b, sq, h, d = q.shape
    hd = head_dim()
    for n, t in ((qn, q), (kn, k), (vn, v)):
        if t.shape[-1] != hd:
            raise ValueError(f"{n}: head dim must be {hd}, got shape {tuple(t.shape)}")
        if t.stride(-1) != 1:
            raise ValueError(f"{n}: the last dim must be contiguous (stride 1), got strides "
                             f"{tuple(t.stride())}")
    if tuple(k.shape) != tuple(v.shape):
        raise ValueError(f"{kn} and {vn} must have the same shape, got {tuple(k.shape)} and "
                         f"{tuple(v.shape)}")
    if k.shape[0] != b:
        raise ValueError(f"{kn}: batch {k.shape[0]} differs from {qn}'s batch {b}")
    sk, h_kv = k.shape[1], k.shape[2]
    if h_kv == 0 or h % h_kv != 0:
        raise ValueError(f"{qn}'s heads ({h}) must be a multiple of {kn}'s heads ({h_kv}) (GQA)")
    return b, sq, sk, h, h_kv


def softmax_scale(scale, d: int | None = None) -> float:
    if scale is None:
        return 1.0 / math.sqrt(d or head_dim())
    if isinstance(scale, bool) or not isinstance(scale, (int, float)):
        raise TypeError(f"softmax_scale must be a float or None, got {type(scale).__name__}")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"softmax_scale must be finite and > 0, got {scale}")
    return float(scale)


def descale(t, name: str, shape: tuple[int, ...], device) -> None:
    """A float32 descale of exactly `shape` (FA3's (batch, heads_kv)) on `device`, or None."""
    if t is None:
        return
    tensor(t, name, (torch.float32,), ndim=len(shape))
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(t.shape)}")
    if t.device != device:
        raise ValueError(f"{name} is on {t.device} but q is on {device}")


def outputs(out, lse, b: int, sq: int, h: int, device) -> None:
    """out: BF16 (b, sq, h, 128), last dim contiguous; lse: float32 (b, h, sq) contiguous."""
    if out is not None:
        tensor(out, "out", (torch.bfloat16,))
        want = (b, sq, h, head_dim())
        if tuple(out.shape) != want:
            raise ValueError(f"out must have shape {want}, got {tuple(out.shape)}")
        if out.stride(-1) != 1:
            raise ValueError("out: the last dim must be contiguous (stride 1)")
        if out.device != device:
            raise ValueError(f"out is on {out.device} but q is on {device}")
    if lse is not None:
        tensor(lse, "lse", (torch.float32,), ndim=3)
        if tuple(lse.shape) != (b, h, sq):
            raise ValueError(f"lse must have shape {(b, h, sq)}, got {tuple(lse.shape)}")
        if not lse.is_contiguous():
            raise ValueError("lse must be contiguous")
        if lse.device != device:
            raise ValueError(f"lse is on {lse.device} but q is on {device}")


def _position(p, name: str) -> int:
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"{name} must be an int, got {type(p).__name__}")
    if not 0 <= p < 2**31:
        raise ValueError(f"{name} must be >= 0 (and < 2^31), got {p}")
    return p


def rope_tables(cos, sin, device, uses: dict[str, tuple[int, int]]) -> None:
    """The rope entry's tables (include/fp8attn/rope.h): cos and sin float32 (positions, 64)
    (64 = head dim / 2), the same shape, contiguous (rows 64 floats apart), 16-byte aligned, on
    `device`. uses: position argument name -> (its value, the rows it starts), each run of rows
    inside the tables."""
    half = head_dim() // 2
    for n, t in (("cos", cos), ("sin", sin)):
        tensor(t, n, (torch.float32,), ndim=2)
        if t.shape[1] != half or t.shape[0] == 0:
            raise ValueError(f"{n} must have shape (positions, {half}) with positions > 0 (rotate_half "
                             f"tables: one angle per channel pair), got {tuple(t.shape)}")
        if not t.is_contiguous():
            raise ValueError(f"{n} must be contiguous (rows {half} floats apart), got strides "
                             f"{tuple(t.stride())}")
        if t.device != device:
            raise ValueError(f"{n} is on {t.device} but q is on {device}")
        if not _is_fake(t) and not torch.compiler.is_compiling() and t.data_ptr() % 16:
            raise ValueError(f"{n} must be 16-byte aligned (a view starting inside a row is not)")
    if tuple(cos.shape) != tuple(sin.shape):
        raise ValueError(f"cos and sin must have the same shape, got {tuple(cos.shape)} and "
                         f"{tuple(sin.shape)}")
    rows = cos.shape[0]
    for name, (pos0, n) in uses.items():
        _position(pos0, name)
        if pos0 + n > rows:
            raise ValueError(f"{name} + {n} rows = {pos0 + n} is past the tables' {rows} positions")

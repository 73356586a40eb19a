"""ctypes mirror of include/fp8attn/fp8attn.h (the C ABI of libfp8attn.so).

The struct below must match fp8attn_fwd_params field for field; `load()` checks that at run
time by letting the library fill one (fp8attn_fwd_params_init) and reading it back, so a header
change that this file missed fails loudly instead of passing garbage to the kernel.
"""
from __future__ import annotations

import ctypes
import math
import os
from pathlib import Path

SUCCESS, ERROR_INVALID_ARGUMENT, ERROR_UNSUPPORTED_DEVICE, ERROR_CUDA = 0, 1, 2, 3
STATUS_NAMES = {
    SUCCESS: "FP8ATTN_SUCCESS",
    ERROR_INVALID_ARGUMENT: "FP8ATTN_ERROR_INVALID_ARGUMENT",
    ERROR_UNSUPPORTED_DEVICE: "FP8ATTN_ERROR_UNSUPPORTED_DEVICE",
    ERROR_CUDA: "FP8ATTN_ERROR_CUDA",
}
P_E4M3, P_E4M3_HILO, P_FP16 = 0, 1, 2  # fp8attn_p_precision (P_FP16: not yet run on a GPU)
VT_KEY_GROUP = 32
VT_PAD = 32
K_SCALE_BLOCK = 128
HEAD_DIM = 128

_i32, _i64, _vp, _fp = ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p


class FwdParams(ctypes.Structure):
    _fields_ = [
        ("batch", _i32), ("seqlen_q", _i32), ("seqlen_k", _i32),
        ("heads", _i32), ("heads_kv", _i32), ("head_dim", _i32),
        ("q", _vp), ("q_stride_b", _i64), ("q_stride_s", _i64), ("q_stride_h", _i64),
        ("k", _vp), ("k_stride_b", _i64), ("k_stride_s", _i64), ("k_stride_h", _i64),
        ("vt", _vp), ("vt_stride_b", _i64), ("vt_stride_h", _i64), ("vt_stride_d", _i64),
        ("vt_seqlen_pad", _i32),
        ("o", _vp), ("o_stride_b", _i64), ("o_stride_s", _i64), ("o_stride_h", _i64),
        ("lse", _fp),
        ("q_descale", _fp), ("qd_stride_b", _i64), ("qd_stride_h", _i64), ("qd_stride_s", _i64),
        ("k_descale", _fp), ("kd_stride_b", _i64), ("kd_stride_h", _i64), ("kd_stride_blk", _i64),
        ("v_descale", _fp), ("vd_stride_b", _i64), ("vd_stride_h", _i64), ("vd_stride_d", _i64),
        ("lse_bias", _fp),
        ("o_bias", _fp), ("ob_stride_b", _i64), ("ob_stride_h", _i64),
        ("softmax_scale", ctypes.c_float), ("causal", _i32), ("p_precision", _i32),
    ]


def vt_key_at(p: int) -> int:
    """Python twin of fp8attn_vt_key_at: key (inside its group of 32) stored at position p."""
    half, quad, m = p // 16, (p % 16) // 4, p % 4
    return half * 16 + (m // 2) * 8 + quad * 2 + (m % 2)


class Fp8AttnError(RuntimeError):
    def __init__(self, status: int, message: str):
        super().__init__(f"{STATUS_NAMES.get(status, status)}: {message}")
        self.status = status


def _default_library_path() -> Path:
    env = os.environ.get("FP8ATTN_LIB")
    if env:
        return Path(env)
    root = Path(__file__).resolve().parents[2]
    candidates = [root / ".carry" / "libfp8attn.so", *sorted(root.glob("build*/src/libfp8attn.so"))]
    for c in candidates:
        if c.exists():
            return c
    raise FileNotFoundError("libfp8attn.so not found: set FP8ATTN_LIB or build it "
                            f"(looked in {', '.join(map(str, candidates))})")


_lib = None


def load(path: str | os.PathLike | None = None) -> ctypes.CDLL:
    """Loads libfp8attn.so once (FP8ATTN_LIB, .carry/, build*/src/) and checks the ABI."""
    global _lib
    if _lib is not None and path is None:
        return _lib
    lib = ctypes.CDLL(str(path or _default_library_path()))
    lib.fp8attn_fwd_params_init.argtypes = [ctypes.POINTER(FwdParams)] + [_i32] * 6
    lib.fp8attn_fwd_params_init.restype = None
    lib.fp8attn_attention_fwd.argtypes = [ctypes.POINTER(FwdParams), _vp]
    lib.fp8attn_attention_fwd.restype = ctypes.c_int
    lib.fp8attn_check_fwd_params.argtypes = [ctypes.POINTER(FwdParams)]
    lib.fp8attn_check_fwd_params.restype = ctypes.c_int
    lib.fp8attn_last_error.argtypes = []
    lib.fp8attn_last_error.restype = ctypes.c_char_p
    _check_struct_layout(lib)
    _lib = lib
    return lib


def _check_struct_layout(lib: ctypes.CDLL) -> None:
    # Distinct primes make a shifted or reordered field show up as a wrong value.
    b, sq, sk, h, hkv, d = 3, 5, 7, 11, 1, 128
    p = FwdParams()
    ctypes.memset(ctypes.byref(p), 0x5A, ctypes.sizeof(p))
    lib.fp8attn_fwd_params_init(ctypes.byref(p), b, sq, sk, h, hkv, d)
    expect = {
        "batch": b, "seqlen_q": sq, "seqlen_k": sk, "heads": h, "heads_kv": hkv, "head_dim": d,
        "q_stride_b": sq * h * d, "q_stride_s": h * d, "q_stride_h": d,
        "k_stride_b": sk * hkv * d, "k_stride_s": hkv * d, "k_stride_h": d,
        "o_stride_b": sq * h * d, "o_stride_s": h * d, "o_stride_h": d,
        "q": None, "k": None, "vt": None, "o": None, "lse": None, "q_descale": None,
        "k_descale": None, "v_descale": None, "lse_bias": None, "o_bias": None,
        "causal": 0, "p_precision": 0,
    }
    bad = {n: (getattr(p, n), v) for n, v in expect.items() if getattr(p, n) != v}
    if not math.isclose(p.softmax_scale, 1 / math.sqrt(d), rel_tol=1e-6):
        bad["softmax_scale"] = (p.softmax_scale, 1 / math.sqrt(d))
    if bad:
        raise RuntimeError(f"fp8attn_fwd_params layout mismatch between python/fp8attn/_abi.py "
                           f"and the library (field: (read, expected)): {bad}")


def last_error(lib: ctypes.CDLL | None = None) -> str:
    msg = (lib or load()).fp8attn_last_error()
    return msg.decode() if msg else ""


def call(params: FwdParams, stream: int | None, lib: ctypes.CDLL | None = None) -> None:
    lib = lib or load()
    status = lib.fp8attn_attention_fwd(ctypes.byref(params), _vp(stream or 0))
    if status != SUCCESS:
        raise Fp8AttnError(status, last_error(lib))


def check(params: FwdParams, lib: ctypes.CDLL | None = None) -> tuple[int, str]:
    lib = lib or load()
    status = lib.fp8attn_check_fwd_params(ctypes.byref(params))
    return status, (last_error(lib) if status != SUCCESS else "")

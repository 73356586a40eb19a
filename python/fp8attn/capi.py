"""The one binding of libfp8attn.so's C ABI (include/fp8attn/*.h), by ctypes. No torch here: the
tests that need no GPU load the library and check this file against it with plain Python.

Every struct below is checked field by field against the library's own table of sizes and
offsets (fp8attn_constant, include/fp8attn/constants.h) when the library is loaded, and every
constant the Python side needs is read from that table: nothing here is a copy that can drift.

Where the library is found (`load`): the `path` argument, else $FP8ATTN_LIB (a development
override: a build tree's libfp8attn.so), else the libfp8attn.so installed inside this package
(`pip install .` puts it there).
"""
from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

_i32, _i64, _u64, _vp, _f32 = (ctypes.c_int32, ctypes.c_int64, ctypes.c_uint64, ctypes.c_void_p,
                                ctypes.c_float)
_size_t, _status, _str = ctypes.c_size_t, ctypes.c_int, ctypes.c_char_p
_P = ctypes.POINTER


class FwdParams(ctypes.Structure):  # fp8attn_fwd_params (fp8attn.h)
    _fields_ = [
        ("batch", _i32), ("seqlen_q", _i32), ("seqlen_k", _i32),
        ("heads", _i32), ("heads_kv", _i32), ("head_dim", _i32),
        ("q", _vp), ("q_stride_b", _i64), ("q_stride_s", _i64), ("q_stride_h", _i64),
        ("k", _vp), ("k_stride_b", _i64), ("k_stride_s", _i64), ("k_stride_h", _i64),
        ("vt", _vp), ("vt_stride_b", _i64), ("vt_stride_h", _i64), ("vt_stride_d", _i64),
        ("vt_seqlen_pad", _i32),
        ("o", _vp), ("o_stride_b", _i64), ("o_stride_s", _i64), ("o_stride_h", _i64),
        ("lse", _vp),
        ("q_descale", _vp), ("qd_stride_b", _i64), ("qd_stride_h", _i64), ("qd_stride_s", _i64),
        ("k_descale", _vp), ("kd_stride_b", _i64), ("kd_stride_h", _i64), ("kd_stride_blk", _i64),
        ("v_descale", _vp), ("vd_stride_b", _i64), ("vd_stride_h", _i64), ("vd_stride_d", _i64),
        ("lse_bias", _vp),
        ("o_bias", _vp), ("ob_stride_b", _i64), ("ob_stride_h", _i64),
        ("softmax_scale", _f32), ("causal", _i32), ("p_precision", _i32), ("vt_dtype", _i32),
    ]


class QuantOptions(ctypes.Structure):  # fp8attn_quant_options (quant.h)
    _fields_ = [("smooth_k", _i32), ("smooth_v", _i32), ("hadamard_qk", _i32), ("q_scale", _i32),
                ("v_scale", _i32), ("k_scale", _i32), ("hadamard_seed", _u64), ("centre", _i32),
                ("reserved", _i32)]


class Bf16Tensor(ctypes.Structure):  # fp8attn_bf16_tensor (quant.h)
    _fields_ = [("data", _vp), ("batch", _i32), ("seqlen", _i32), ("heads", _i32),
                ("head_dim", _i32), ("stride_b", _i64), ("stride_s", _i64), ("stride_h", _i64)]


class KvCache(ctypes.Structure):  # fp8attn_kv_cache (quant.h)
    _fields_ = [("batch", _i32), ("seqlen_k", _i32), ("heads_kv", _i32), ("head_dim", _i32),
                ("vt_seqlen_pad", _i32), ("vt_dtype", _i32), ("k", _vp), ("vt", _vp), ("k_descale", _vp),
                ("v_descale", _vp), ("k_mean", _vp), ("v_mean", _vp), ("options", QuantOptions)]


class QQuant(ctypes.Structure):  # fp8attn_q_quant (quant.h)
    _fields_ = [("batch", _i32), ("seqlen_q", _i32), ("heads", _i32), ("head_dim", _i32),
                ("q", _vp), ("q_descale", _vp), ("lse_bias", _vp), ("softmax_scale", _f32)]


class AttentionArgs(ctypes.Structure):  # fp8attn_attention_args (attention.h)
    _fields_ = [("q", Bf16Tensor), ("k", Bf16Tensor), ("v", Bf16Tensor), ("o", _vp),
                ("o_stride_b", _i64), ("o_stride_s", _i64), ("o_stride_h", _i64), ("lse", _vp),
                ("softmax_scale", _f32), ("causal", _i32), ("p_precision", _i32),
                ("quant", QuantOptions)]


class RopeTables(ctypes.Structure):  # fp8attn_rope_tables (rope.h)
    _fields_ = [("cos", _vp), ("sin", _vp), ("max_positions", _i32), ("q_pos0", _i32),
                ("k_pos0", _i32), ("style", _i32)]


STRUCTS = {"fp8attn_rope_tables": RopeTables, "fp8attn_fwd_params": FwdParams, "fp8attn_quant_options": QuantOptions,
           "fp8attn_bf16_tensor": Bf16Tensor, "fp8attn_kv_cache": KvCache,
           "fp8attn_q_quant": QQuant, "fp8attn_attention_args": AttentionArgs}

# name -> (restype, argtypes). The whole C ABI: kernel, pre-pass, end to end, workspace, errors,
# constants. A function missing from the library is an error at load, except OPTIONAL ones.
SIGNATURES = {
    # fp8attn.h: the kernel
    "fp8attn_fwd_params_init": (None, [_P(FwdParams)] + [_i32] * 6),
    "fp8attn_attention_fwd": (_status, [_P(FwdParams), _vp]),
    "fp8attn_check_fwd_params": (_status, [_P(FwdParams)]),
    "fp8attn_last_error": (_str, []),
    # quant.h: the pre-pass
    "fp8attn_quant_options_init": (None, [_P(QuantOptions)]),
    "fp8attn_kv_cache_bytes": (_size_t, [_i32] * 5),
    "fp8attn_kv_cache_init": (_status, [_P(KvCache), _vp, _size_t] + [_i32] * 5),
    "fp8attn_kv_cache_bytes_vt": (_size_t, [_i32] * 6),
    "fp8attn_kv_cache_init_vt": (_status, [_P(KvCache), _vp, _size_t] + [_i32] * 6),
    "fp8attn_quantize_kv_workspace_bytes": (_size_t, [_i32] * 3),
    "fp8attn_quantize_kv": (_status, [_P(Bf16Tensor), _P(Bf16Tensor), _P(QuantOptions),
                                      _P(KvCache), _vp, _size_t, _vp]),
    "fp8attn_q_quant_bytes": (_size_t, [_i32] * 4),
    "fp8attn_q_quant_init": (_status, [_P(QQuant), _vp, _size_t] + [_i32] * 4),
    "fp8attn_quantize_q": (_status, [_P(Bf16Tensor), _P(KvCache), _i32, _f32, _P(QQuant), _vp]),
    "fp8attn_quantize_qkv": (_status, [_P(Bf16Tensor), _P(Bf16Tensor), _P(Bf16Tensor),
                                       _P(QuantOptions), _f32, _P(KvCache), _P(QQuant), _vp,
                                       _size_t, _vp]),
    "fp8attn_fwd_params_from_quant": (_status, [_P(FwdParams), _P(QQuant), _P(KvCache), _vp,
                                                _vp]),
    "fp8attn_quant_last_error": (_str, []),
    # attention.h: end to end with a library-owned workspace
    "fp8attn_workspace_create": (_vp, []),
    "fp8attn_workspace_destroy": (None, [_vp]),
    "fp8attn_workspace_reserve": (_status, [_vp, _size_t]),
    "fp8attn_workspace_size": (_size_t, [_vp]),
    "fp8attn_attention_workspace_bytes": (_size_t, [_i32] * 6),
    "fp8attn_attention_args_init": (None, [_P(AttentionArgs)]),
    "fp8attn_attention": (_status, [_P(AttentionArgs), _vp, _vp]),
    # rope.h: rope + quantize, the end-to-end call with it, the BF16 rotary alone
    "fp8attn_rope_tables_init": (None, [_P(RopeTables)]),
    "fp8attn_check_rope_tables": (_status, [_P(RopeTables), _i32, _i32]),
    "fp8attn_quantize_qkv_rope": (_status, [_P(Bf16Tensor), _P(Bf16Tensor), _P(Bf16Tensor),
                                            _P(RopeTables), _P(QuantOptions), _f32, _P(KvCache),
                                            _P(QQuant), _vp, _size_t, _vp]),
    "fp8attn_attention_rope": (_status, [_P(AttentionArgs), _P(RopeTables), _vp, _vp]),
    "fp8attn_rope_bf16": (_status, [_P(Bf16Tensor), _P(RopeTables), _i32, _vp]),
    # constants.h
    "fp8attn_constant_count": (_i32, []),
    "fp8attn_constant_name": (_str, [_i32]),
    "fp8attn_constant": (_status, [_str, _P(ctypes.c_double)]),
    "fp8attn_vt_key_index": (_i32, [_i32]),
    # study knob of the pre-pass (may leave the release library): bound when present
    "fp8attn_quant_variant": (_str, []),
}
OPTIONAL = {"fp8attn_quant_variant"}


class Fp8AttnError(RuntimeError):
    """A status other than FP8ATTN_SUCCESS from the library, with its message."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status_name(status)}: {message}")
        self.status = status


class Library:
    """libfp8attn.so, bound and checked. `constants` holds the library's whole table."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.cdll = ctypes.CDLL(str(path))
        except OSError as e:
            raise OSError(f"fp8attn: cannot load {path}: {e}") from e
        for name, (res, args) in SIGNATURES.items():
            fn = getattr(self.cdll, name, None)
            if fn is None:
                if name in OPTIONAL:
                    continue
                raise RuntimeError(f"fp8attn: {path} has no function {name}: the library and "
                                   "the Python package are from different versions")
            fn.restype, fn.argtypes = res, args
        self.constants = self._read_constants()
        check_layout(self.constants)

    def __getattr__(self, name: str):
        return getattr(self.cdll, name)

    def _read_constants(self) -> dict[str, float]:
        out, value = {}, ctypes.c_double()
        for i in range(self.cdll.fp8attn_constant_count()):
            name = self.cdll.fp8attn_constant_name(i)
            if self.cdll.fp8attn_constant(name, ctypes.byref(value)) != 0:
                raise RuntimeError(f"fp8attn: constant {name!r} listed but not readable")
            out[name.decode()] = value.value
        return out

    def constant(self, name: str) -> int:
        """An integer constant of the library (FP8ATTN_VT_PAD, FP8ATTN_P_FP16, ...)."""
        try:
            v = self.constants[name]
        except KeyError:
            raise KeyError(f"fp8attn: the library has no constant {name!r}") from None
        return int(v) if float(v).is_integer() else v

    def last_error(self, channel: str = "kernel") -> str:
        """The message of the last failure: 'kernel' (fp8attn_last_error) or 'quant' (the
        pre-pass and end-to-end calls, fp8attn_quant_last_error)."""
        first, second = (("fp8attn_quant_last_error", "fp8attn_last_error") if channel == "quant"
                         else ("fp8attn_last_error", "fp8attn_quant_last_error"))
        for fn in (first, second):
            msg = getattr(self.cdll, fn)()
            if msg:
                return msg.decode()
        return ""

    def check(self, status: int, channel: str, what: str = "") -> None:
        """Raises Fp8AttnError with the library's message unless status is FP8ATTN_SUCCESS."""
        if status != 0:
            msg = self.last_error(channel)
            raise Fp8AttnError(status, f"{what}: {msg}" if what and not msg else msg or what)

    def vt_key_order(self) -> list[int]:
        """[fp8attn_vt_key_at(p) for p in 0..31]: the key stored at each V^T position."""
        return [self.cdll.fp8attn_vt_key_index(p)
                for p in range(self.constant("FP8ATTN_VT_KEY_GROUP"))]

    def quant_options(self, **overrides) -> QuantOptions:
        """The library's default pre-pass options with `overrides` (field=value) applied."""
        o = QuantOptions()
        self.cdll.fp8attn_quant_options_init(ctypes.byref(o))
        for f, val in overrides.items():
            if f not in dict(QuantOptions._fields_):
                raise TypeError(f"unknown quantization option {f!r}")
            setattr(o, f, int(val))
        return o


def check_layout(constants: dict[str, float]) -> None:
    """Every ctypes struct against the library's sizeof/offsetof table; both ways, so that a
    field the header gained and this file lacks is an error too."""
    bad = []
    for cname, struct in STRUCTS.items():
        size = constants.get(f"sizeof({cname})")
        if size != ctypes.sizeof(struct):
            bad.append(f"sizeof({cname}): library {size}, python {ctypes.sizeof(struct)}")
        mine = {f: getattr(struct, f).offset for f, _ in struct._fields_}
        prefix = f"offsetof({cname}, "
        theirs = {k[len(prefix):-1]: v for k, v in constants.items() if k.startswith(prefix)}
        for f in sorted(set(mine) | set(theirs)):
            if mine.get(f) != theirs.get(f):
                bad.append(f"{cname}.{f}: library offset {theirs.get(f)}, python {mine.get(f)}")
    if bad:
        raise RuntimeError("fp8attn: python/fp8attn/capi.py does not match the library's "
                           "structs:\n  " + "\n  ".join(bad))


_STATUS_NAMES = ("FP8ATTN_SUCCESS", "FP8ATTN_ERROR_INVALID_ARGUMENT",
                 "FP8ATTN_ERROR_UNSUPPORTED_DEVICE", "FP8ATTN_ERROR_CUDA")


def status_name(status: int) -> str:
    """The enum name of a status (from the loaded library's table when there is one)."""
    if _loaded is not None:
        for n in _STATUS_NAMES:
            if _loaded.constants.get(n) == status:
                return n
    return f"fp8attn status {status}"


def package_library_path() -> Path:
    return Path(__file__).resolve().parent / "libfp8attn.so"


def library_path(path: str | os.PathLike | None = None) -> Path:
    if path is not None:
        return Path(path)
    env = os.environ.get("FP8ATTN_LIB")
    if env:
        return Path(env)
    p = package_library_path()
    if not p.exists():
        raise FileNotFoundError(
            f"fp8attn: {p} is missing. Install the package with `pip install .` from the "
            "repository (it builds libfp8attn.so into the package), or, for development, point "
            "FP8ATTN_LIB at a built libfp8attn.so.")
    return p


_loaded: Library | None = None
_lock = threading.Lock()


def load(path: str | os.PathLike | None = None) -> Library:
    """The library, loaded once and checked. A `path` (or $FP8ATTN_LIB) given on the first call
    picks which file; a later call with a different path is an error (one library a process)."""
    global _loaded
    if _loaded is not None and path is None:  # the fast path, lock-free (torch.compile traces it)
        return _loaded
    with _lock:
        if _loaded is None:
            _loaded = Library(library_path(path))
        elif path is not None and Path(path).resolve() != _loaded.path.resolve():
            raise RuntimeError(f"fp8attn: {_loaded.path} is already loaded; cannot switch to "
                               f"{path} in the same process")
        return _loaded

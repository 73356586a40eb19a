"""The pre-pass and the end-to-end call as torch.library custom ops (each with a fake
implementation, so torch.compile traces them):

  torch.ops.fp8attn.attention          BF16 q, k, v -> pre-pass (fp8attn_quantize_qkv) + kernel
  torch.ops.fp8attn.quantize_kv        BF16 k, v -> the FP8 KV cache's tensors (fp8attn_quantize_kv)
  torch.ops.fp8attn.attention_kvcache  BF16 q + those tensors -> fp8attn_quantize_q + kernel

Every buffer is a torch tensor (the caching allocator, CUDA-graph pools), never the library's
own workspace, and every launch goes to the current stream of the inputs' device.
`quant` is the pre-pass options as a list (QUANT_FIELDS order), from quant_list().
"""
from __future__ import annotations

import ctypes

import torch

from . import capi

QUANT_FIELDS = tuple(f for f, _ in capi.QuantOptions._fields_)
_U64 = 1 << 64


@torch.compiler.assume_constant_result
def default_quant() -> tuple[int, ...]:
    """The library's default options (fp8attn_quant_options_init) in QUANT_FIELDS order (the
    seed, a uint64, as the int64 of the same bits: op schemas have no unsigned ints)."""
    o = capi.load().quant_options()
    vals = [int(getattr(o, f)) for f in QUANT_FIELDS]
    vals[-1] = vals[-1] - _U64 if vals[-1] >= 1 << 63 else vals[-1]
    return tuple(vals)


def quant_list(overrides: dict | None = None) -> list[int]:
    """default_quant() with `overrides` (field -> int) applied, as the ops take it."""
    vals = list(default_quant())
    for f, val in (overrides or {}).items():
        if f not in QUANT_FIELDS:
            raise TypeError(f"unknown quantization option {f!r} (options: {', '.join(QUANT_FIELDS)})")
        if not isinstance(val, int):  # bool is an int: smooth_k=False works
            raise TypeError(f"quantization option {f} must be an int, got {type(val).__name__}")
        val = int(val)
        vals[QUANT_FIELDS.index(f)] = val - _U64 if f == "hadamard_seed" and val >= 1 << 63 else val
    return vals


def _options(quant: list[int]) -> capi.QuantOptions:
    if len(quant) != len(QUANT_FIELDS):
        raise ValueError(f"quant must hold {len(QUANT_FIELDS)} ints ({', '.join(QUANT_FIELDS)})")
    vals = list(quant)
    vals[-1] %= _U64
    return capi.QuantOptions(*vals)


def _bf16(t: torch.Tensor) -> capi.Bf16Tensor:
    b, s, h, d = t.shape
    sb, ss, sh, _ = t.stride()
    return capi.Bf16Tensor(t.data_ptr(), b, s, h, d, sb, ss, sh)


def _stream(device: torch.device) -> ctypes.c_void_p:
    return ctypes.c_void_p(torch.cuda.current_stream(device).cuda_stream)


def _buffer(nbytes: int, device, what: str) -> torch.Tensor:
    lib = capi.load()
    if nbytes == 0:  # the library's size functions answer 0 for a shape they refuse
        raise ValueError(f"fp8attn: no {what} for this shape (batch, seqlens and heads must be "
                         "> 0, head dim 128)")
    t = torch.empty(nbytes, dtype=torch.uint8, device=device)
    if t.data_ptr() % lib.constant("FP8ATTN_BUFFER_ALIGN"):
        raise RuntimeError(f"fp8attn: the {what} buffer torch gave is not "
                           f"{lib.constant('FP8ATTN_BUFFER_ALIGN')}-byte aligned")
    return t


def _kernel(params: capi.FwdParams, causal: bool, p_precision: int, stream) -> None:
    lib = capi.load()
    params.causal = int(causal)
    params.p_precision = int(p_precision)
    lib.check(lib.fp8attn_attention_fwd(ctypes.byref(params), stream), "kernel")


def _kernel_on(qq: capi.QQuant, cache: capi.KvCache, out: torch.Tensor, lse: torch.Tensor,
               causal: bool, p_precision: int, stream) -> None:
    """The kernel on the pre-pass's outputs (its parameters built by the library)."""
    lib = capi.load()
    params = capi.FwdParams()
    lib.check(lib.fp8attn_fwd_params_from_quant(ctypes.byref(params), ctypes.byref(qq),
                                                ctypes.byref(cache), out.data_ptr(),
                                                lse.data_ptr()), "quant")
    _kernel(params, causal, p_precision, stream)


def _outputs(q: torch.Tensor):
    b, sq, h, d = q.shape
    return (torch.empty((b, sq, h, d), dtype=torch.bfloat16, device=q.device),
            torch.empty((b, h, sq), dtype=torch.float32, device=q.device))


def _fake_outputs(q: torch.Tensor):
    b, sq, h, d = q.shape
    return (q.new_empty((b, sq, h, d), dtype=torch.bfloat16),
            q.new_empty((b, h, sq), dtype=torch.float32))


# ---- end to end ------------------------------------------------------------------------------

def end_to_end(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, quant: list[int],
               softmax_scale: float, causal: bool, p_precision: int, rope=None):
    """The pre-pass (fp8attn_quantize_qkv, or fp8attn_quantize_qkv_rope with `rope`, a
    capi.RopeTables) into one torch buffer laid out as fp8attn_attention's workspace (cache,
    quantized Q, scratch), then the kernel; returns (out, lse)."""
    lib = capi.load()
    out, lse = _outputs(q)
    b, sq, h, d = q.shape
    sk, h_kv = k.shape[1], k.shape[2]
    if b == 0 or sq == 0:
        return out, lse
    with torch.cuda.device(q.device):
        cache_bytes = lib.fp8attn_kv_cache_bytes(b, sk, h_kv, d, 0)
        q_bytes = lib.fp8attn_q_quant_bytes(b, sq, h, d)
        scratch = lib.fp8attn_quantize_kv_workspace_bytes(b, sk, h_kv)
        if 0 in (cache_bytes, q_bytes, scratch):
            _buffer(0, q.device, "workspace")
        # Each size a multiple of the alignment.
        ws = _buffer(cache_bytes + q_bytes + scratch, q.device, "workspace")
        base = ws.data_ptr()
        cache, qq = capi.KvCache(), capi.QQuant()
        lib.check(lib.fp8attn_kv_cache_init(ctypes.byref(cache), base, cache_bytes, b, sk, h_kv,
                                            d, 0), "quant")
        lib.check(lib.fp8attn_q_quant_init(ctypes.byref(qq), base + cache_bytes, q_bytes, b, sq,
                                           h, d), "quant")
        opts, stream = _options(quant), _stream(q.device)
        tq, tk, tv = _bf16(q), _bf16(k), _bf16(v)
        tail = (ctypes.byref(opts), softmax_scale, ctypes.byref(cache), ctypes.byref(qq),
                base + cache_bytes + q_bytes, scratch, stream)
        if rope is None:
            lib.check(lib.fp8attn_quantize_qkv(ctypes.byref(tq), ctypes.byref(tk),
                                               ctypes.byref(tv), *tail), "quant")
        else:
            lib.check(lib.fp8attn_quantize_qkv_rope(ctypes.byref(tq), ctypes.byref(tk),
                                                    ctypes.byref(tv), ctypes.byref(rope), *tail),
                      "quant")
        _kernel_on(qq, cache, out, lse, causal, p_precision, stream)
    return out, lse


@torch.library.custom_op("fp8attn::attention", mutates_args=(), device_types="cuda")
def attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, quant: list[int],
                 softmax_scale: float, causal: bool,
                 p_precision: int) -> tuple[torch.Tensor, torch.Tensor]:
    return end_to_end(q, k, v, quant, softmax_scale, causal, p_precision)


@attention_op.register_fake
def _attention_fake(q, k, v, quant, softmax_scale, causal, p_precision):
    return _fake_outputs(q)


# ---- the FP8 KV cache ------------------------------------------------------------------------

def cache_shapes(b, sk, h_kv, d: int = 128) -> dict[str, tuple]:
    """Shapes of the cache's tensors (fp8attn_kv_cache in quant.h); sk may be symbolic."""
    lib = capi.load()
    pad, blk = lib.constant("FP8ATTN_VT_PAD"), lib.constant("FP8ATTN_K_SCALE_BLOCK")
    return {"k": (b, sk, h_kv, d), "vt": (b, h_kv, d, (sk + pad - 1) // pad * pad),
            "k_descale": (b, h_kv, (sk + blk - 1) // blk), "v_descale": (b, h_kv, d),
            "k_mean": (b, h_kv, d), "v_mean": (b, h_kv, d)}


def _cache_struct(k8, vt8, k_descale, v_descale, k_mean, v_mean, quant) -> capi.KvCache:
    b, sk, h_kv, d = k8.shape
    c = capi.KvCache()
    c.batch, c.seqlen_k, c.heads_kv, c.head_dim, c.vt_seqlen_pad = b, sk, h_kv, d, vt8.shape[3]
    c.k, c.vt = k8.data_ptr(), vt8.data_ptr()
    c.k_descale, c.v_descale = k_descale.data_ptr(), v_descale.data_ptr()
    c.k_mean, c.v_mean = k_mean.data_ptr(), v_mean.data_ptr()
    c.options = _options(quant)
    return c


@torch.library.custom_op("fp8attn::quantize_kv", mutates_args=(), device_types="cuda")
def quantize_kv_op(k: torch.Tensor, v: torch.Tensor, quant: list[int]) -> tuple[
        torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    lib = capi.load()
    b, sk, h_kv, d = k.shape
    shapes = cache_shapes(b, sk, h_kv, d)
    e4m3, f32 = torch.float8_e4m3fn, torch.float32
    outs = [torch.empty(shapes[n], dtype=e4m3 if n in ("k", "vt") else f32, device=k.device)
            for n in ("k", "vt", "k_descale", "v_descale", "k_mean", "v_mean")]
    with torch.cuda.device(k.device):
        cache = _cache_struct(*outs, quant)
        scratch_bytes = lib.fp8attn_quantize_kv_workspace_bytes(b, sk, h_kv)
        scratch = _buffer(scratch_bytes, k.device, "pre-pass scratch")
        tk, tv, opts = _bf16(k), _bf16(v), _options(quant)
        lib.check(lib.fp8attn_quantize_kv(ctypes.byref(tk), ctypes.byref(tv), ctypes.byref(opts),
                                          ctypes.byref(cache), scratch.data_ptr(), scratch_bytes,
                                          _stream(k.device)), "quant")
    return tuple(outs)


@quantize_kv_op.register_fake
def _quantize_kv_fake(k, v, quant):
    b, sk, h_kv, d = k.shape
    shapes = cache_shapes(b, sk, h_kv, d)
    e4m3, f32 = torch.float8_e4m3fn, torch.float32
    return tuple(k.new_empty(shapes[n], dtype=e4m3 if n in ("k", "vt") else f32)
                 for n in ("k", "vt", "k_descale", "v_descale", "k_mean", "v_mean"))


@torch.library.custom_op("fp8attn::attention_kvcache", mutates_args=(), device_types="cuda")
def attention_kvcache_op(q: torch.Tensor, k8: torch.Tensor, vt8: torch.Tensor,
                         k_descale: torch.Tensor, v_descale: torch.Tensor, k_mean: torch.Tensor,
                         v_mean: torch.Tensor, quant: list[int], softmax_scale: float,
                         causal: bool, p_precision: int) -> tuple[torch.Tensor, torch.Tensor]:
    lib = capi.load()
    out, lse = _outputs(q)
    b, sq, h, d = q.shape
    if b == 0 or sq == 0:
        return out, lse
    with torch.cuda.device(q.device):
        cache = _cache_struct(k8, vt8, k_descale, v_descale, k_mean, v_mean, quant)
        q_bytes = lib.fp8attn_q_quant_bytes(b, sq, h, d)
        buf = _buffer(q_bytes, q.device, "quantized Q")
        qq = capi.QQuant()
        lib.check(lib.fp8attn_q_quant_init(ctypes.byref(qq), buf.data_ptr(), q_bytes, b, sq, h,
                                           d), "quant")
        stream, tq = _stream(q.device), _bf16(q)
        lib.check(lib.fp8attn_quantize_q(ctypes.byref(tq), ctypes.byref(cache),
                                         cache.options.q_scale, softmax_scale, ctypes.byref(qq),
                                         stream), "quant")
        _kernel_on(qq, cache, out, lse, causal, p_precision, stream)
    return out, lse


@attention_kvcache_op.register_fake
def _attention_kvcache_fake(q, k8, vt8, k_descale, v_descale, k_mean, v_mean, quant,
                            softmax_scale, causal, p_precision):
    return _fake_outputs(q)

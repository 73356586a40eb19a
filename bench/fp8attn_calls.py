"""The harness's one door to fp8attn: every call the bench makes into the library goes through this
file, so that a change of the binding's API is a change here alone. It uses only the package's
public binding (python/fp8attn: capi for the C ABI, ops.make_params for the kernel's operands, rope_ops.tables_struct for the rope tables).

  lib = load(path)
  qz = quantize_per_head(q, k, v)                 # FA3-like per (batch, kv head) E4M3 inputs
  run = kernel_runner(lib, qz, causal, mode)      # no-argument launch, marshalled up front
  run = params_runner(lib, params, keep)          # the same for parameters built elsewhere
  o, lse = kernel_call(lib, qz, causal, mode, softmax_scale=None)   # None: 1/sqrt(d)
  qv = with_fp16_v(qz, v)                         # the accurate mode's per-head inputs: qz's Q, K
                                                  # and descales, V^T = V / v_descale in FP16
  run = accurate_runner(lib, qv, causal)          # FP16 P on FP16 V^T (fp8attn_accurate)
  o, lse = accurate_call(lib, qv, causal, softmax_scale=None)
  run = end_to_end_runner(lib, q, k, v, causal)   # BF16 in: pre-pass + kernel, library defaults
  o, lse = end_to_end_call(lib, q, k, v, causal, softmax_scale=None, mode="fp8attn_accurate")
  pp = prepass(lib, q, k, v, softmax_scale=None)  # the library's own FP8 inputs (default options)
  o, lse = pp.run(causal, mode); q, k, v, scale, o_bias = pp.dequantized()
  pp = prepass(lib, q, k, v, vt16=True)           # the same with an FP16 V^T cache (the accurate
  o, lse = pp.run(causal, "fp8attn_accurate")     # mode's own inputs)
  cos, sin = rope_tables(max_positions)           # Llama's rotary tables (FP32, (positions, 64))
  run = rope_pair_runner(lib, q, k, v, causal, cos, sin, q_pos0, k_pos0)
                                                  # fp8attn_attention_rope on pre-rotary q, k, v
  run = rope_bf16_runner(lib, x, cos, sin, pos0)  # fp8attn_rope_bf16, in place on BF16 x
"""
from __future__ import annotations

import ctypes
import math
import sys
import weakref
from dataclasses import dataclass
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

import fp8attn  # noqa: E402
from fp8attn import capi, ops, rope_ops  # noqa: E402
from fp8attn.quantize import quantize_per_head, unpermute_vt  # noqa: E402,F401

# Method name -> the library's P precision enum name (its value is read from the library).
# MODES read E4M3 V^T (fp8attn_p_fp16: the converter kernel, for callers holding E4M3 V);
# VT16_MODES read an FP16 V^T (FP8ATTN_VT_FP16).
MODES = {"fp8attn": "FP8ATTN_P_E4M3", "fp8attn_exact": "FP8ATTN_P_E4M3_EXACT",
         "fp8attn_p_hilo": "FP8ATTN_P_E4M3_HILO", "fp8attn_p_fp16": "FP8ATTN_P_FP16"}
ACCURATE = "fp8attn_accurate"
VT16_MODES = {ACCURATE: "FP8ATTN_P_FP16"}


class Lib:
    def __init__(self, path: str):
        self.path = path
        self.c = fp8attn.load(path)  # raises with the reason if the library is missing

    def mode(self, name: str) -> int:
        return self.c.constant({**MODES, **VT16_MODES}[name])

    def vt_dtype(self, name: str) -> int:
        """The V^T dtype a method reads (FP8ATTN_VT_E4M3 or FP8ATTN_VT_FP16)."""
        return self.c.constant("FP8ATTN_VT_FP16" if name in VT16_MODES else "FP8ATTN_VT_E4M3")


def load(path: str) -> Lib:
    return Lib(path)


def _stream():
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


def _launch(lib: Lib, params) -> None:
    lib.c.check(lib.c.fp8attn_attention_fwd(ctypes.byref(params), _stream()), "kernel")


def params_runner(lib: Lib, params, keep):
    """Launches once (raising with the library's message if refused), then returns a no-argument
    callable that launches again; `keep` holds everything the launch points at."""
    _launch(lib, params)
    fwd, ref, stream = lib.c.fp8attn_attention_fwd, ctypes.byref(params), _stream()

    def run():
        status = fwd(ref, stream)
        if status != 0:
            lib.c.check(status, "kernel")
    run.keep = keep
    return run


def kernel_runner(lib: Lib, qz, causal: bool, mode: str):
    """A no-argument callable launching the kernel on qz's tensors; the arguments are marshalled
    and checked (one launch) here, outside any timing."""
    b, sq, h, d = qz.q8.shape
    out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device="cuda")
    lse = torch.empty((b, h, sq), dtype=torch.float32, device="cuda")
    params, keep = ops.make_params(qz.q8, qz.k8, qz.vt8, out, lse, qz.q_descale, qz.k_descale,
                                   qz.v_descale, causal=causal, p_precision=lib.mode(mode))
    return params_runner(lib, params, (params, keep, out, lse, qz))


def kernel_call(lib: Lib, qz, causal: bool, mode: str, softmax_scale: float | None = None):
    return ops.attention_fwd(qz.q8, qz.k8, qz.vt8, q_descale=qz.q_descale, k_descale=qz.k_descale,
                             v_descale=qz.v_descale, softmax_scale=softmax_scale, causal=causal,
                             p_precision=lib.mode(mode))


@dataclass
class PerHeadV16:
    """The accurate mode's per-head inputs: qz's E4M3 Q and K and its per (batch, kv head)
    descales, with V^T in FP16 = V / v_descale (the same per-head scale, |V^T| <= 448, rounded to
    FP16 instead of E4M3), natural key order, zeros past sk."""
    qz: object
    vt16: torch.Tensor  # (b, h_kv, d, sk_pad) float16

    def __getattr__(self, name):  # q8, k8, q_descale, ... of the shared per-head inputs
        if name == "qz":
            raise AttributeError(name)
        return getattr(self.qz, name)

    def dequantized(self, dtype=torch.float64):
        """(q, k, v) in `dtype` as the kernel reads them: Q, K as qz's; V = FP16 V * v_descale."""
        q, k, _ = self.qz.dequantized(dtype)
        sk = self.qz.k8.shape[1]
        v = self.vt16[..., :sk].permute(0, 3, 1, 2).to(dtype)
        return q, k, v * self.qz.v_descale.to(dtype)[:, None, :, None]


def with_fp16_v(qz, v, pad: int | None = None) -> PerHeadV16:
    """qz (quantize_per_head) and the BF16 V it was made from (b, sk, h_kv, d) -> PerHeadV16.
    sk_pad: sk rounded up to `pad` (default: the library's FP8ATTN_VT_PAD)."""
    b, sk, h_kv, d = v.shape
    if tuple(qz.k8.shape) != (b, sk, h_kv, d):
        raise ValueError(f"v {tuple(v.shape)} is not the V of these inputs (k {tuple(qz.k8.shape)})")
    pad = fp8attn.load().constant("FP8ATTN_VT_PAD") if pad is None else pad
    sk_pad = -(-sk // pad) * pad
    vt = torch.zeros((b, h_kv, d, sk_pad), dtype=torch.float16, device=v.device)
    vt[..., :sk] = (v.float() / qz.v_descale.float()[:, None, :, None]).half().permute(0, 2, 3, 1)
    return PerHeadV16(qz, vt)


def accurate_runner(lib: Lib, qv: PerHeadV16, causal: bool, softmax_scale: float | None = None):
    """A no-argument callable launching fp8attn_accurate (FP16 P, FP16 V^T) on qv; marshalled and
    checked (one launch) here, outside any timing. run.out = (o, lse)."""
    b, sq, h, d = qv.q8.shape
    out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device="cuda")
    lse = torch.empty((b, h, sq), dtype=torch.float32, device="cuda")
    params, keep = ops.make_params(qv.q8, qv.k8, qv.vt16, out, lse, qv.q_descale, qv.k_descale,
                                   qv.v_descale, softmax_scale=softmax_scale, causal=causal,
                                   p_precision=lib.mode(ACCURATE), seqlen_k=qv.k8.shape[1])
    params.vt_dtype = lib.vt_dtype(ACCURATE)
    run = params_runner(lib, params, (params, keep, out, lse, qv))
    run.out = out, lse
    return run


def accurate_call(lib: Lib, qv: PerHeadV16, causal: bool, softmax_scale: float | None = None):
    run = accurate_runner(lib, qv, causal, softmax_scale)
    torch.cuda.synchronize()
    return run.out


def _bf16(t):
    b, s, h, d = t.shape
    sb, ss, sh, _ = t.stride()
    return capi.Bf16Tensor(t.data_ptr(), b, s, h, d, sb, ss, sh)


def _attention_args(lib: Lib, q, k, v, causal: bool, softmax_scale, mode: str):
    """fp8attn_attention_args on BF16 q, k, v with fresh outputs, and a library workspace of the
    size fp8attn_attention (and fp8attn_attention_rope) needs. Returns (args, ws, keep)."""
    b, sq, h, d = q.shape
    sk, h_kv = k.shape[1], k.shape[2]
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device="cuda")
    lse = torch.empty((b, h, sq), dtype=torch.float32, device="cuda")
    L = lib.c
    args = capi.AttentionArgs()
    L.fp8attn_attention_args_init(ctypes.byref(args))
    args.q, args.k, args.v = _bf16(q), _bf16(k), _bf16(v)
    args.o, args.lse, args.causal = out.data_ptr(), lse.data_ptr(), int(causal)
    args.softmax_scale = 0.0 if softmax_scale is None else float(softmax_scale)  # 0: the default
    args.p_precision = lib.mode(mode)
    args.o_stride_b, args.o_stride_s, args.o_stride_h = out.stride()[:3]
    ws = ctypes.c_void_p(L.fp8attn_workspace_create())
    finalizer = weakref.finalize(args, L.fp8attn_workspace_destroy, ws)
    L.check(L.fp8attn_workspace_reserve(
        ws, L.fp8attn_attention_workspace_bytes(b, sq, sk, h, h_kv, d)), "quant", "workspace reserve")
    return args, ws, (args, finalizer, q, k, v, out, lse)


def end_to_end_runner(lib: Lib, q, k, v, causal: bool, softmax_scale: float | None = None,
                      mode: str = "fp8attn"):
    """fp8attn_attention (pre-pass with the library's default options + kernel) on BF16 q, k, v;
    the workspace reserved here, outside any timing (the C entry, without Python per call).
    softmax_scale None: the library's default, 1/sqrt(128). mode: the P precision of `mode`'s
    method ("fp8attn_accurate": FP16 P, for which the library writes and reads an FP16 V^T)."""
    args, ws, keep = _attention_args(lib, q, k, v, causal, softmax_scale, mode)
    L, stream = lib.c, _stream()
    fn, ref = L.fp8attn_attention, ctypes.byref(args)

    def run():
        status = fn(ref, ws, stream)
        if status != 0:
            L.check(status, "quant", "attention")
    run()
    run.keep = keep
    run.out = keep[-2:]
    return run


def end_to_end_call(lib: Lib, q, k, v, causal: bool, softmax_scale: float | None = None,
                    mode: str = "fp8attn"):
    run = end_to_end_runner(lib, q, k, v, causal, softmax_scale, mode)
    torch.cuda.synchronize()
    return run.out


class Prepass:
    """The library's pre-pass (default options) run once on BF16 q, k, v into buffers held here:
    the FP8 inputs the end-to-end call feeds its kernel, for the kernel's own error on them.
    vt16: the KV cache holds V^T in FP16 (FP8ATTN_VT_FP16), the accurate mode's inputs (what the
    end-to-end call writes with FP16 P); otherwise E4M3 V^T, every other mode's. `overrides`:
    pre-pass options other than the defaults (field=value, e.g. centre=1 for
    FP8ATTN_CENTRE_SAMPLE)."""

    def __init__(self, lib: Lib, q, k, v, softmax_scale: float | None = None, vt16: bool = False,
                 **overrides):
        L, d = lib.c, q.shape[3]
        scale = 1.0 / math.sqrt(d) if softmax_scale is None else float(softmax_scale)
        b, sq, h = q.shape[:3]
        sk, h_kv = k.shape[1], k.shape[2]
        self.lib, self.shape, self.vt16 = lib, (b, sq, sk, h, h_kv, d), bool(vt16)
        self.q, self.k, self.v = q.contiguous(), k.contiguous(), v.contiguous()
        opts = L.quant_options(**overrides)
        self.options = {f: getattr(opts, f) for f, _ in capi.QuantOptions._fields_}
        align = L.constant("FP8ATTN_BUFFER_ALIGN")

        def buf(n):
            t = torch.empty(n, dtype=torch.uint8, device="cuda")
            assert t.data_ptr() % align == 0
            return t
        vt_dtype = L.constant("FP8ATTN_VT_FP16" if vt16 else "FP8ATTN_VT_E4M3")
        nbytes = L.fp8attn_kv_cache_bytes_vt(b, sk, h_kv, d, 0, vt_dtype)
        if nbytes == 0:
            raise ValueError(f"fp8attn_kv_cache_bytes_vt refused b={b} sk={sk} h_kv={h_kv} d={d}")
        self.cache_buf = buf(nbytes)
        self.q_buf = buf(L.fp8attn_q_quant_bytes(b, sq, h, d))
        ws = buf(L.fp8attn_quantize_kv_workspace_bytes(b, sk, h_kv))
        self.cache, self.qq = capi.KvCache(), capi.QQuant()
        L.check(L.fp8attn_kv_cache_init_vt(ctypes.byref(self.cache), self.cache_buf.data_ptr(),
                                           self.cache_buf.numel(), b, sk, h_kv, d, 0, vt_dtype),
                "quant", "cache init")
        L.check(L.fp8attn_q_quant_init(ctypes.byref(self.qq), self.q_buf.data_ptr(),
                                       self.q_buf.numel(), b, sq, h, d), "quant", "q init")
        tq, tk, tv = _bf16(self.q), _bf16(self.k), _bf16(self.v)
        args = (ctypes.byref(tq), ctypes.byref(tk), ctypes.byref(tv), ctypes.byref(opts),
                ctypes.c_float(scale), ctypes.byref(self.cache), ctypes.byref(self.qq),
                ws.data_ptr(), ctypes.c_size_t(ws.numel()), _stream())

        def requantize():
            """The pre-pass again into the same buffers (enqueued, not synchronized): the pre-pass
            alone, for timing it."""
            L.check(L.fp8attn_quantize_qkv(*args), "quant", "quantize_qkv")
        requantize.keep = (opts, ws, tq, tk, tv)
        self.requantize = requantize
        requantize()
        torch.cuda.synchronize()

    def _params(self, causal: bool, mode: str, out, lse):
        L = self.lib.c
        if (mode in VT16_MODES) != self.vt16:
            raise ValueError(f"{mode} reads {'an FP16' if mode in VT16_MODES else 'an E4M3'} V^T; this "
                             f"pre-pass wrote {'FP16' if self.vt16 else 'E4M3'} (prepass(..., vt16=...))")
        p = capi.FwdParams()
        L.check(L.fp8attn_fwd_params_from_quant(ctypes.byref(p), ctypes.byref(self.qq),
                                                ctypes.byref(self.cache), out.data_ptr(),
                                                lse.data_ptr()), "quant", "params from quant")
        p.causal, p.p_precision = int(causal), self.lib.mode(mode)
        return p

    def run(self, causal: bool, mode: str):
        b, sq, sk, h, h_kv, d = self.shape
        out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device="cuda")
        lse = torch.empty((b, h, sq), dtype=torch.float32, device="cuda")
        _launch(self.lib, self._params(causal, mode, out, lse))
        torch.cuda.synchronize()
        return out, lse

    def _view(self, buf, ptr, dtype, shape):
        off = ptr - buf.data_ptr()
        n = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
        assert 0 <= off and off + n <= buf.numel(), "pointer outside its buffer"
        return buf[off:off + n].view(dtype).view(shape)

    def dequantized(self, dtype=torch.float64):
        """(q, k, v, softmax_scale, o_bias): the kernel's inputs as it reads them (x * descale;
        Q and K rotated and K smoothed as the pre-pass wrote them, V smoothed), so that
        softmax(q k^T * scale) v + o_bias[kv head] is the output of an exact kernel on them."""
        b, sq, sk, h, h_kv, d = self.shape
        c, qq, f8 = self.cache, self.qq, torch.float8_e4m3fn
        pad = c.vt_seqlen_pad
        blk = self.lib.c.constant("FP8ATTN_K_SCALE_BLOCK")
        nblk = -(-sk // blk)
        q8 = self._view(self.q_buf, qq.q, f8, (b, sq, h, d))
        qd = self._view(self.q_buf, qq.q_descale, torch.float32, (b, h, sq))
        k8 = self._view(self.cache_buf, c.k, f8, (b, sk, h_kv, d))
        kd = self._view(self.cache_buf, c.k_descale, torch.float32, (b, h_kv, nblk))
        vt = self._view(self.cache_buf, c.vt, torch.float16 if self.vt16 else f8, (b, h_kv, d, pad))
        vd = self._view(self.cache_buf, c.v_descale, torch.float32, (b, h_kv, d))
        vmean = self._view(self.cache_buf, c.v_mean, torch.float32, (b, h_kv, d))
        kd_key = kd.repeat_interleave(blk, dim=2)[:, :, :sk]  # (b, h_kv, sk)
        q = q8.to(dtype) * qd.to(dtype).permute(0, 2, 1)[..., None]
        k = k8.to(dtype) * kd_key.to(dtype).permute(0, 2, 1)[..., None]
        v = (vt[..., :sk].permute(0, 3, 1, 2) if self.vt16 else unpermute_vt(vt, sk)).to(dtype)
        v = v * vd.to(dtype)[:, None]
        scale = qq.softmax_scale  # fp8attn_fwd_params_from_quant passes the kernel this one
        o_bias = vmean.to(dtype) if self.options["smooth_v"] else torch.zeros_like(vmean, dtype=dtype)
        return q, k, v, float(scale), o_bias


def prepass(lib: Lib, q, k, v, softmax_scale: float | None = None, vt16: bool = False,
            **overrides) -> Prepass:
    return Prepass(lib, q, k, v, softmax_scale, vt16, **overrides)


# ---- the rope entry (include/fp8attn/rope.h) ---------------------------------------------------

def rope_tables(max_positions: int, base: float = 10000.0):
    """cos, sin (max_positions, 64) float32 on the GPU: Llama's / Qwen's rotate_half tables,
    angle(p, i) = p * base^(-i / 64), computed in FP64 then rounded once."""
    inv = base ** (-torch.arange(64, dtype=torch.float64) / 64)
    ang = torch.arange(max_positions, dtype=torch.float64)[:, None] * inv[None, :]
    return ang.cos().float().cuda().contiguous(), ang.sin().float().cuda().contiguous()


def rope_pair_runner(lib: Lib, q, k, v, causal: bool, cos, sin, q_pos0: int = 0, k_pos0: int = 0,
                     softmax_scale: float | None = None):
    """fp8attn_attention_rope (the rope + quantize pre-pass and the kernel: one C call) on
    pre-rotary BF16 q, k, v with the library's default options; arguments, outputs and workspace
    made here, outside any timing (one launch checks them). run.out = (o, lse)."""
    args, ws, keep = _attention_args(lib, q, k, v, causal, softmax_scale, "fp8attn")
    rope = rope_ops.tables_struct(cos, sin, q_pos0, k_pos0)
    L, stream = lib.c, _stream()
    fn, ra, rr = L.fp8attn_attention_rope, ctypes.byref(args), ctypes.byref(rope)

    def run():
        status = fn(ra, rr, ws, stream)
        if status != 0:
            L.check(status, "quant", "attention_rope")
    run()
    run.keep = (keep, rope, cos, sin)
    run.out = keep[-2:]
    return run


def rope_bf16_runner(lib: Lib, x, cos, sin, pos0: int = 0):
    """fp8attn_rope_bf16 in place on BF16 x (b, s, heads, 128), rows from table row pos0: the
    library's copy-speed rotary (16-byte loads and stores). Checked (one call) here."""
    L = lib.c
    t, rope = _bf16(x), rope_ops.tables_struct(cos, sin)
    fn, rt, rr, stream = L.fp8attn_rope_bf16, ctypes.byref(t), ctypes.byref(rope), _stream()

    def run():
        status = fn(rt, rr, pos0, stream)
        if status != 0:
            L.check(status, "quant", "rope_bf16")
    run()
    run.keep = (t, rope, x, cos, sin)
    return run

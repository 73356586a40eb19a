"""The harness's one door to fp8attn: every call the bench makes into the library goes through this
file, so that a change of the binding's API is a change here alone.

Today: the kernel through python/fp8attn (ctypes of include/fp8attn/fp8attn.h), the end-to-end
call and the pre-pass through bench/bench_prepass.py's ctypes of include/fp8attn/quant.h and
attention.h.

  lib = load(path)
  qz = quantize_per_head(q, k, v)                 # FA3-like per (batch, kv head) E4M3 inputs
  run = kernel_runner(lib, qz, causal, mode)      # no-argument launch, marshalled up front
  o, lse = kernel_call(lib, qz, causal, mode)
  run = end_to_end_runner(lib, q, k, v, causal)   # BF16 in: pre-pass + kernel, library defaults
  o, lse = end_to_end_call(lib, q, k, v, causal)
  pp = prepass(lib, q, k, v)                      # the library's own FP8 inputs (default options)
  o, lse = pp.run(causal, mode); q, k, v, scale, o_bias = pp.dequantized()
"""
from __future__ import annotations

import ctypes
import math
import sys
import weakref
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))

import bench_prepass as _bp  # noqa: E402
from fp8attn import _abi, ops  # noqa: E402
from fp8attn.quantize import quantize_per_head, unpermute_vt  # noqa: E402,F401

# Method name -> P precision of the kernel (include/fp8attn/fp8attn.h).
MODES = {"fp8attn": _abi.P_E4M3, "fp8attn_p_hilo": _abi.P_E4M3_HILO,
         "fp8attn_p_fp16": _abi.P_FP16}


class Lib:
    def __init__(self, path: str):
        self.path = path
        self.kernel = _abi.load(path)       # raises with the reason if the library is missing
        self.quant = _bp._bind(path)        # the pre-pass and end-to-end entry points


def load(path: str) -> Lib:
    return Lib(path)


def _stream():
    return torch.cuda.current_stream().cuda_stream


def _launch(lib: Lib, params) -> None:
    _abi.call(params, _stream(), lib.kernel)


def kernel_runner(lib: Lib, qz, causal: bool, mode: str):
    """A no-argument callable launching the kernel on qz's tensors; the arguments are marshalled
    and checked (one launch) here, outside any timing."""
    b, sq, h, d = qz.q8.shape
    out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device="cuda")
    lse = torch.empty((b, h, sq), dtype=torch.float32, device="cuda")
    params, keep = ops._make_params(qz.q8, qz.k8, qz.vt8, out, lse, qz.q_descale, qz.k_descale,
                                    qz.v_descale, None, None, None, causal, MODES[mode], None)
    _launch(lib, params)  # raises with the library's message if refused
    fwd, ref, stream = lib.kernel.fp8attn_attention_fwd, ctypes.byref(params), ctypes.c_void_p(_stream())

    def run():
        if fwd(ref, stream) != _abi.SUCCESS:
            raise _abi.Fp8AttnError(_abi.ERROR_CUDA, _abi.last_error(lib.kernel))
    run.keep = (params, keep, out, lse, qz)  # everything the launch points at
    return run


def kernel_call(lib: Lib, qz, causal: bool, mode: str):
    return ops.attention_fwd(qz.q8, qz.k8, qz.vt8, q_descale=qz.q_descale, k_descale=qz.k_descale,
                             v_descale=qz.v_descale, causal=causal, p_precision=MODES[mode],
                             lib=lib.kernel)


def _bf16(t, b, s, h):
    return _bp._tensor(t.contiguous(), b, s, h)


def end_to_end_runner(lib: Lib, q, k, v, causal: bool):
    """fp8attn_attention (pre-pass with the library's default options + kernel) on BF16 q, k, v;
    the workspace reserved here, outside any timing."""
    b, sq, h, d = q.shape
    sk, h_kv = k.shape[1], k.shape[2]
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = torch.empty((b, sq, h, d), dtype=torch.bfloat16, device="cuda")
    lse = torch.empty((b, h, sq), dtype=torch.float32, device="cuda")
    L = lib.quant
    args = _bp.AttentionArgs()
    L.fp8attn_attention_args_init(ctypes.byref(args))
    args.q, args.k, args.v = _bf16(q, b, sq, h), _bf16(k, b, sk, h_kv), _bf16(v, b, sk, h_kv)
    args.o, args.lse, args.causal = out.data_ptr(), lse.data_ptr(), int(causal)
    ws = ctypes.c_void_p(L.fp8attn_workspace_create())
    finalizer = weakref.finalize(args, L.fp8attn_workspace_destroy, ws)
    _bp._check(L, L.fp8attn_workspace_reserve(
        ws, L.fp8attn_attention_workspace_bytes(b, sq, sk, h, h_kv, d)), "workspace reserve")
    stream = ctypes.c_void_p(_stream())

    def run():
        _bp._check(L, L.fp8attn_attention(ctypes.byref(args), ws, stream), "attention")
    run()
    run.keep = (args, finalizer, q, k, v, out, lse)
    run.out = out, lse
    return run


def end_to_end_call(lib: Lib, q, k, v, causal: bool):
    run = end_to_end_runner(lib, q, k, v, causal)
    torch.cuda.synchronize()
    return run.out


class Prepass:
    """The library's pre-pass (default options) run once on BF16 q, k, v into buffers held here:
    the FP8 inputs the end-to-end call feeds its kernel, for the kernel's own error on them."""

    def __init__(self, lib: Lib, q, k, v):
        L, d = lib.quant, q.shape[3]
        b, sq, h = q.shape[:3]
        sk, h_kv = k.shape[1], k.shape[2]
        self.lib, self.shape = lib, (b, sq, sk, h, h_kv, d)
        self.q, self.k, self.v = q.contiguous(), k.contiguous(), v.contiguous()
        opts = _bp.QuantOptions()
        L.fp8attn_quant_options_init(ctypes.byref(opts))
        self.options = {f: getattr(opts, f) for f, _ in _bp.QuantOptions._fields_}

        def buf(n):
            t = torch.empty(n, dtype=torch.uint8, device="cuda")
            assert t.data_ptr() % 256 == 0
            return t
        self.cache_buf = buf(L.fp8attn_kv_cache_bytes(b, sk, h_kv, d, 0))
        self.q_buf = buf(L.fp8attn_q_quant_bytes(b, sq, h, d))
        ws = buf(L.fp8attn_quantize_kv_workspace_bytes(b, sk, h_kv))
        self.cache, self.qq = _bp.KvCache(), _bp.QQuant()
        _bp._check(L, L.fp8attn_kv_cache_init(ctypes.byref(self.cache), self.cache_buf.data_ptr(),
                                              self.cache_buf.numel(), b, sk, h_kv, d, 0), "cache init")
        _bp._check(L, L.fp8attn_q_quant_init(ctypes.byref(self.qq), self.q_buf.data_ptr(),
                                             self.q_buf.numel(), b, sq, h, d), "q init")
        tq, tk, tv = _bf16(self.q, b, sq, h), _bf16(self.k, b, sk, h_kv), _bf16(self.v, b, sk, h_kv)
        _bp._check(L, L.fp8attn_quantize_qkv(ctypes.byref(tq), ctypes.byref(tk), ctypes.byref(tv),
                                             ctypes.byref(opts), 1.0 / math.sqrt(d),
                                             ctypes.byref(self.cache), ctypes.byref(self.qq),
                                             ws.data_ptr(), ws.numel(), ctypes.c_void_p(_stream())),
                   "quantize_qkv")
        torch.cuda.synchronize()

    def _params(self, causal: bool, mode: str, out, lse):
        p = _abi.FwdParams()
        _bp._check(self.lib.quant, self.lib.quant.fp8attn_fwd_params_from_quant(
            ctypes.addressof(p), ctypes.byref(self.qq), ctypes.byref(self.cache), out.data_ptr(),
            lse.data_ptr()), "params from quant")
        p.causal, p.p_precision = int(causal), MODES[mode]
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
        nblk = -(-sk // _abi.K_SCALE_BLOCK)
        q8 = self._view(self.q_buf, qq.q, f8, (b, sq, h, d))
        qd = self._view(self.q_buf, qq.q_descale, torch.float32, (b, h, sq))
        k8 = self._view(self.cache_buf, c.k, f8, (b, sk, h_kv, d))
        kd = self._view(self.cache_buf, c.k_descale, torch.float32, (b, h_kv, nblk))
        vt8 = self._view(self.cache_buf, c.vt, f8, (b, h_kv, d, pad))
        vd = self._view(self.cache_buf, c.v_descale, torch.float32, (b, h_kv, d))
        vmean = self._view(self.cache_buf, c.v_mean, torch.float32, (b, h_kv, d))
        kd_key = kd.repeat_interleave(_abi.K_SCALE_BLOCK, dim=2)[:, :, :sk]  # (b, h_kv, sk)
        q = q8.to(dtype) * qd.to(dtype).permute(0, 2, 1)[..., None]
        k = k8.to(dtype) * kd_key.to(dtype).permute(0, 2, 1)[..., None]
        v = unpermute_vt(vt8, sk).to(dtype) * vd.to(dtype)[:, None]
        scale = qq.softmax_scale  # fp8attn_fwd_params_from_quant passes the kernel this one
        o_bias = vmean.to(dtype) if self.options["smooth_v"] else torch.zeros_like(vmean, dtype=dtype)
        return q, k, v, float(scale), o_bias


def prepass(lib: Lib, q, k, v) -> Prepass:
    return Prepass(lib, q, k, v)

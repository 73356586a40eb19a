"""numpy stand-ins for everything the harness runs on the GPU, used only by `harness.py --dry-run`
on a machine without torch or a GPU: tiny shapes, the same plan, protocols, records, report and
plots. Every figure they give is meaningless and every output says DRY RUN.

Stand-ins: E4M3 and BF16 rounding by bit arithmetic; 'fp8attn' modes and 'fa3_fp8' = exact
attention on the dequantized inputs with P rounded to E4M3 (or FP16, or hi+lo), output to BF16;
'fp8attn_accurate' = the same with FP16 P on V rounded to FP16 at V's per-head scale (Q, K as
the others'); BF16 methods = exact attention on the BF16 data; the pre-pass = K and V
mean-smoothed, Q scaled per token, V in E4M3 or (vt16) FP16; the rope pairs = Q and K rotated
(rotate_half, Llama's tables) in FP64, then the pre-pass stand-in (fp8attn_rope_quantize_pair) or
rounded to BF16 and exact attention (fa3_bf16_rope_pair). Timing is wall clock (bench/speed.py
picks it without CUDA). Every accuracy stand-in
takes the dataset's softmax scale as the GPU methods do; captures are read with
tools/capture/st_io.py (no torch) and cut to their first DRY_CAPTURE_TOKENS tokens.
"""
from __future__ import annotations

import math
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # tiny matrices: threads only contend
import numpy as np  # noqa: E402

E4M3_MAX = 448.0
DRY_CAPTURE_TOKENS = 256


def e4m3(x):
    x = np.clip(np.asarray(x, dtype=np.float64), -E4M3_MAX, E4M3_MAX)
    a = np.abs(x)
    e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    step = np.exp2(np.maximum(e, -6) - 3)
    return np.round(x / step) * step


def fp16(x):
    return np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64)


def bf16(x):
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


class Quantized:
    """As python/fp8attn/quantize.Quantized: per (batch, kv head) amax/448 scales."""

    def __init__(self, q, k, v):
        b, sq, h, d = q.shape
        h_kv = k.shape[2]
        g = h // h_kv

        def scale(x, heads_axis_groups=1):
            a = np.abs(x).reshape(x.shape[0], x.shape[1], -1, heads_axis_groups, d).max(axis=(1, 3, 4))
            return np.where(a > 0, a / E4M3_MAX, 1.0)
        self.q_descale = np.repeat(scale(q, g), g, axis=1)       # (b, h)
        self.k_descale, self.v_descale = scale(k), scale(v)      # (b, h_kv)
        self.q8 = e4m3(q / self.q_descale[:, None, :, None])
        self.k8 = e4m3(k / self.k_descale[:, None, :, None])
        self.v8 = e4m3(v / self.v_descale[:, None, :, None])

    def dequantized(self):
        return (self.q8 * self.q_descale[:, None, :, None], self.k8 * self.k_descale[:, None, :, None],
                self.v8 * self.v_descale[:, None, :, None])


class QuantizedV16:
    """As bench/fp8attn_calls.PerHeadV16: qz's Q and K, V in FP16 at qz's per-head V scale."""

    def __init__(self, qz, v):
        self.qz = qz
        self.v16 = fp16(v / qz.v_descale[:, None, :, None])

    def __getattr__(self, name):
        if name == "qz":
            raise AttributeError(name)
        return getattr(self.qz, name)

    def dequantized(self):
        q, k, _ = self.qz.dequantized()
        return q, k, self.v16 * self.qz.v_descale[:, None, :, None]


def with_fp16_v(qz, v):
    return QuantizedV16(qz, v)


class Prepass:
    """K and V mean-smoothed per (batch, kv head, channel), Q per token, E4M3; vt16: V in FP16
    (the accurate mode's cache), which only fp8attn_accurate reads, as in the library."""

    def __init__(self, q, k, v, softmax_scale=None, vt16=False):
        self.k_mean, self.v_mean = k.mean(axis=1), v.mean(axis=1)   # (b, h_kv, d)
        ks, vs = k - self.k_mean[:, None], v - self.v_mean[:, None]
        self.qs = np.where(np.abs(q).max(-1, keepdims=True) > 0, np.abs(q).max(-1, keepdims=True) / E4M3_MAX, 1)
        qz = Quantized(q, ks, vs)
        self.vt16 = bool(vt16)
        v_deq = with_fp16_v(qz, vs).dequantized()[2] if vt16 else qz.dequantized()[2]
        self.deq = (e4m3(q / self.qs) * self.qs, qz.dequantized()[1], v_deq)
        self.scale = 1 / math.sqrt(q.shape[3]) if softmax_scale is None else softmax_scale

    def dequantized(self):
        return (*self.deq, self.scale, self.v_mean)

    def run(self, causal, mode):
        if (mode in VT16_MODES) != self.vt16:
            raise ValueError(f"{mode} and this pre-pass's V^T ({'FP16' if self.vt16 else 'E4M3'}) disagree")
        o, lse = exact_attention(*self.deq, causal, softmax_scale=self.scale, p_round=P_ROUND[mode])
        return bf16(add_o_bias(o, self.v_mean)), lse


def exact_attention(q, k, v, causal, softmax_scale=None, p_round=None):
    b, sq, h, d = q.shape
    sk, h_kv = k.shape[1], k.shape[2]
    g = h // h_kv
    scale = 1 / math.sqrt(d) if softmax_scale is None else softmax_scale
    kk = np.repeat(k, g, axis=2).astype(np.float64)
    vv = np.repeat(v, g, axis=2).astype(np.float64)
    qh = q.astype(np.float64).transpose(0, 2, 1, 3)                  # (b, h, sq, d)
    s = (qh @ kk.transpose(0, 2, 3, 1)) * scale                        # (b, h, sq, sk)
    if causal:
        mask = np.arange(sk)[None, :] > np.arange(sq)[:, None] + (sk - sq)
        s = np.where(mask, -np.inf, s)
    m = s.max(-1, keepdims=True)
    vis = np.isfinite(m)
    p = np.exp(s - np.where(vis, m, 0))
    l = p.sum(-1, keepdims=True)
    if p_round is not None:
        p = p_round(p)
    o = (p @ vv.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3) / np.where(vis, l, 1).transpose(0, 2, 1, 3)
    lse = np.where(vis, m + np.log(np.where(vis, l, 1)), -np.inf)[..., 0]
    return np.where(vis.transpose(0, 2, 1, 3), o, 0), lse


P_ROUND = {"fp8attn": e4m3, "fp8attn_exact": e4m3, "fp8attn_p_hilo": lambda p: e4m3(p) + e4m3(p - e4m3(p)),
           "fp8attn_p_fp16": fp16, "fa3_fp8": e4m3, "fp8attn_accurate": fp16}
VT16_MODES = ("fp8attn_accurate",)
E4M3_V_MODES = ("fp8attn", "fp8attn_exact", "fp8attn_p_hilo", "fp8attn_p_fp16")


def error_metrics(out, ref):
    o = np.asarray(out, dtype=np.float64)
    if not np.isfinite(o).all():
        return {"rmse": None, "max_abs": None, "rel_rmse": None}
    diff = o - ref
    rmse = float(np.sqrt(np.mean(diff ** 2)))
    rms = float(np.sqrt(np.mean(np.asarray(ref, dtype=np.float64) ** 2)))
    return {"rmse": rmse, "max_abs": float(np.abs(diff).max()), "rel_rmse": rmse / rms if rms else None}


def lse_max_abs(lse, ref):
    fin = np.isfinite(ref)
    return float(np.abs(lse[fin] - ref[fin]).max()) if fin.any() else 0.0


def round_bf16(x):
    return bf16(x)


def add_o_bias(o, o_bias):
    return o + np.repeat(o_bias, o.shape[2] // o_bias.shape[1], axis=1)[:, None]


def synthetic(kind, b, s, h, h_kv, d, seed, sk=None):
    rng = np.random.default_rng(seed)

    def one(n, heads):
        x = rng.standard_normal((b, n, heads, d))
        if kind == "outlier":
            x += rng.standard_normal(x.shape) * 10 * (rng.random(x.shape) < 1e-3)
        return bf16(x)
    return one(s, h), one(sk or s, h_kv), one(sk or s, h_kv)


def make_inputs(shape, seed):
    q, k, v = synthetic("gaussian", shape.b, shape.sq, shape.h, shape.h_kv, shape.d, seed, shape.sk)
    return {"bf16": (q, k, v), "quantized": Quantized(q, k, v)}


def speed_runners(names, shape, sets, fa3, notes):
    """The same contract as methods.speed_runners; 'fa3_*' give fa3's reason when it is one."""
    out = {}
    for name in names:
        if name.startswith("fa3") and isinstance(fa3, str):
            out[name] = fa3
            continue
        inp = sets[0]
        rnd = P_ROUND.get(name)
        if name in VT16_MODES:
            args = with_fp16_v(inp["quantized"], inp["bf16"][2]).dequantized()
        elif name in P_ROUND:
            args = inp["quantized"].dequantized()
        elif name == "fp8attn_end_to_end":
            args = Prepass(*inp["bf16"]).deq
        elif name == "fp8attn_accurate_end_to_end":
            args, rnd = Prepass(*inp["bf16"], vt16=True).deq, fp16
        elif name in ("fp8attn_rope_quantize_pair", "fa3_bf16_rope_pair"):
            args, rnd = _rope_args(name, shape, *inp["bf16"])
        else:
            args = inp["bf16"]
        out[name] = (lambda a=args, r=rnd: exact_attention(*a, shape.causal, p_round=r))
    return out


def rope_tables(max_positions, base=10000.0):
    """As bench/fp8attn_calls.rope_tables: cos, sin (max_positions, 64) float32."""
    ang = np.arange(max_positions, dtype=np.float64)[:, None] * base ** (-np.arange(64) / 64)[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def rope_rotate(x, cos, sin, pos0):
    """rotate_half of x (b, s, h, 128) with table rows pos0 .. pos0 + s - 1, in FP64."""
    s = x.shape[1]
    c = cos[pos0:pos0 + s].astype(np.float64)[None, :, None, :]
    sn = sin[pos0:pos0 + s].astype(np.float64)[None, :, None, :]
    lo, hi = x[..., :64].astype(np.float64), x[..., 64:].astype(np.float64)
    return np.concatenate([lo * c - hi * sn, hi * c + lo * sn], axis=-1)


def _rope_args(name, shape, q, k, v):
    """(args, p_round) of a rope pair's stand-in on pre-rotary q, k, v."""
    from sweep import rope_positions
    n, q_pos0, k_pos0 = rope_positions(shape)
    cos, sin = rope_tables(n)
    qr, kr = rope_rotate(q, cos, sin, q_pos0), rope_rotate(k, cos, sin, k_pos0)
    if name == "fp8attn_rope_quantize_pair":  # rotated in FP32 registers, never rounded to BF16
        return Prepass(qr, kr, v).deq, e4m3
    return (bf16(qr), bf16(kr), v), None      # the BF16 rotary's output, FA3 BF16


def qkv_gemm(shape):
    x = np.ones((shape.b * shape.sq, shape.h * shape.d), dtype=np.float32)
    w = np.ones((shape.h * shape.d, (shape.h + 2 * shape.h_kv) * shape.d), dtype=np.float32)
    return lambda: x @ w


def load_captures(folder):
    """As bench/accuracy.load_captures, with numpy: (name, (q, k, v), softmax_scale) per file."""
    import importlib.util
    from pathlib import Path
    from accuracy import pack_softmax_scale
    # Loaded by path: tools/capture on sys.path would shadow bench's own modules (plots.py).
    f = Path(__file__).resolve().parents[1] / "tools" / "capture" / "st_io.py"
    spec = importlib.util.spec_from_file_location("capture_st_io", f)
    st_io = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(st_io)
    found = []
    for f in sorted(Path(folder).rglob("*.safetensors")):
        t, meta = st_io.read(str(f))
        if {"q", "k", "v"} <= t.keys() and t["q"].ndim == 4 and t["q"].shape[-1] == 128:
            qkv = tuple(st_io.bf16_to_f32(t[n][:, :DRY_CAPTURE_TOKENS]).astype(np.float64) for n in "qkv")
            found.append((f"captured:{f.stem}", qkv, pack_softmax_scale(meta)))
    return found


def accuracy_methods(fa3):
    def fp8(mode):
        return ("fp8", lambda qz, c, sc: _rounded(exact_attention(*qz.dequantized(), c, softmax_scale=sc,
                                                                  p_round=P_ROUND[mode])))

    def bf16_method(qz_free=None):
        return ("bf16", lambda q, k, v, c, sc: bf16(exact_attention(q, k, v, c, softmax_scale=sc)[0]))
    m = {mode: fp8(mode) for mode in E4M3_V_MODES}
    m["fp8attn_accurate"] = ("fp8_v16", fp8("fp8attn_accurate")[1])
    m["fa3_fp8"] = fp8("fa3_fp8")
    m["fa3_bf16"] = bf16_method()
    if isinstance(fa3, str):
        def fail(*_):
            raise RuntimeError(fa3)
        m["fa3_fp8"], m["fa3_bf16"] = ("fp8", fail), ("bf16", fail)
    m["sdpa_cudnn_bf16"] = bf16_method()
    for mode in E4M3_V_MODES:
        m[f"{mode}@prepass"] = ("prepass", lambda pp, c, mode=mode: pp.run(c, mode))
    m["fp8attn_accurate@prepass"] = ("prepass_v16", lambda pp, c: pp.run(c, "fp8attn_accurate"))
    m["fp8attn_end_to_end"] = ("e2e", lambda q, k, v, c, sc: Prepass(q, k, v, sc).run(c, "fp8attn")[0])
    m["fp8attn_accurate_end_to_end"] = ("e2e_v16", lambda q, k, v, c, sc: Prepass(
        q, k, v, sc, vt16=True).run(c, "fp8attn_accurate")[0])
    return m


def _rounded(o_lse):
    return bf16(o_lse[0]), o_lse[1]

"""The methods the harness times and measures, all on the same data:
  fp8attn, fp8attn_exact, fp8attn_p_hilo,   the kernel per P precision on E4M3 V^T (exact:
  fp8attn_p_fp16                            FA3 FP8's softmax numerics)
                                            (bench/fp8attn_calls.py)
  fp8attn_accurate                          FP16 P on FP16 V^T (V / v_descale in FP16, the
                                            per-head Q, K of the others)
  fp8attn_end_to_end                        BF16 in: the library's pre-pass + kernel
  fp8attn_accurate_end_to_end               the same with FP16 P (the pre-pass writes FP16 V^T)
  fa3_fp8, fa3_bf16                         FlashAttention-3 (PyPI fa3-fwd==0.0.3, module
                                            fa3_fwd_interface), E4M3 on fp8attn's own per
                                            (batch, kv head) quantized inputs, and BF16
  sdpa_cudnn_bf16 (sdpa_flash_bf16)         PyTorch SDPA in BF16
  fp8attn_rope_quantize_pair                BF16 pre-rotary Q, K, V + cos/sin tables in:
                                            fp8attn_attention_rope (rope + quantize pre-pass,
                                            kernel; one call chain)
  fa3_bf16_rope_pair                        the same inputs: fp8attn_rope_bf16 on Q, then on K
                                            (a copy-speed BF16 rotary, in place on copies
                                            made outside the timing), then FA3 BF16
The rope pairs use Llama's tables (base 10000) over max(sq, sk) positions, the queries at the
last sq of them (sweep.rope_positions: a prefill chunk is bottom-right aligned, as the mask).
A method that cannot be built (FA3 not importable, a refused shape) is returned as the reason
(a string) in its place, so that the results record the failure instead of dropping a column.
"""
from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SDPA_METHODS = {"sdpa_cudnn_bf16": SDPBackend.CUDNN_ATTENTION,
                "sdpa_flash_bf16": SDPBackend.FLASH_ATTENTION}
FA3_PIN = "fa3-fwd==0.0.3"
E2E_ACCURATE = "fp8attn_accurate_end_to_end"


def load_fa3():
    """The fa3_fwd_interface module, or the reason it cannot be had (a string)."""
    try:
        import fa3_fwd_interface
        return fa3_fwd_interface
    except Exception as e:  # ImportError, or the extension failing to load against this torch
        return f"FA3 ({FA3_PIN}) not importable: {type(e).__name__}: {str(e).splitlines()[0][:200]}"


def _fa3_fp8(fa3, qz, causal, scale=None):
    """scale: the softmax scale (None: FA3's 1/sqrt(d)), as for every method here."""
    group = qz.q8.shape[2] // qz.k8.shape[2]
    q_descale = qz.q_descale[:, ::group].contiguous()  # (b, h_kv): Q's scale per kv head
    return lambda: fa3.flash_attn_func(qz.q8, qz.k8, qz.v8, softmax_scale=scale, causal=causal,
                                       q_descale=q_descale, k_descale=qz.k_descale,
                                       v_descale=qz.v_descale)


def _fa3_bf16(fa3, q, k, v, causal, scale=None):
    return lambda: fa3.flash_attn_func(q, k, v, softmax_scale=scale, causal=causal)


def _fa3_bf16_rope_pair(fc, lib, fa3, q, k, v, causal, rope):
    """The rotary a BF16 model runs anyway (fp8attn_rope_bf16 on Q, then on K, in place on
    copies of the pre-rotary tensors: repeated calls rotate further, for timing only), then FA3
    BF16 on what it wrote. Each part is checked once here."""
    cos, sin, q_pos0, k_pos0 = rope
    qr, kr = q.clone(), k.clone()
    rq, rk = fc.rope_bf16_runner(lib, qr, cos, sin, q_pos0), fc.rope_bf16_runner(lib, kr, cos, sin, k_pos0)
    attend = _fa3_bf16(fa3, qr, kr, v, causal)
    attend()

    def run():
        rq()
        rk()
        return attend()
    run.keep = (rq, rk, qr, kr)
    return run


def _out(x):
    return x[0] if isinstance(x, tuple) else x


def _sdpa_call(backend, q, k, v, causal, gqa, scale=None, mask=None):
    """q, k, v in SDPA's own (b, h, s, d) layout; returns O as (b, s, h, d). mask: an explicit
    attn_mask (then is_causal is not passed)."""
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and mask is None,
                                              scale=scale, enable_gqa=gqa).transpose(1, 2)


def bottom_right_masks(sq, sk, device):
    """FA3's causal mask for sq != sk (query i sees keys j <= i + sk - sq) as SDPA attn_masks, the
    forms a backend may take, each made only when asked for: boolean (True = seen), then
    additive BF16 (0 / -inf)."""
    i = torch.arange(sq, device=device)[:, None]
    j = torch.arange(sk, device=device)[None, :]
    seen = (j <= i + (sk - sq))[None, None]
    yield "boolean", seen
    yield "additive BF16", torch.zeros(seen.shape, dtype=torch.bfloat16, device=device).masked_fill(
        ~seen, float("-inf"))


def _sdpa_runner(backend, q, k, v, causal, notes: list, tag: str, scale=None):
    """SDPA on `backend` on (b, s, h, d) data, given to SDPA as contiguous (b, h, s, d) copies
    made here, outside any timing: its native layout, its best case. If the backend refuses
    native GQA, K and V are expanded to h heads (same FLOPs; noted). SDPA's is_causal is top-left
    aligned: for causal sq != sk it gets FA3's bottom-right mask as an explicit attn_mask instead
    (built here, outside any timing; the first form the backend takes, noted). cuDNN measured
    slower with it than without any mask on the same shape: an unfair yardstick there."""
    gqa = q.shape[2] != k.shape[2]
    q, k, v = (x.transpose(1, 2).contiguous() for x in (q, k, v))
    bottom_right = causal and q.shape[2] != k.shape[2]
    errors = []
    for expand in (False, True) if gqa else (False,):
        if expand:
            group = q.shape[1] // k.shape[1]
            kk, vv = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        else:
            kk, vv = k, v
        g = gqa and not expand
        masks = bottom_right_masks(q.shape[2], k.shape[2], q.device) if bottom_right else [("", None)]
        for form, mask in masks:
            try:
                _sdpa_call(backend, q, kk, vv, causal, g, scale, mask)
            except RuntimeError as e:
                errors.append(f"{form or 'is_causal' if causal else 'no mask'}"
                              f"{', K V expanded' if expand else ''}: {str(e).splitlines()[0][:120]}")
                continue
            if expand:
                notes.append(f"{tag}: {backend.name} refused enable_gqa ({errors[0]}); "
                             "K and V expanded to h heads")
            if mask is not None:
                notes.append(f"{tag}: causal sq {q.shape[2]} != sk {k.shape[2]}: FA3's bottom-right "
                             f"mask given to SDPA as an explicit {form} attn_mask")
            return lambda: _sdpa_call(backend, q, kk, vv, causal, g, scale, mask)
    raise RuntimeError(f"{backend.name} refused every form tried: " + "; ".join(errors))


def rotating(fns):
    """One callable running fns in turn, one per call (several input sets against L2)."""
    if len(fns) == 1:
        return fns[0]
    it = itertools.cycle(fns)

    def run():
        return next(it)()
    run.keep = fns
    return run


def speed_runners(names, shape, sets: list, lib, fa3, notes: list) -> dict:
    """name -> a no-argument callable over the input sets (each {'bf16': (q, k, v),
    'quantized': qz}), or the reason it could not be built."""
    import fp8attn_calls as fc
    from sweep import rope_positions
    c = shape.causal
    tables = {}

    def rope():  # (cos, sin, q_pos0, k_pos0), made once per shape, shared by the input sets
        if not tables:
            max_pos, q_pos0, k_pos0 = rope_positions(shape)
            tables["t"] = (*fc.rope_tables(max_pos), q_pos0, k_pos0)
        return tables["t"]

    def build(name, inp):
        q, k, v = inp["bf16"]
        qz = inp["quantized"]
        if name in fc.MODES:
            return fc.kernel_runner(lib, qz, c, name)
        if name == fc.ACCURATE:
            return fc.accurate_runner(lib, fc.with_fp16_v(qz, v), c)
        if name == "fp8attn_end_to_end":
            return fc.end_to_end_runner(lib, q, k, v, c)
        if name == E2E_ACCURATE:
            return fc.end_to_end_runner(lib, q, k, v, c, mode=fc.ACCURATE)
        if name in ("fa3_fp8", "fa3_bf16"):
            if isinstance(fa3, str):
                raise RuntimeError(fa3)
            fn = _fa3_fp8(fa3, qz, c) if name == "fa3_fp8" else _fa3_bf16(fa3, q, k, v, c)
            fn()  # refused shapes raise here, not in the timing
            return fn
        if name in SDPA_METHODS:
            return _sdpa_runner(SDPA_METHODS[name], q, k, v, c, notes, f"speed {shape.label()}")
        if name == "fp8attn_rope_quantize_pair":
            cos, sin, q_pos0, k_pos0 = rope()
            return fc.rope_pair_runner(lib, q, k, v, c, cos, sin, q_pos0, k_pos0)
        if name == "fa3_bf16_rope_pair":
            if isinstance(fa3, str):
                raise RuntimeError(fa3)
            return _fa3_bf16_rope_pair(fc, lib, fa3, q, k, v, c, rope())
        raise KeyError(name)

    out = {}
    for name in names:
        try:
            out[name] = rotating([build(name, inp) for inp in sets])
        except Exception as e:
            out[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
    torch.cuda.synchronize()
    return out


def qkv_gemm(shape):
    """The model's QKV projection before this attention call: tokens x hidden @ hidden x
    (h + 2 h_kv) * d in BF16 (hidden = h * d), into a preallocated output."""
    tokens, hidden = shape.b * shape.sq, shape.h * shape.d
    x = torch.randn((tokens, hidden), device="cuda", dtype=torch.bfloat16)
    w = torch.randn((hidden, (shape.h + 2 * shape.h_kv) * shape.d), device="cuda",
                    dtype=torch.bfloat16)
    y = torch.empty((tokens, w.shape[1]), device="cuda", dtype=torch.bfloat16)

    def run():
        torch.mm(x, w, out=y)
    run.keep = (x, w, y)
    return run


def accuracy_methods(lib, notes: list, fa3=None) -> dict:
    """name -> (kind, fn) as bench.accuracy.run_dataset takes them, each given the dataset's
    softmax scale `s` (None: 1/sqrt(d)):
    'fp8' fn(qz, causal, s) -> (o, lse or None) on per-(batch, kv head) quantized inputs;
    'fp8_v16' the same on those inputs with V in FP16 (fp8attn_calls.with_fp16_v);
    'prepass' fn(pp, causal) -> (o, lse) on the library's pre-pass outputs (made with s);
    'prepass_v16' the same on the pre-pass's outputs with an FP16 V^T cache;
    'bf16' fn(q, k, v, causal, s) -> o on the BF16 data; 'e2e' the same, through the pre-pass
    ('e2e_v16': with FP16 P, whose pre-pass writes FP16 V^T)."""
    methods = {}
    if lib is not None:
        import fp8attn_calls as fc
        for mode in fc.MODES:
            methods[mode] = ("fp8", lambda qz, c, s, m=mode: fc.kernel_call(lib, qz, c, m, s))
        methods[fc.ACCURATE] = ("fp8_v16", lambda qv, c, s: fc.accurate_call(lib, qv, c, s))
    if fa3 is not None:
        methods["fa3_fp8"] = ("fp8", (lambda qz, c, s: (_out(_fa3_fp8(fa3, qz, c, s)()), None))
                              if not isinstance(fa3, str) else _raiser(fa3))
        methods["fa3_bf16"] = ("bf16", (lambda q, k, v, c, s: _out(_fa3_bf16(fa3, q, k, v, c, s)()))
                               if not isinstance(fa3, str) else _raiser(fa3))
    for name, be in SDPA_METHODS.items():
        methods[name] = ("bf16", lambda q, k, v, c, s, be=be, name=name: _sdpa_runner(
            be, q, k, v, c, notes, f"accuracy {name}", s)())
    if lib is not None:
        for mode in fc.MODES:
            methods[f"{mode}@prepass"] = ("prepass", lambda pp, c, m=mode: pp.run(c, m))
        methods[f"{fc.ACCURATE}@prepass"] = ("prepass_v16", lambda pp, c: pp.run(c, fc.ACCURATE))
        methods["fp8attn_end_to_end"] = ("e2e", lambda q, k, v, c, s: fc.end_to_end_call(
            lib, q, k, v, c, s)[0])
        methods[E2E_ACCURATE] = ("e2e_v16", lambda q, k, v, c, s: fc.end_to_end_call(
            lib, q, k, v, c, s, mode=fc.ACCURATE)[0])
    return methods


def _raiser(reason: str):
    def fn(*_):
        raise RuntimeError(reason)
    return fn

"""Accuracy part of the harness: exact references, the three error references, datasets.

References (docs: ../shared/docs/NUMERICS.md):
  end_to_end   method output vs exact attention (FP64) on the BF16 data as given.
  kernel_only  method output vs exact attention (FP64) on the inputs the method actually read
               (fp8attn and fa3_fp8: the dequantized E4M3 inputs; BF16 methods: the BF16 data).
  floor        what rounding alone costs: BF16(exact attention on the method's inputs) vs the
               end_to_end reference, i.e. the error of a perfect kernel fed the same rounded
               inputs and writing BF16 output (for BF16 methods: the output rounding alone).
Inputs (the record's `inputs`): per_head = E4M3 with per (batch, kv head) amax/448 scales, the
same tensors for fp8attn and fa3_fp8; per_head_v16 = the same Q and K with V in FP16 at V's
per-head scale (fp8attn_accurate); prepass = the library's own pre-pass outputs (methods named
<mode>@prepass; fp8attn_end_to_end is the library's whole BF16-in call); prepass_v16 = the same
with the KV cache's V^T in FP16 (fp8attn_accurate@prepass, fp8attn_accurate_end_to_end); bf16 =
the data itself.
Errors are over the whole output tensor: rmse, max_abs, rel_rmse = rmse / rms(reference).
A non-finite output gives null figures (and never a pass).
Softmax scale: a dataset may carry its own (a capture pack's `softmax_scale` metadata: a head-dim-64
model zero-padded to 128 keeps 1/8, not 1/sqrt(128)); every method and every reference then runs
with it, and each record says which (`softmax_scale`; null = the default 1/sqrt(d)).
"""
from __future__ import annotations

import math
from pathlib import Path

try:
    import torch
except ImportError:  # --dry-run without torch: bench/dry_backend.py stands in for these functions
    torch = None

LOG2E = 1.4426950408889634


def exact_attention(q, k, v, causal: bool, softmax_scale: float | None = None,
                    dtype=None, query_chunk: int = 4096):
    """Exact attention in `dtype`: q (b, sq, h, d), k/v (b, sk, h_kv, d). GQA: query head i
    uses kv head i // (h // h_kv). Causal is bottom-right aligned (query i sees keys
    j <= i + sk - sq), as FlashAttention. Returns O (b, sq, h, d) and LSE (b, h, sq); rows with
    no visible key get O = 0 and LSE = -inf."""
    dtype = torch.float64 if dtype is None else dtype
    b, sq, h, d = q.shape
    sk, h_kv = k.shape[1], k.shape[2]
    group = h // h_kv
    scale = 1.0 / math.sqrt(d) if softmax_scale is None else softmax_scale
    out = torch.zeros((b, sq, h, d), dtype=dtype, device=q.device)
    lse = torch.full((b, h, sq), float("-inf"), dtype=dtype, device=q.device)
    keys = torch.arange(sk, device=q.device)
    for bi in range(b):
        for hi in range(h):
            kh = k[bi, :, hi // group].to(dtype)
            vh = v[bi, :, hi // group].to(dtype)
            for r0 in range(0, sq, query_chunk):
                r1 = min(sq, r0 + query_chunk)
                s = (q[bi, r0:r1, hi].to(dtype) @ kh.T) * scale
                if causal:
                    rows = torch.arange(r0, r1, device=q.device)[:, None]
                    s.masked_fill_(keys[None, :] > rows + (sk - sq), float("-inf"))
                m = s.amax(dim=1, keepdim=True)
                visible = torch.isfinite(m)
                m = torch.where(visible, m, torch.zeros_like(m))
                p = torch.exp(s - m)
                l = p.sum(dim=1, keepdim=True)
                o = (p @ vh) / torch.where(visible, l, torch.ones_like(l))
                out[bi, r0:r1, hi] = torch.where(visible, o, torch.zeros_like(o))
                row_lse = (m + torch.log(l)).squeeze(1)
                lse[bi, hi, r0:r1] = torch.where(visible.squeeze(1), row_lse, float("-inf"))
    return out, lse


def error_metrics(out: torch.Tensor, ref: torch.Tensor) -> dict:
    """rmse, max_abs, rel_rmse over the whole tensor, in FP64; null figures if `out` holds a
    non-finite value (so a NaN can never look like a small error)."""
    o = out.to(torch.float64)
    if not bool(torch.isfinite(o).all()):
        return {"rmse": None, "max_abs": None, "rel_rmse": None}
    diff = o - ref.to(torch.float64)
    rmse = float(diff.square().mean().sqrt())
    ref_rms = float(ref.to(torch.float64).square().mean().sqrt())
    return {"rmse": rmse, "max_abs": float(diff.abs().max()),
            "rel_rmse": rmse / ref_rms if ref_rms > 0 else None}


def lse_max_abs(lse: torch.Tensor, ref_lse: torch.Tensor) -> float | None:
    """max |LSE - ref| over rows with a visible key; -inf must match -inf exactly."""
    a, r = lse.to(torch.float64), ref_lse.to(torch.float64)
    finite = torch.isfinite(r)
    if bool((torch.isfinite(a) != finite).any()) or bool(torch.isnan(a).any()):
        return None
    return float((a[finite] - r[finite]).abs().max()) if bool(finite.any()) else 0.0


def synthetic(kind: str, b: int, s: int, h: int, h_kv: int, d: int, seed: int, device,
              sk: int | None = None):
    """BF16 q (b, s, h, d), k, v (b, sk or s, h_kv, d): 'gaussian' N(0,1), or 'outlier', the FA3
    paper's test: N(0,1) + N(0,100) x Bernoulli(0.001)."""
    g = torch.Generator(device=device).manual_seed(seed)

    def one(n, heads):
        x = torch.randn((b, n, heads, d), generator=g, device=device, dtype=torch.float32)
        if kind == "outlier":
            spikes = torch.randn(x.shape, generator=g, device=device) * 10.0
            x += spikes * (torch.rand(x.shape, generator=g, device=device) < 1e-3)
        elif kind != "gaussian":
            raise ValueError(f"unknown synthetic dataset {kind!r}")
        return x.to(torch.bfloat16)

    return one(s, h), one(sk or s, h_kv), one(sk or s, h_kv)


def pack_softmax_scale(metadata: dict | None) -> float | None:
    """A capture file's own softmax scale (tools/capture/pack.py writes one for a padded
    head-dim-64 model), or None: the default 1/sqrt(d)."""
    raw = (metadata or {}).get("softmax_scale")
    if raw is None:
        return None
    try:
        scale = float(raw)
    except ValueError:
        scale = float("nan")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"softmax_scale {raw!r} in a capture's metadata is not a finite positive "
                         "number (re-pack with tools/capture/pack.py)")
    return scale


def load_captures(folder: Path, device) -> list[tuple[str, tuple, float | None]]:
    """Every *.safetensors under `folder` with BF16 tensors q, k, v shaped (b, s, h, 128), as
    (name, (q, k, v), softmax_scale from its metadata or None)."""
    from safetensors import safe_open
    from safetensors.torch import load_file
    found = []
    for f in sorted(Path(folder).rglob("*.safetensors")):
        with safe_open(str(f), "pt") as h:
            meta = h.metadata()
        t = load_file(str(f), device=str(device))
        if {"q", "k", "v"} <= t.keys() and t["q"].dim() == 4 and t["q"].shape[-1] == 128:
            try:
                scale = pack_softmax_scale(meta)
            except ValueError as e:
                raise ValueError(f"{f}: {e}") from None
            found.append((f"captured:{f.stem}", (t["q"], t["k"], t["v"]), scale))
    return found


def round_bf16(x):
    return x.to(torch.bfloat16)


def add_o_bias(o, o_bias):
    """o (b, s, h, d) + o_bias (b, h_kv, d) of each query head's kv head."""
    group = o.shape[2] // o_bias.shape[1]
    return o + o_bias.repeat_interleave(group, dim=1)[:, None]


# kind -> the record's `inputs`
INPUTS = {"fp8": "per_head", "fp8_v16": "per_head_v16", "prepass": "prepass",
          "prepass_v16": "prepass_v16", "e2e": "prepass", "e2e_v16": "prepass_v16"}


def run_dataset(name: str, qkv, causal: bool, methods: dict, quantize, log, notes: list,
                prepass=None, ops=None, softmax_scale: float | None = None,
                quantize_v16=None) -> tuple[list, list]:
    """Errors of every method on one dataset. `methods` maps a method name to (kind, fn):
    'fp8' fn(qz, causal, scale) -> (o, lse or None) on qz = quantize(q, k, v); 'fp8_v16' the
    same on quantize_v16(qz, v) (qz's Q and K, V in FP16); 'prepass' fn(pp, causal) -> (o, lse)
    on pp = prepass(q, k, v, scale), which holds the scale it was made with; 'prepass_v16' the
    same on prepass(q, k, v, scale, vt16=True); 'bf16', 'e2e' and 'e2e_v16' fn(q, k, v, causal,
    scale) -> o ('e2e*' kernel-only against the matching pre-pass's inputs). `scale` is `softmax_scale`
    (None: 1/sqrt(d)), the same for every method and every reference. `ops` holds
    exact_attention, error_metrics, lse_max_abs, round_bf16, add_o_bias (this module by default;
    the dry run's numpy stand-ins otherwise). Returns (accuracy records, lse records)."""
    ops = ops or _THIS
    q, k, v = qkv
    scale = softmax_scale
    ref_o, _ = ops.exact_attention(q, k, v, causal, softmax_scale=scale)
    cache: dict = {}

    def per_head():
        if "per_head" not in cache:
            qz = quantize(q, k, v)
            cache["per_head"] = (qz, *ops.exact_attention(*qz.dequantized(), causal, softmax_scale=scale))
        return cache["per_head"]

    def per_head_v16():
        if "per_head_v16" not in cache:
            if quantize_v16 is None:
                raise RuntimeError("no quantize_v16 given: the FP16-V per-head inputs cannot be made")
            qv = quantize_v16(per_head()[0], v)
            cache["per_head_v16"] = (qv, *ops.exact_attention(*qv.dequantized(), causal, softmax_scale=scale))
        return cache["per_head_v16"]

    def own(vt16: bool = False):
        key = "prepass_v16" if vt16 else "prepass"
        if key not in cache:
            pp = prepass(q, k, v, scale, vt16=True) if vt16 else prepass(q, k, v, scale)
            dq, dk, dv, pp_scale, o_bias = pp.dequantized()
            want = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
            if not math.isclose(pp_scale, want, rel_tol=1e-6):  # FP32 in the library
                raise RuntimeError(f"the pre-pass kept softmax_scale {pp_scale}, not the dataset's {want}")
            o, lse = ops.exact_attention(dq, dk, dv, causal, softmax_scale=pp_scale)
            cache[key] = (pp, ops.add_o_bias(o, o_bias))
        return cache[key]

    records, lse_records = [], []

    def add(method, inputs, reference, out, ref):
        rec = {"dataset": name, "causal": causal, "method": method, "reference": reference,
               "inputs": inputs, "softmax_scale": scale, **ops.error_metrics(out, ref)}
        records.append(rec)
        log(f"  {name:<24} causal={int(causal)} {method:<24} {reference:<11} "
            f"rmse={_fmt(rec['rmse'])} max_abs={_fmt(rec['max_abs'])} rel_rmse={_fmt(rec['rel_rmse'])}")

    for method, (kind, fn) in methods.items():
        inputs = INPUTS.get(kind, "bf16")
        try:
            if kind in ("fp8", "fp8_v16"):
                qz, deq_o, deq_lse = per_head() if kind == "fp8" else per_head_v16()
                o, lse = fn(qz, causal, scale)
                add(method, inputs, "end_to_end", o, ref_o)
                add(method, inputs, "kernel_only", o, deq_o)
                add(method, inputs, "floor", ops.round_bf16(deq_o), ref_o)
                if lse is not None:
                    lse_records.append({"dataset": name, "causal": causal, "method": method,
                                        "reference": "kernel_only", "softmax_scale": scale,
                                        "lse_max_abs": ops.lse_max_abs(lse, deq_lse)})
            elif kind in ("prepass", "prepass_v16"):
                pp, pp_o = own(kind == "prepass_v16")
                o, _ = fn(pp, causal)
                add(method, inputs, "end_to_end", o, ref_o)
                add(method, inputs, "kernel_only", o, pp_o)
                add(method, inputs, "floor", ops.round_bf16(pp_o), ref_o)
            elif kind in ("e2e", "e2e_v16"):
                o = fn(q, k, v, causal, scale)
                add(method, inputs, "end_to_end", o, ref_o)
                add(method, inputs, "kernel_only", o, own(kind == "e2e_v16")[1])
            else:
                o = fn(q, k, v, causal, scale)
                add(method, inputs, "end_to_end", o, ref_o)
                add(method, inputs, "kernel_only", o, ref_o)
                add(method, inputs, "floor", ops.round_bf16(ref_o), ref_o)
        except Exception as e:  # one failing method must not hide the others' figures
            msg = f"accuracy {name} causal={int(causal)} {method}: FAILED {type(e).__name__}: {e}"
            log("  " + msg)
            notes.append(msg)
            for reference in ("end_to_end", "kernel_only"):
                if not any(r["method"] == method and r["reference"] == reference for r in records):
                    records.append({"dataset": name, "causal": causal, "method": method,
                                    "reference": reference, "inputs": inputs,
                                    "softmax_scale": scale, "rmse": None,
                                    "max_abs": None, "rel_rmse": None, "error": msg})
    return records, lse_records


def _fmt(x) -> str:
    return "null" if x is None else f"{x:.3e}"


import sys as _sys  # noqa: E402

_THIS = _sys.modules[__name__]

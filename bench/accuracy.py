"""Accuracy part of the harness: exact references, the three error references, datasets.

References (docs: ../shared/docs/NUMERICS.md):
  end_to_end   method output vs exact attention (FP64) on the BF16 data as given.
  kernel_only  method output vs exact attention (FP64) on the inputs the method actually read
               (fp8attn: the dequantized E4M3 inputs; sdpa bf16: the BF16 data itself).
  floor        what rounding alone costs: BF16(exact attention on the method's inputs) vs the
               end_to_end reference, i.e. the error of a perfect kernel fed the same rounded
               inputs and writing BF16 output (for sdpa bf16: the output rounding alone).
Errors are over the whole output tensor: rmse, max_abs, rel_rmse = rmse / rms(reference).
A non-finite output gives null figures (and never a pass).
"""
from __future__ import annotations

import math
from pathlib import Path

import torch

LOG2E = 1.4426950408889634


def exact_attention(q, k, v, causal: bool, softmax_scale: float | None = None,
                    dtype=torch.float64, query_chunk: int = 4096):
    """Exact attention in `dtype`: q (b, sq, h, d), k/v (b, sk, h_kv, d). GQA: query head i
    uses kv head i // (h // h_kv). Causal is bottom-right aligned (query i sees keys
    j <= i + sk - sq), as FlashAttention. Returns O (b, sq, h, d) and LSE (b, h, sq); rows with
    no visible key get O = 0 and LSE = -inf."""
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


def synthetic(kind: str, b: int, s: int, h: int, h_kv: int, d: int, seed: int, device):
    """BF16 q (b, s, h, d), k, v (b, s, h_kv, d): 'gaussian' N(0,1), or 'outlier', the FA3 paper's
    test: N(0,1) + N(0,100) x Bernoulli(0.001)."""
    g = torch.Generator(device=device).manual_seed(seed)

    def one(heads):
        x = torch.randn((b, s, heads, d), generator=g, device=device, dtype=torch.float32)
        if kind == "outlier":
            spikes = torch.randn(x.shape, generator=g, device=device) * 10.0
            x += spikes * (torch.rand(x.shape, generator=g, device=device) < 1e-3)
        elif kind != "gaussian":
            raise ValueError(f"unknown synthetic dataset {kind!r}")
        return x.to(torch.bfloat16)

    return one(h), one(h_kv), one(h_kv)


def load_captures(folder: Path, device) -> list[tuple[str, tuple]]:
    """Every *.safetensors under `folder` with BF16 tensors q, k, v shaped (b, s, h, d)."""
    from safetensors.torch import load_file
    found = []
    for f in sorted(Path(folder).rglob("*.safetensors")):
        t = load_file(str(f), device=str(device))
        if {"q", "k", "v"} <= t.keys() and t["q"].dim() == 4 and t["q"].shape[-1] == 128:
            found.append((f"captured:{f.stem}", (t["q"], t["k"], t["v"])))
    return found


def run_dataset(name: str, qkv, causal: bool, methods: dict, quantize, log,
                notes: list) -> tuple[list, list]:
    """Errors of every method on one dataset. `methods` maps a method name to
    (kind, fn): kind 'fp8' gets fn(quantized, causal) -> (o, lse); kind 'bf16' gets
    fn(q, k, v, causal) -> o. Returns (accuracy records, lse records)."""
    q, k, v = qkv
    ref_o, _ = exact_attention(q, k, v, causal)
    qz = quantize(q, k, v)
    deq_o, deq_lse = exact_attention(*qz.dequantized(), causal)
    records, lse_records = [], []

    def add(method, reference, out, ref):
        rec = {"dataset": name, "causal": causal, "method": method, "reference": reference,
               **error_metrics(out, ref)}
        records.append(rec)
        log(f"  {name:<24} causal={int(causal)} {method:<18} {reference:<11} "
            f"rmse={_fmt(rec['rmse'])} max_abs={_fmt(rec['max_abs'])} rel_rmse={_fmt(rec['rel_rmse'])}")

    for method, (kind, fn) in methods.items():
        try:
            if kind == "fp8":
                o, lse = fn(qz, causal)
                add(method, "end_to_end", o, ref_o)
                add(method, "kernel_only", o, deq_o)
                add(method, "floor", deq_o.to(torch.bfloat16), ref_o)
                lse_records.append({"dataset": name, "causal": causal, "method": method,
                                    "reference": "kernel_only", "lse_max_abs": lse_max_abs(lse, deq_lse)})
            else:
                o = fn(q, k, v, causal)
                add(method, "end_to_end", o, ref_o)
                add(method, "kernel_only", o, ref_o)
                add(method, "floor", ref_o.to(torch.bfloat16), ref_o)
        except Exception as e:  # one failing method must not hide the others' figures
            msg = f"accuracy {name} causal={int(causal)} {method}: FAILED {type(e).__name__}: {e}"
            log("  " + msg)
            notes.append(msg)
            records.append({"dataset": name, "causal": causal, "method": method,
                            "reference": "end_to_end", "rmse": None, "max_abs": None,
                            "rel_rmse": None})
    return records, lse_records


def _fmt(x) -> str:
    return "null" if x is None else f"{x:.3e}"

"""The public API on an sm_90 GPU: accuracy against FP64 with tolerances derived from the E4M3
floor (the inputs rounded per head to E4M3, then exact attention), and agreements that must be
bitwise (the KV-cache flow against the one-call flow, FP16 against BF16 inputs, the FA3 entry
against the kernel entry)."""
from __future__ import annotations

import math

import pytest

from gpu_common import exact_attention, has_sm90, needs_sm90, randn_qkv, rel_rmse

pytestmark = needs_sm90

if has_sm90():
    import torch

    import fp8attn

SHAPES = [  # (b, sq, sk, h, h_kv): GQA 1, 6 (Qwen2-1.5B's 12/2) and 8; ragged lengths
    (2, 256, 256, 4, 4), (1, 777, 777, 12, 2), (1, 200, 1000, 8, 1)]


def floor_error(q, k, v, causal):
    """(rel RMSE of O, max abs error of LSE) of exact attention on the inputs rounded to E4M3
    with per-head scales, against exact attention on the inputs."""
    qz = fp8attn.quantize_per_head(q, k, v)
    ref, ref_lse = exact_attention(q, k, v, causal)
    o, lse = exact_attention(*qz.dequantized(), causal)
    return rel_rmse(o, ref), float((lse - ref_lse).abs().max())


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("mode", ["e4m3", "e4m3_exact", "fp16", "e4m3_hilo"])
def test_attention_error_is_at_most_the_e4m3_floor(shape, causal, mode):
    b, sq, sk, h, h_kv = shape
    q, k, v = randn_qkv(b, sq, sk, h, h_kv, seed_offset=hash(shape) % 1000)
    out, lse = fp8attn.attention(q, k, v, causal=causal, mode=mode)
    ref_o, ref_lse = exact_attention(q, k, v, causal)
    err = rel_rmse(out, ref_o)
    floor, floor_lse = floor_error(q, k, v, causal)
    # The pre-pass (smoothing, Hadamard, per-token Q scales) rounds the inputs no worse than
    # per-head scales do; E4M3 P adds its own rounding on top (README: kernel-only error).
    bound = floor * (1.5 if mode in ("e4m3", "e4m3_exact") else 1.2)
    assert err <= bound, f"rel RMSE {err:.4g} > {bound:.4g} (E4M3 floor {floor:.4g})"
    assert torch.isfinite(lse).all()
    lse_err = float((lse.double() - ref_lse).abs().max())
    # E4M3 P: the LSE is that of the rounded P, within log1p(2^-4) of the exact one
    # (docs/numerics.md; e4m3_exact sums the FP32 p, as the others); on top, the inputs'
    # rounding, bounded by 3x the floor's LSE error.
    lse_bound = (math.log1p(2 ** -4) if mode == "e4m3" else 0.0) + 3 * floor_lse + 1e-3
    assert lse_err <= lse_bound, f"LSE max abs error {lse_err:.4g} > {lse_bound:.4g}"


def test_kv_cache_flow_is_bitwise_the_one_call_flow():
    q, k, v = randn_qkv(2, 300, 500, 8, 2, seed_offset=11)
    for causal in (False, True):
        o1, l1 = fp8attn.attention(q, k, v, causal=causal)
        cache = fp8attn.quantize_kv(k, v)
        o2, l2 = fp8attn.attention(q, cache, causal=causal)
        assert torch.equal(o1.view(torch.int16), o2.view(torch.int16))
        assert torch.equal(l1, l2)
    # Options travel with the cache.
    cache = fp8attn.quantize_kv(k, v, quant={"hadamard_qk": 0})
    o3, _ = fp8attn.attention(q, cache)
    o4, _ = fp8attn.attention(q, k, v, quant={"hadamard_qk": 0})
    assert torch.equal(o3.view(torch.int16), o4.view(torch.int16))


def test_fp16_inputs_give_the_bf16_result():
    # BF16 values that FP16 holds exactly: |x| >= 2^-14 (FP16's normal range; BF16's 8
    # significant bits fit in FP16's 11), or zero.
    q, k, v = (torch.where(t.abs() < 2 ** -13, torch.zeros_like(t), t)
               for t in randn_qkv(1, 128, 192, 4, 2, seed_offset=12))
    assert all(torch.equal(t.half().to(torch.bfloat16), t) for t in (q, k, v))
    o_bf, l_bf = fp8attn.attention(q, k, v)
    o_h, l_h = fp8attn.attention(q.half(), k.half(), v.half())
    assert o_h.dtype == torch.float16
    # The kernel's output is BF16 either way; FP16 callers get it converted (BF16 -> FP16 is
    # not exact below FP16's normal range, so compare with the same conversion, not a round trip).
    assert torch.equal(o_h.view(torch.int16), o_bf.to(torch.float16).view(torch.int16))
    assert torch.equal(l_h, l_bf)


def test_fa3_entry_is_the_kernel_entry():
    q, k, v = randn_qkv(2, 200, 333, 6, 2, seed_offset=13)
    qz = fp8attn.quantize_per_head(q, k, v)
    group = 3
    o1, l1 = fp8attn.attention_fp8(qz.q8, qz.k8, qz.v8, q_descale=qz.q_descale[:, ::group],
                                   k_descale=qz.k_descale, v_descale=qz.v_descale, causal=True)
    o2, l2 = fp8attn.attention_fwd(qz.q8, qz.k8, qz.vt8, q_descale=qz.q_descale,
                                   k_descale=qz.k_descale, v_descale=qz.v_descale, causal=True)
    assert torch.equal(o1.view(torch.int16), o2.view(torch.int16)) and torch.equal(l1, l2)
    ref, _ = exact_attention(*qz.dequantized(), causal=True)
    assert rel_rmse(o1, ref) < 0.1


def test_kernel_entry_overwrites_poisoned_outputs():
    q, k, v = randn_qkv(1, 160, 160, 4, 4, seed_offset=14)
    qz = fp8attn.quantize_per_head(q, k, v)
    out = torch.full((1, 160, 4, 128), float("nan"), dtype=torch.bfloat16, device="cuda")
    lse = torch.full((1, 4, 160), float("nan"), device="cuda")
    fp8attn.attention_fwd(qz.q8, qz.k8, qz.vt8, q_descale=qz.q_descale, k_descale=qz.k_descale,
                          v_descale=qz.v_descale, out=out, lse=lse)
    assert torch.isfinite(out).all() and torch.isfinite(lse).all()


def test_library_errors_arrive_as_fp8attn_errors():
    # A stride the kernel cannot take (not a multiple of 16 elements): the library's message.
    q8 = torch.zeros((1, 64, 2, 136), dtype=torch.float8_e4m3fn, device="cuda")[..., :128]
    k8 = torch.zeros((1, 64, 2, 128), dtype=torch.float8_e4m3fn, device="cuda")
    vt = torch.zeros((1, 2, 128, 64), dtype=torch.float8_e4m3fn, device="cuda")
    with pytest.raises(fp8attn.Fp8AttnError, match="q_stride_h.*multiple of 16") as e:
        fp8attn.attention_fwd(q8, k8, vt)
    assert e.value.status == fp8attn.load().constant("FP8ATTN_ERROR_INVALID_ARGUMENT")


def test_empty_batch_and_queries():
    q, k, v = randn_qkv(1, 64, 64, 2, 2, seed_offset=15)
    out, lse = fp8attn.attention(q[:, :0], k, v)
    assert out.shape == (1, 0, 2, 128) and lse.shape == (1, 2, 0)


@pytest.mark.skipif(not has_sm90() or torch.cuda.device_count() < 2, reason="needs 2 GPUs")
def test_device_guard_runs_on_the_tensors_device():
    q, k, v = randn_qkv(1, 256, 256, 4, 2, seed_offset=16)
    o0, l0 = fp8attn.attention(q, k, v, causal=True)
    with torch.cuda.device(0):  # current device 0, tensors on device 1
        o1, l1 = fp8attn.attention(q.to("cuda:1"), k.to("cuda:1"), v.to("cuda:1"), causal=True)
    assert o1.device == torch.device("cuda:1")
    assert torch.equal(o0.view(torch.int16), o1.cpu().cuda().view(torch.int16))

"""The harness's door to the accurate mode (bench/fp8attn_calls.py: FP16 P on an FP16 V^T) on an
sm_90 GPU, small shapes, fresh inputs (gpu_common.SEED):
  - the per-head FP16-V inputs (with_fp16_v): Q and K are the E4M3 mode's, V / v_descale in FP16,
    natural key order, zero padding;
  - accurate_runner / accurate_call: kernel-only error within 2x the BF16 output rounding of the
    exact result on exactly those inputs, and no worse than the converter kernel's (the same FP16
    P on E4M3 V); a poisoned output is fully rewritten, bit for bit;
  - the pre-pass with an FP16 V^T cache: the same Q, K and o_bias as the E4M3 cache, V nearer the
    smoothed V, the kernel on it within the same bound, and each cache refusing the other's mode;
  - the BF16-in call with FP16 P gives bit for bit the kernel on that pre-pass's cache;
  - methods.speed_runners and methods.accuracy_methods build and run the new methods.
  FP8ATTN_LIB=$PWD/.carry/libfp8attn.so python3 -m pytest -q tests/python/test_gpu_harness_accurate.py
"""
from __future__ import annotations

import math
import os
import sys

import pytest

from conftest import ROOT
from gpu_common import SEED, has_sm90, needs_sm90, randn_qkv

pytestmark = needs_sm90

if has_sm90():
    import torch

    sys.path.insert(0, str(ROOT / "bench"))
    import accuracy  # noqa: E402
    import fp8attn_calls as fc  # noqa: E402
    import methods  # noqa: E402
    from sweep import Shape  # noqa: E402

SHAPES = [(1, 320, 320, 4, 2), (1, 200, 1000, 8, 1)]  # (b, sq, sk, h, h_kv); ragged, GQA


@pytest.fixture(scope="module")
def lib():
    import fp8attn
    return fc.load(os.environ.get("FP8ATTN_LIB") or str(fp8attn.capi.package_library_path()))


def rel(x, ref) -> float:
    x, ref = x.double(), ref.double()
    assert bool(torch.isfinite(x).all()), "non-finite values"
    return float((x - ref).pow(2).mean().sqrt() / ref.pow(2).mean().sqrt())


def bf16_floor(ref) -> float:
    """What rounding the exact result to BF16 alone costs (the kernel writes BF16)."""
    return rel(ref.to(torch.bfloat16), ref)


def inputs(shape, off=0):
    b, sq, sk, h, h_kv = shape
    q, k, v = randn_qkv(b, sq, sk, h, h_kv, seed_offset=off + sum(shape))
    return q, k, v, fc.quantize_per_head(q, k, v)


@pytest.mark.parametrize("shape", SHAPES)
def test_fp16_v_inputs(shape):
    q, k, v, qz = inputs(shape)
    qv = fc.with_fp16_v(qz, v)
    b, sk, h_kv, d = v.shape
    assert qv.vt16.dtype == torch.float16 and qv.vt16.shape[:3] == (b, h_kv, d)
    assert qv.vt16.shape[3] % 32 == 0 and qv.vt16.shape[3] - sk < 32
    assert bool((qv.vt16[..., sk:] == 0).all()), "padding must be zeros"
    for a, c in zip(qv.dequantized()[:2], qz.dequantized()[:2]):
        assert torch.equal(a, c), "Q and K must be the E4M3 mode's"
    v16, v8, vd = qv.dequantized()[2], qz.dequantized()[2], v.double()
    # FP16 at V's per-head scale (|V / v_descale| <= 448 < 512): within 2^-11 * 512 * descale.
    bound = 2.0 ** -11 * 512 * qz.v_descale.double()[:, None, :, None]
    assert bool(((v16 - vd).abs() <= bound).all())
    assert rel(v16, vd) < rel(v8, vd) / 8


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
def test_accurate_kernel_error(lib, shape, causal):
    q, k, v, qz = inputs(shape, 1)
    qv = fc.with_fp16_v(qz, v)
    o, lse = fc.accurate_call(lib, qv, causal)
    ref, ref_lse = accuracy.exact_attention(*qv.dequantized(), causal)
    err, floor = rel(o, ref), bf16_floor(ref)
    conv, _ = fc.kernel_call(lib, qz, causal, "fp8attn_p_fp16")
    conv_err = rel(conv, accuracy.exact_attention(*qz.dequantized(), causal)[0])
    print(f"SEED {SEED} {shape} causal={causal}: accurate {err:.3e}, converter {conv_err:.3e}, "
          f"BF16 floor {floor:.3e}")
    assert err <= 2 * floor, (err, floor)
    assert err <= 1.5 * conv_err, (err, conv_err)
    assert bool(torch.isfinite(lse).all()) and float((lse.double() - ref_lse).abs().max()) < 1e-3
    # A poisoned output is rewritten in full, bit for bit (the runner the speed part times).
    run = fc.accurate_runner(lib, qv, causal)
    torch.cuda.synchronize()
    o1, lse1 = (t.clone() for t in run.out)
    for t in run.out:
        t.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    assert torch.equal(run.out[0], o1) and torch.equal(run.out[1], lse1)
    assert torch.equal(o1, o)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
def test_prepass_with_fp16_vt(lib, shape, causal):
    q, k, v, _ = inputs(shape, 2)
    pp8, pp16 = fc.prepass(lib, q, k, v), fc.prepass(lib, q, k, v, vt16=True)
    d8, d16 = pp8.dequantized(), pp16.dequantized()
    assert torch.equal(d8[0], d16[0]) and torch.equal(d8[1], d16[1]), "Q, K as the E4M3 cache's"
    assert d8[3] == d16[3] and torch.equal(d8[4], d16[4]), "softmax scale and o_bias"
    smoothed = v.double() - d16[4][:, None]  # V minus its channel mean, as the pre-pass writes it
    assert rel(d16[2], smoothed) < rel(d8[2], smoothed) / 8
    o, _ = pp16.run(causal, fc.ACCURATE)
    ref = accuracy.add_o_bias(accuracy.exact_attention(*d16[:3], causal, softmax_scale=d16[3])[0], d16[4])
    err, floor = rel(o, ref), bf16_floor(ref)
    print(f"SEED {SEED} {shape} causal={causal}: accurate@prepass {err:.3e}, BF16 floor {floor:.3e}")
    assert err <= 2 * floor, (err, floor)
    with pytest.raises(ValueError):
        pp8.run(causal, fc.ACCURATE)
    with pytest.raises(ValueError):
        pp16.run(causal, "fp8attn")
    # The BF16-in call with FP16 P is this pre-pass and this kernel, bit for bit.
    e2e, _ = fc.end_to_end_call(lib, q, k, v, causal, mode=fc.ACCURATE)
    assert torch.equal(e2e, o)
    e2e8, _ = fc.end_to_end_call(lib, q, k, v, causal)
    assert torch.equal(e2e8, pp8.run(causal, "fp8attn")[0]), "control: the default mode's flow"


def test_harness_methods_build_and_run(lib):
    b, sq, sk, h, h_kv = SHAPES[0]
    q, k, v, qz = inputs(SHAPES[0], 3)
    notes = []
    shape = Shape(b, sq, sk, h, h_kv, 128, True)
    runners = methods.speed_runners([fc.ACCURATE, methods.E2E_ACCURATE], shape,
                                    [{"bf16": (q, k, v), "quantized": qz}], lib, "no FA3 here", notes)
    for name, fn in runners.items():
        assert callable(fn), (name, fn)
        fn()
    torch.cuda.synchronize()
    want, _ = fc.accurate_call(lib, fc.with_fp16_v(qz, v), True)
    assert torch.equal(runners[fc.ACCURATE].out[0], want)
    ms = methods.accuracy_methods(lib, notes, fa3="no FA3 here")
    picked = {n: ms[n] for n in (fc.ACCURATE, f"{fc.ACCURATE}@prepass", methods.E2E_ACCURATE, "fp8attn")}
    recs, _ = accuracy.run_dataset("gaussian", (q, k, v), True, picked, fc.quantize_per_head,
                                   lambda m: None, notes, prepass=lambda *a, **kw: fc.prepass(lib, *a, **kw),
                                   quantize_v16=fc.with_fp16_v)
    assert not notes, notes
    by = {(r["method"], r["reference"]): r for r in recs}
    for m, inputs_ in ((fc.ACCURATE, "per_head_v16"), (f"{fc.ACCURATE}@prepass", "prepass_v16"),
                       (methods.E2E_ACCURATE, "prepass_v16")):
        ko, e2e = by[(m, "kernel_only")], by[(m, "end_to_end")]
        assert ko["inputs"] == inputs_ and ko["rmse"] is not None and math.isfinite(ko["rmse"])
        assert ko["rmse"] < e2e["rmse"] / 3, (m, ko["rmse"], e2e["rmse"])
    # FP16 P on FP16 V: well below the E4M3-P kernel's own error on the same Q, K.
    assert by[(fc.ACCURATE, "kernel_only")]["rmse"] < by[("fp8attn", "kernel_only")]["rmse"] / 3

"""The harness's accuracy path honours a dataset's own softmax scale (a head-dim-64 model zero-padded
to 128 keeps 1/8, not 1/sqrt(128)): in the FP64 references, in every method, in the pre-pass.

Without torch or a GPU: bench/accuracy.run_dataset on the dry run's numpy stand-ins (the same
records the GPU run writes), bench/harness.py --dry-run on a small capture pack, and the pack
metadata parser. With torch (CPU is enough): every GPU method of bench/methods.py hands the scale
on to the call it wraps (FA3, SDPA, the fp8attn kernel, the end-to-end call), seen through spies.
Every dataset is drawn fresh (seeded per run from the clock), and each test also shows that the
data tells the scales apart, so that a dropped scale cannot pass unseen."""
from __future__ import annotations

import json
import math
import subprocess
import sys
import time
import types

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import accuracy  # noqa: E402  (torch optional)
import dry_backend as dry  # noqa: E402

SCALE = 0.125  # 1/sqrt(64): the padded model's own
DEFAULT = 1 / math.sqrt(128)


def padded_dataset(seed: int, s: int = 96, h: int = 4, h_kv: int = 2):
    """BF16-valued q, k, v (1, s, h, 128) whose channels 64..127 are zero; q and k with std 2 so
    that 1/8 and 1/sqrt(128) give clearly different attention."""
    rng = np.random.default_rng(seed)

    def one(heads, std):
        x = np.zeros((1, s, heads, 128))
        x[..., :64] = rng.standard_normal((1, s, heads, 64)) * std
        return dry.bf16(x).astype(np.float64)
    return one(h, 2.0), one(h_kv, 2.0), one(h_kv, 1.0)


@pytest.fixture
def seed():
    return int(time.time_ns() % 2**31)


def _by(records, method, reference="end_to_end"):
    (r,) = [r for r in records if r["method"] == method and r["reference"] == reference]
    return r


def test_every_method_and_reference_runs_at_the_dataset_scale(seed):
    qkv = padded_dataset(seed)
    truth = dry.exact_attention(*qkv, True, softmax_scale=SCALE)[0]  # computed here, not by the harness
    methods = dry.accuracy_methods(dry)
    # Probes: one that is exact attention at 1/8 (its error measures the harness's reference), one
    # that drops the scale (what a method ignoring the metadata would do).
    methods["probe_exact_1/8"] = ("bf16", lambda q, k, v, c, s: truth)
    methods["probe_drops_scale"] = ("bf16", lambda q, k, v, c, s: dry.bf16(
        dry.exact_attention(q, k, v, c)[0]))
    # Each method's twin that drops the scale: the honest one must be much nearer the reference.
    for name, (kind, fn) in dry.accuracy_methods(dry).items():
        if kind in ("fp8", "fp8_v16"):
            methods[name + "#dropped"] = (kind, lambda qz, c, s, fn=fn: fn(qz, c, None))
        elif kind in ("bf16", "e2e", "e2e_v16"):
            methods[name + "#dropped"] = (kind, lambda q, k, v, c, s, fn=fn: fn(q, k, v, c, None))
    notes = []
    recs, lse = accuracy.run_dataset("captured:padded", qkv, True, methods, dry.Quantized, lambda m: None,
                                     notes, prepass=dry.Prepass, ops=dry, softmax_scale=SCALE,
                                     quantize_v16=dry.with_fp16_v)
    assert not notes, notes
    assert all(r["softmax_scale"] == SCALE for r in recs + lse)
    # The end-to-end reference is exact attention at 1/8.
    assert _by(recs, "probe_exact_1/8")["rmse"] <= 1e-12
    dropped = _by(recs, "probe_drops_scale")["rel_rmse"]
    assert dropped > 0.05, "the data must tell 1/8 from 1/sqrt(128)"
    for name in dry.accuracy_methods(dry):
        for ref in ("end_to_end", "kernel_only"):
            r = _by(recs, name, ref)
            assert r["rel_rmse"] is not None and math.isfinite(r["rel_rmse"]), (name, ref, r)
            if not name.endswith("@prepass"):
                twin = _by(recs, name + "#dropped", ref)["rel_rmse"]
                assert r["rel_rmse"] < twin / 2, (name, r["rel_rmse"], twin)


def test_a_prepass_that_drops_the_scale_is_a_failed_record(seed):
    class DropsScale(dry.Prepass):
        def __init__(self, q, k, v, softmax_scale=None):
            super().__init__(q, k, v)  # the scale not passed on: 1/sqrt(128) inside
    methods = {n: m for n, m in dry.accuracy_methods(dry).items() if n.endswith("@prepass")}
    notes = []
    recs, _ = accuracy.run_dataset("captured:padded", padded_dataset(seed), False, methods,
                                   dry.Quantized, lambda m: None, notes, prepass=DropsScale,
                                   ops=dry, softmax_scale=SCALE)
    assert recs and all(r["rmse"] is None for r in recs)
    assert any("softmax_scale" in n for n in notes), notes


def test_synthetic_sets_keep_the_default(seed):
    q, k, v = padded_dataset(seed)
    methods = {"fa3_bf16": dry.accuracy_methods(dry)["fa3_bf16"],
               "probe_default": ("bf16", lambda q, k, v, c, s: dry.exact_attention(
                   q, k, v, c, softmax_scale=DEFAULT)[0])}
    recs, _ = accuracy.run_dataset("gaussian", (q, k, v), False, methods, dry.Quantized,
                                   lambda m: None, [], prepass=dry.Prepass, ops=dry)
    assert all(r["softmax_scale"] is None for r in recs)
    assert _by(recs, "probe_default")["rmse"] <= 1e-12


def test_pack_metadata_scale():
    assert accuracy.pack_softmax_scale({"softmax_scale": "0.125"}) == 0.125
    assert accuracy.pack_softmax_scale({}) is None and accuracy.pack_softmax_scale(None) is None
    for bad in ("np.float64(0.125)", "0", "-0.125", "nan", "inf"):  # the first: numpy 2's repr
        with pytest.raises(ValueError):
            accuracy.pack_softmax_scale({"softmax_scale": bad})


def test_harness_dry_run_reads_the_pack_scale(tmp_path, seed):
    sys.path.insert(0, str(ROOT / "tools" / "capture"))
    import st_io
    pack = tmp_path / "pack"
    pack.mkdir()
    q, k, v = padded_dataset(seed, s=64)
    codes = {n: ("BF16", st_io.f32_to_bf16(t)) for n, t in zip("qkv", (q, k, v))}
    st_io.write(str(pack / "padded-layer00.safetensors"), codes, {"softmax_scale": repr(SCALE)})
    st_io.write(str(pack / "plain-layer00.safetensors"), codes, {})
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "harness.py"), "--dry-run", "--only",
                        "accuracy", "--captures", str(pack), "--out", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (res,) = [json.loads(f.read_text()) for f in out.glob("*.json")]
    got = {}
    for rec in res["accuracy"]:
        got.setdefault(rec["dataset"], set()).add(rec["softmax_scale"])
        assert rec["rmse"] is not None, rec
    assert got["captured:padded-layer00"] == {SCALE}
    assert got["captured:plain-layer00"] == {None} and got["gaussian"] == {None}
    # Same data, two scales: the exact outputs differ, so the references must have differed.
    a = dry.exact_attention(q, k, v, False, softmax_scale=SCALE)[0]
    b = dry.exact_attention(q, k, v, False)[0]
    assert np.sqrt(np.mean((a - b) ** 2)) > 0.05 * np.sqrt(np.mean(a ** 2))


def test_gpu_methods_pass_the_scale_on(monkeypatch, seed):
    torch = pytest.importorskip("torch")
    try:
        import fp8attn_calls as fc
        import methods as gm
    except Exception as e:  # the package's import needs pieces a bare machine may lack
        pytest.skip(f"bench/methods.py does not import here: {type(e).__name__}: {e}")
    seen = []
    out = torch.zeros((1, 8, 2, 128), dtype=torch.bfloat16)

    def record(tag, scale):
        seen.append((tag, scale))
        return out

    fa3 = types.SimpleNamespace(flash_attn_func=lambda *a, softmax_scale=None, **kw: record(
        "fa3_fp8" if a[0].dtype != torch.bfloat16 else "fa3_bf16", softmax_scale))
    monkeypatch.setattr(gm, "_sdpa_call", lambda be, q, k, v, c, gqa, scale=None: record(be.name, scale))
    monkeypatch.setattr(fc, "kernel_call", lambda lib, qz, c, m, s=None: (record(m, s), None))
    monkeypatch.setattr(fc, "end_to_end_call", lambda lib, q, k, v, c, s=None, mode="fp8attn": (
        record(f"e2e:{mode}", s), None))
    monkeypatch.setattr(fc, "accurate_call", lambda lib, qv, c, s=None: (record("accurate", s), None))
    monkeypatch.setattr(fc, "MODES", {"fp8attn": "FP8ATTN_P_E4M3"})
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn((1, 8, 2, 128), generator=g).to(torch.bfloat16) for _ in range(3))
    qz = types.SimpleNamespace(q8=q.to(torch.float8_e4m3fn), k8=k.to(torch.float8_e4m3fn),
                               v8=v.to(torch.float8_e4m3fn), q_descale=torch.ones((1, 2)),
                               k_descale=torch.ones((1, 2)), v_descale=torch.ones((1, 2)))
    ms = gm.accuracy_methods(object(), [], fa3)
    for name, (kind, fn) in ms.items():
        if kind in ("fp8", "fp8_v16"):
            fn(qz, False, SCALE)
        elif kind in ("bf16", "e2e", "e2e_v16"):
            fn(q, k, v, False, SCALE)
    tags = {t for t, _ in seen}
    assert {"fa3_fp8", "fa3_bf16", "fp8attn", "e2e:fp8attn", "e2e:fp8attn_accurate", "accurate",
            "CUDNN_ATTENTION", "FLASH_ATTENTION"} <= tags, tags
    assert all(s == SCALE for _, s in seen), seen

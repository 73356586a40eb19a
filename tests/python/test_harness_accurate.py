"""The harness's accurate mode (fp8attn_accurate: FP16 P on an FP16 V^T) without torch or a GPU:
bench/harness.py --dry-run must produce its speed pairings (head to head and in context with FA3
BF16 at every row, with FA3 FP8 at the seed and short rows, its BF16-in call with FA3 BF16 at the seed) and its accuracy records
(per-head Q, K with FP16 V; the pre-pass with an FP16 V^T cache; the BF16-in call) against the
right references, and the report and tools/readme_status.py must render them.

The references are checked with probes fed to bench/accuracy.run_dataset: a probe that is exact
attention on the FP16-V inputs must have a zero kernel-only error, and the same data rounded to
E4M3 instead must not (so a reference taken from the E4M3 inputs cannot pass). Data are drawn
fresh each run (seeded from the clock, printed)."""
from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ROOT, dry_harness

sys.path.insert(0, str(ROOT / "bench"))
import accuracy  # noqa: E402  (torch optional)
import dry_backend as dry  # noqa: E402
import report  # noqa: E402
import sweep  # noqa: E402

ACC, E2E = "fp8attn_accurate", "fp8attn_accurate_end_to_end"


@pytest.fixture
def seed():
    s = int(time.time_ns() % 2**31)
    print(f"seed {s}")
    return s


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("dry")
    return dry_harness(out)[0], out


def _speed(res, method, peer, row, causal, protocol="head_to_head"):
    b, sq, sk, h, h_kv = row
    got = [r for r in res["speed"] if r["method"] == method and r["protocol"] == f"{protocol}:{peer}"
           and (r["b"], r["sq"], r["sk"], r["h"], r["h_kv"], r["causal"]) == (b, sq, sk, h, h_kv, causal)]
    assert len(got) == 1, (method, peer, row, causal, len(got))
    return got[0]


def test_dry_run_pairs_the_accurate_mode(dry_run):
    res, _ = dry_run
    seed_row, short = sweep.DRY_ROWS[0], sweep.DRY_SHORT
    for causal in (False, True):
        for row in (seed_row, short):
            for peer in ("fa3_fp8", "fa3_bf16"):
                mine, theirs = _speed(res, ACC, peer, row, causal), _speed(res, peer, ACC, row, causal)
                assert mine["tflops_median"] and theirs["tflops_median"], (row, causal, peer)
        e2e = _speed(res, E2E, "fa3_bf16", seed_row, causal)
        assert e2e["tflops_median"] and _speed(res, "fa3_bf16", E2E, seed_row, causal)["tflops_median"]
        # The converter kernel (FP16 P on E4M3 V^T) keeps its own pairing.
        assert _speed(res, "fp8attn_p_fp16", "fa3_fp8", seed_row, causal)["tflops_median"]
    for row in sweep.DRY_ROWS:
        for causal in (False, True):
            for protocol in ("head_to_head", "in_context"):  # in context too: the power cap
                mine = _speed(res, ACC, "fa3_bf16", row, causal, protocol)
                theirs = _speed(res, "fa3_bf16", ACC, row, causal, protocol)
                assert mine["tflops_median"] and theirs["tflops_median"], (row, causal, protocol)
    with_fp8 = {(r["b"], r["sq"], r["sk"], r["h"], r["h_kv"]) for r in res["speed"]
                if r["method"] == ACC and r["protocol"] == "head_to_head:fa3_fp8"}
    assert with_fp8 == {tuple(seed_row), tuple(short)}, with_fp8


def test_dry_run_accuracy_records_of_the_accurate_mode(dry_run):
    res, _ = dry_run
    acc = res["accuracy"]
    cases = {(r["dataset"], r["causal"]) for r in acc}
    assert {("gaussian", False), ("gaussian", True), ("outlier", False), ("outlier", True)} <= cases
    want = {ACC: ("per_head_v16", {"end_to_end", "kernel_only", "floor"}),
            f"{ACC}@prepass": ("prepass_v16", {"end_to_end", "kernel_only", "floor"}),
            E2E: ("prepass_v16", {"end_to_end", "kernel_only"})}
    for ds, causal in cases:
        for method, (inputs, refs) in want.items():
            got = [r for r in acc if (r["dataset"], r["causal"], r["method"]) == (ds, causal, method)]
            assert {r["reference"] for r in got} == refs, (ds, causal, method)
            for r in got:
                assert r["inputs"] == inputs, r
                assert r["rmse"] is not None and math.isfinite(r["rmse"]) and r["max_abs"] is not None, r
            ix = {r["reference"]: r for r in got}
            # A kernel-only error far below the end-to-end one: the reference is the method's own inputs.
            assert ix["kernel_only"]["rmse"] < ix["end_to_end"]["rmse"] / 3, (ds, causal, method)


def test_report_and_readme_render_the_accurate_mode(dry_run, tmp_path):
    res, out = dry_run
    (md,) = out.glob("*.md")
    text = md.read_text()
    assert f"| {ACC} |" in text and f"| {E2E} |" in text
    assert f"- {ACC}, seed shape, causal: / FA3 FP8 = " in text
    assert f"- {ACC}@prepass kernel-only RMSE and max <= 2 x fa3_bf16" in text
    assert "accurate kernel-only, own inputs" in text
    assert list(out.glob("*-tradeoff.png"))
    readme = tmp_path / "README.md"
    readme.write_text("# x\n")
    (js,) = out.glob("*.json")
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_status.py"), str(js), "--readme",
                        str(readme)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    status = readme.read_text()
    rows = [line for line in status.splitlines() if line.startswith(f"| {ACC} |")]
    assert len(rows) == 2 * len(sweep.DRY_ROWS), rows  # every row with FA3 BF16, both masks
    # FA3 FP8's columns filled at the seed and short rows, FA3 BF16's everywhere.
    labels = {report._label(tuple(r) + (128,)) for r in (sweep.DRY_ROWS[0], sweep.DRY_SHORT)}
    for line in rows:
        cells = [c.strip() for c in line.split("|")[1:-1]]
        # [mode, row, causal] + (TFLOP/s, peer, ratio, in context) for FA3 FP8, then FA3 BF16.
        assert all(c not in ("-", "failed") for c in cells[7:11]), line
        assert (cells[1] in labels) == all(c not in ("-", "failed") for c in cells[3:7]), line
    assert f"| {E2E} |" in status and "accurate kernel-only, own inputs" in status


def test_modes_table_takes_each_ratio_within_its_pairing():
    seed_row = (1, 128, 128, 4, 4, 128)

    def rec(method, peer, tf, causal=False, protocol="head_to_head"):
        b, sq, sk, h, h_kv, d = seed_row
        return {"method": method, "protocol": f"{protocol}:{peer}", "tflops_median": tf, "b": b,
                "sq": sq, "sk": sk, "h": h, "h_kv": h_kv, "d": d, "causal": causal}
    speed = [rec(ACC, "fa3_fp8", 600.0), rec("fa3_fp8", ACC, 900.0),
             rec(ACC, "fa3_bf16", 650.0), rec("fa3_bf16", ACC, 700.0),
             rec(ACC, "fa3_bf16", 640.0, protocol="in_context"),
             rec("fa3_bf16", ACC, 800.0, protocol="in_context")]
    (line,) = [x for x in report.modes_table(speed, seed_row) if x.startswith(f"| {ACC} |")]
    cells = [c.strip() for c in line.split("|")[1:-1]]
    # Each ratio from its own pairing; the in-context one from the in-context pair only.
    assert cells[3:] == ["600.0", "900.0", "0.667", "-", "650.0", "700.0", "0.929", "0.800"], cells
    verdict = report.accurate_verdict_lines(speed, seed_row)
    assert "misses issue 14's bound 0.95" in verdict[0]
    assert "NOT met" in verdict[2] and "no reason to exist" in verdict[2]


def _dataset(seed, s=80, h=4, h_kv=2):
    q, k, v = dry.synthetic("outlier", 1, s, h, h_kv, 128, seed)
    return q.astype(np.float64), k.astype(np.float64), v.astype(np.float64)


def test_references_are_the_fp16_v_inputs(seed):
    """Probes: exact attention on what each accurate kind reads has zero kernel-only error; the
    same probe on E4M3 V (what a wrong reference would be) does not."""
    qkv = _dataset(seed)
    scale = 1 / math.sqrt(128)

    def exact_on(inputs):
        return dry.exact_attention(*inputs, True, softmax_scale=scale)

    def own16(q, k, v):
        pp = dry.Prepass(q, k, v, scale, vt16=True)
        return dry.add_o_bias(exact_on(pp.deq)[0], pp.v_mean)
    methods = {
        "probe_v16": ("fp8_v16", lambda qv, c, s: exact_on(qv.dequantized())),
        "probe_v16_on_e4m3": ("fp8_v16", lambda qv, c, s: exact_on(qv.qz.dequantized())),
        "probe_prepass_v16": ("prepass_v16", lambda pp, c: (dry.add_o_bias(exact_on(pp.deq)[0], pp.v_mean),
                                                            None) if pp.vt16 else None),
        "probe_e2e_v16": ("e2e_v16", lambda q, k, v, c, s: own16(q, k, v)),
    }
    notes = []
    recs, _ = accuracy.run_dataset("outlier", qkv, True, methods, dry.Quantized, lambda m: None, notes,
                                   prepass=dry.Prepass, ops=dry, quantize_v16=dry.with_fp16_v)
    assert not notes, notes

    def ko(method):
        (r,) = [r for r in recs if r["method"] == method and r["reference"] == "kernel_only"]
        return r
    for m in ("probe_v16", "probe_prepass_v16", "probe_e2e_v16"):
        assert ko(m)["rmse"] <= 1e-12, (m, ko(m))
    wrong = ko("probe_v16_on_e4m3")
    assert wrong["rel_rmse"] > 1e-3, ("E4M3 V and FP16 V must be told apart", wrong)
    assert ko("probe_v16")["inputs"] == "per_head_v16" and ko("probe_prepass_v16")["inputs"] == "prepass_v16"


def test_fp16_v_inputs_share_q_and_k(seed):
    q, k, v = _dataset(seed)
    qz = dry.Quantized(q, k, v)
    qv = dry.with_fp16_v(qz, v)
    for a, b in zip(qv.dequantized()[:2], qz.dequantized()[:2]):
        assert np.array_equal(a, b)
    v16, v8 = qv.dequantized()[2], qz.dequantized()[2]
    # FP16 at V's per-head scale: within half an FP16 ulp of V, far nearer than E4M3.
    assert np.abs(v16 - v).max() <= np.abs(v).max() * 2.0 ** -11
    assert np.sqrt(np.mean((v16 - v) ** 2)) < np.sqrt(np.mean((v8 - v) ** 2)) / 8


def test_prepass_refuses_a_mode_of_the_other_v_dtype(seed):
    q, k, v = _dataset(seed, s=32)
    with pytest.raises(ValueError):
        dry.Prepass(q, k, v).run(False, ACC)
    with pytest.raises(ValueError):
        dry.Prepass(q, k, v, vt16=True).run(False, "fp8attn")


def test_run_dataset_without_quantize_v16_fails_the_record(seed):
    methods = {ACC: dry.accuracy_methods(dry)[ACC]}
    notes = []
    recs, _ = accuracy.run_dataset("gaussian", _dataset(seed, s=32), False, methods, dry.Quantized,
                                   lambda m: None, notes, prepass=dry.Prepass, ops=dry)
    assert recs and all(r["rmse"] is None for r in recs) and notes

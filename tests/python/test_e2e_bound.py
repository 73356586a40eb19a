"""tools/eval/e2e_bound.py's comparison with FA3 BF16 (no torch): the useful bytes of a pre-pass
agree with what the pre-pass records count (up to the scales), and each bound follows from the
paired records: a kernel as fast as FA3 BF16 with a free pre-pass is 1.0, the pre-pass can only
lower it, and a missing pairing is said, not invented."""
from __future__ import annotations

import argparse
import json
import random
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools" / "eval"))
import e2e_bound  # noqa: E402


def test_useful_bytes_match_the_prepass_records():
    # The pre-pass records of the 2026-11-30 run count the same bytes plus the scales and
    # statistics (within 2%).
    recs = json.loads((ROOT / "results" / "2026-11-30-h200-189e22736c91.json").read_text())["prepass"]
    assert recs
    for r in recs:
        mine = e2e_bound.useful_bytes(r["b"], r["s"], r["s"], r["h"], r["h_kv"])
        assert mine <= r["bytes_useful"] <= 1.02 * mine, (r["b"], r["s"], r["h"], r["h_kv"])


def _results(kernel_ms, fa3_ms, e2e_ms, copy_gbps, key=(2, 4096, 4096, 16, 4, True)):
    b, sq, sk, h, h_kv, causal = key
    flops = 4 * b * h * sq * sk * 128 / (2 if causal else 1)
    def rec(method, ms, peer):
        return {"method": method, "b": b, "sq": sq, "sk": sk, "h": h, "h_kv": h_kv, "causal": causal,
                "ms_median": ms, "tflops_median": flops / (ms * 1e-3) / 1e12,
                "protocol": f"head_to_head:{peer}"}
    return {"speed": [rec("fp8attn", kernel_ms, "fa3_bf16"), rec("fa3_bf16", fa3_ms, "fp8attn"),
                      rec("fp8attn_end_to_end", e2e_ms, "fa3_bf16"),
                      rec("fa3_bf16", fa3_ms * 1.01, "fp8attn_end_to_end")],
            "prepass": [{"copy_gbps": copy_gbps}]}


def _row(d):
    lines = e2e_bound.vs_fa3_bf16(d, argparse.Namespace(copy_from=None, results="x.json"))
    rows = [l for l in lines if l and not l.startswith("#")]
    assert len(rows) == 1, lines
    return [float(x.split()[0]) for x in rows[0].split("|")[1:]]


def test_bounds_follow_from_the_records():
    rng = random.Random()
    for _ in range(20):
        # The file prints three decimals: every check allows that rounding.
        k = rng.uniform(0.5, 3.0)
        f, e = k * rng.uniform(0.6, 1.6), k + rng.uniform(0.05, 1.0)
        ratio, bound, best, pair, pre = _row(_results(k, f, e, rng.uniform(1e3, 5e3)))
        assert ratio == pytest.approx(f / k, abs=6e-4)
        assert 0 < bound < 1
        assert best == pytest.approx(ratio * bound, abs=2e-3)
        assert best < ratio
        assert pre == pytest.approx(e - k, abs=6e-4)
    # As the copy bandwidth grows the pre-pass's cost vanishes: the bound tends to the kernel's
    # own ratio, and the rotary pair to it as well.
    ratio, bound, best, pair, _ = _row(_results(1.0, 1.0, 1.5, 1e12))
    assert bound == pytest.approx(1.0, abs=1e-6) and best == pytest.approx(1.0, abs=1e-3)
    assert pair == pytest.approx(1.0, abs=1e-3)


def test_missing_pairing_is_said():
    d = _results(1.0, 1.0, 1.5, 4000.0)
    d["speed"] = [r for r in d["speed"] if r["method"] != "fa3_bf16"]
    lines = e2e_bound.vs_fa3_bf16(d, argparse.Namespace(copy_from=None, results="x.json"))
    assert any("no fp8attn / fa3_bf16 pairing" in l for l in lines)

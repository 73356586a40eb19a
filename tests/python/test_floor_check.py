"""tools/wgmma_accum/floor_check.py (numpy, no torch) and compare.py's model cache stamp: the E4M3
cast it rebuilds is torch's (round to nearest even, subnormals kept) on every code and every
midpoint; the two descale conventions differ where torch's reciprocal does; a model cache of
another emulation is refused."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools" / "wgmma_accum"))
import compare  # noqa: E402
import floor_check  # noqa: E402


def e4m3_values() -> np.ndarray:
    """Every finite non-negative E4M3 value, ascending (codes 0x00..0x7E)."""
    vals = []
    for c in range(0x7F):
        e, m = c >> 3, c & 7
        vals.append(m * 2.0 ** -9 if e == 0 else (8 + m) * 2.0 ** (e - 10))
    return np.array(vals)


def test_every_code_and_every_midpoint():
    v = e4m3_values()
    assert v[-1] == 448.0 and np.all(np.diff(v) > 0)
    for sign in (1.0, -1.0):
        assert np.array_equal(floor_check.to_e4m3(np.float32(sign * v)), sign * v)
        mid = (v[:-1] + v[1:]) / 2  # exact in FP32
        got = floor_check.to_e4m3(np.float32(sign * mid))
        codes = np.arange(len(v))
        even = np.where(codes[:-1] % 2 == 0, v[:-1], v[1:])  # the neighbour with an even code
        assert np.array_equal(got, sign * even)
        # Just above and below a midpoint: the nearer neighbour.
        up = floor_check.to_e4m3(np.nextafter(np.float32(sign * mid), np.float32(sign * 1e9)))
        down = floor_check.to_e4m3(np.nextafter(np.float32(sign * mid), np.float32(0)))
        assert np.array_equal(up, sign * v[1:]) and np.array_equal(down, sign * v[:-1])
    rng = np.random.default_rng()
    x = np.float32(rng.uniform(-448, 448, 10000))
    q = floor_check.to_e4m3(x)
    assert np.all(np.isin(np.abs(q), v))
    with pytest.raises(ValueError):
        floor_check.to_e4m3(np.float32([449.0]))


def test_torch_descale_is_one_ulp_above_where_the_reciprocal_rounds_up():
    for amax in (0.6015625, 10.5, 12.25):
        exact = floor_check.descale(np.float32(amax), "exact")
        torch = floor_check.descale(np.float32(amax), "torch")
        assert torch == np.nextafter(exact, np.float32(1.0))
    # The planted tie of tests/cpu/test_model_harness_mirror.cc: 320 exact, 288 with torch's.
    x = np.float32(0.408203125)
    for conv, want in (("exact", 320.0), ("torch", 288.0)):
        assert floor_check.to_e4m3(np.float32(x / floor_check.descale(np.float32(0.6015625), conv))) == want
    assert floor_check.descale(np.float32(0.0), "torch") == 1.0


def test_model_cache_of_another_emulation_is_refused(tmp_path):
    old = tmp_path / "cache.json"
    old.write_text(json.dumps({"figures": {}}))  # written before the stamp: emulation 1
    args = ["--gpu", str(ROOT / "results" / "2026-12-01-h200-265f1130a428.json"),
            "--pack", str(tmp_path), "--model-cache", str(old), "--eval", "/nonexistent"]
    with pytest.raises(SystemExit, match="emulation 1"):
        compare.main(args)

"""The harness's part "captured" (speed on captured activations, bench/captured_speed.py) without
torch or a GPU: bench/harness.py --dry-run --only captured must pair fp8attn with FA3 FP8 and the
accurate mode with FA3 BF16, head to head, both masks, once per capture at the kernel's default
softmax scale, into res["speed_captured"] (never into the sweep's res["speed"]); a later call must
keep an earlier call's records (--speed-from); the report and tools/readme_status.py must render
the table. The MHA tiling must give each query head the KV head its capture head reads."""
from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ROOT, dry_harness

sys.path.insert(0, str(ROOT / "bench"))
import captured_speed as cs  # noqa: E402

FIXTURES = ROOT / "data" / "fixtures"
FIELDS = {"method", "b", "sq", "sk", "h", "h_kv", "causal", "tflops_median", "runs", "protocol", "data"}


def _usable_fixtures() -> list[str]:
    """The fixtures the dry backend loads (head dim 128) at the default scale, by record name."""
    import dry_backend as dry
    return [n for n, _, scale in dry.load_captures(FIXTURES) if cs.usable(scale)]


def _harness(out, *extra):
    return dry_harness(out, "--captures", str(FIXTURES), *extra, timeout=600)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(captured-only result and file, speed-only result, captured joined to the speed call's)."""
    cap, cap_js = _harness(tmp_path_factory.mktemp("captured"), "--only", "captured")
    speed_res, speed_js = _harness(tmp_path_factory.mktemp("speed"), "--only", "speed")
    joined, _ = _harness(tmp_path_factory.mktemp("joined"), "--only", "captured", "--speed-from", str(speed_js))
    return (cap, cap_js), speed_res, joined


def test_captured_part_pairs_each_capture_both_masks(runs):
    (res, _), _, _ = runs
    names = _usable_fixtures()
    assert names, "no bundled fixture at the default scale: the test would check nothing"
    assert res["parts"] == ["captured"] and res["speed"] == []
    recs = res["speed_captured"]
    assert len(recs) == len(names) * 2 * len(cs.PAIRINGS) * 2
    for name in names:
        for causal in (False, True):
            for a, b in cs.PAIRINGS:
                for m, peer in ((a, b), (b, a)):
                    got = [r for r in recs if r["data"] == name and r["causal"] == causal
                           and r["method"] == m and r["protocol"] == f"head_to_head:{peer}"]
                    assert len(got) == 1, (name, causal, m, peer)
                    r = got[0]
                    assert FIELDS <= r.keys(), r
                    assert r["tflops_median"] and r["tflops_median"] > 0 and r["runs"] >= 4, r
                    assert r["h"] == r["h_kv"] and r["sq"] == r["sk"], r


def test_captured_part_keeps_the_speed_calls_records(runs):
    _, speed_res, joined = runs
    assert joined["speed"] == speed_res["speed"] and speed_res["speed"]
    assert joined["speed_captured"] and "speed_captured" not in speed_res
    assert joined["parts"] == ["captured", "speed"]


def test_report_and_readme_render_the_captured_table(runs, tmp_path):
    (res, js), _, _ = runs
    text = js.with_suffix(".md").read_text()
    assert "## Speed on captured activations" in text
    readme = tmp_path / "README.md"
    readme.write_text("# x\n")
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_status.py"), str(js), "--readme",
                        str(readme)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [line for line in readme.read_text().splitlines() if line.startswith("| captured:")]
    assert len(rows) == len(_usable_fixtures()) * 2, rows
    for line in rows:  # both pairings' ratios present
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert all(c != "-" for c in cells), line


def test_mha_tiling_keeps_each_query_heads_kv_head():
    rng = np.random.default_rng(int(time.time_ns() % 2**32))
    s, hq, hkv, b, h = 16, 6, 2, 3, 8
    q = rng.standard_normal((1, s, hq, 128))
    k = rng.standard_normal((1, s, hkv, 128))
    v = rng.standard_normal((1, s, hkv, 128))
    tq, tk, tv = cs.mha_inputs((q, k, v), b, h)
    assert tq.shape == (b, s, h, 128) and tk.shape == tv.shape == (b, s, h, 128)
    for i in range(h):
        src = i % hq
        kv = src // (hq // hkv)  # query head src of the capture reads KV head kv
        for j in range(b):
            np.testing.assert_array_equal(tq[j, :, i], q[0, :, src])
            np.testing.assert_array_equal(tk[j, :, i], k[0, :, kv])
            np.testing.assert_array_equal(tv[j, :, i], v[0, :, kv])
    assert not np.array_equal(tk[0, :, 0], tk[0, :, 3])  # heads 0 and 3 read different KV heads


def test_only_default_scale_captures_are_timed():
    assert cs.usable(None) and cs.usable(1 / math.sqrt(128))
    assert not cs.usable(1 / 8) and not cs.usable(float("nan"))

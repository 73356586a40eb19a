"""The harness's part "rope" (issue 17: BF16 in, rotary fused) without torch or a GPU:
bench/harness.py --dry-run --only rope must pair fp8attn_rope_quantize_pair with
fa3_bf16_rope_pair head to head and in context, and with the plain fp8attn_end_to_end head to
head, at every sweep row and both masks, with the issue's record fields; a later call's rope part
must join an earlier call's speed records (--speed-from) without dropping either; the report and
tools/readme_status.py must render the "BF16 in, rotary fused" table with its goal column; the
verdict must apply the issue's goals per row (1.00, and 1.20 at >= 4096 tokens) and count a
missing figure as a miss. The dry run's stand-ins are checked against a rotation computed here."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest

from conftest import ROOT, dry_harness

sys.path.insert(0, str(ROOT / "bench"))
import dry_backend as dry  # noqa: E402
import report  # noqa: E402
import sweep  # noqa: E402

PAIR, PEER = report.ROPE_PAIR, report.ROPE_PEER
FIELDS = {"method", "b", "sq", "sk", "h", "h_kv", "causal", "tflops_median", "runs", "protocol"}


def _harness(out, *extra):
    return dry_harness(out, *extra, timeout=600)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(speed-only result, rope-only result, rope joined to the speed call's records)."""
    base = tmp_path_factory.mktemp("speed")
    speed_res, speed_js = _harness(base, "--only", "speed")
    rope_res, rope_js = _harness(tmp_path_factory.mktemp("rope"), "--only", "rope")
    joined, joined_js = _harness(tmp_path_factory.mktemp("joined"), "--only", "rope",
                                 "--speed-from", str(speed_js))
    return speed_res, (rope_res, rope_js), (joined, joined_js)


def _one(res, method, peer, protocol, shape):
    got = [r for r in res["speed"] if r["method"] == method and r["protocol"] == f"{protocol}:{peer}"
           and (r["b"], r["sq"], r["sk"], r["h"], r["h_kv"], r["causal"]) == shape]
    assert len(got) == 1, (method, peer, protocol, shape, len(got))
    return got[0]


def test_rope_part_pairs_every_row_both_masks_both_protocols(runs):
    _, (res, _), _ = runs
    assert res["parts"] == ["rope"]
    shapes = [(b, sq, sk, h, h_kv, c) for (b, sq, sk, h, h_kv) in sweep.DRY_ROWS for c in (False, True)]
    for shape in shapes:
        for protocol in ("head_to_head", "in_context"):
            mine, theirs = _one(res, PAIR, PEER, protocol, shape), _one(res, PEER, PAIR, protocol, shape)
            for r in (mine, theirs):
                assert FIELDS <= r.keys(), r
                assert r["tflops_median"] and r["tflops_median"] > 0 and r["runs"] >= 4, r
        assert _one(res, PAIR, "fp8attn_end_to_end", "head_to_head", shape)["tflops_median"]
        assert _one(res, "fp8attn_end_to_end", PAIR, "head_to_head", shape)["tflops_median"]
    # Nothing of the speed part: the rope part alone fits its own call.
    assert all(report.is_rope(r) for r in res["speed"])
    assert len(res["speed"]) == len(shapes) * 3 * 2


def test_rope_part_joins_an_earlier_speed_call(runs):
    speed_res, _, (joined, _) = runs
    main, rope = report.split_rope(joined["speed"])
    assert {json.dumps(r, sort_keys=True) for r in main} == {json.dumps(r, sort_keys=True)
                                                           for r in speed_res["speed"]}
    assert rope and joined["parts"] == ["rope", "speed"]
    assert not any(report.is_rope(r) for r in speed_res["speed"])


def test_report_and_readme_render_the_rope_table(runs, tmp_path):
    _, (_, rope_js), (_, joined_js) = runs
    for js, has_main in ((rope_js, False), (joined_js, True)):
        text = js.with_suffix(".md").read_text()
        assert "## BF16 in, rotary fused" in text
        assert ("## BF16 in -> output" in text) == has_main
        if has_main:  # beside the plain BF16-in table, before the modes
            assert text.index("## BF16 in -> output") < text.index("## BF16 in, rotary fused") \
                < text.index("## Precision modes")
        readme = tmp_path / f"README-{has_main}.md"
        readme.write_text("# x\n")
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_status.py"), str(js), "--readme",
                            str(readme)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        status = readme.read_text()
        rows = [line for line in status.splitlines() if line.startswith("| ") and ">= 1." in line]
        assert len(rows) == len(sweep.DRY_ROWS) * 2 * (2 if has_main else 1), rows
        rope_rows = [line for line in rows if line.count("|") == 13]
        assert len(rope_rows) == len(sweep.DRY_ROWS) * 2
        for line in rope_rows:
            cells = [c.strip() for c in line.split("|")[1:-1]]
            assert all(c not in ("-", "failed") for c in cells), line
            assert cells[9] == ">= 1.00"  # the dry rows are short: the 1.00 goal
        assert f"{PAIR} / {PEER} >= 1.00 at every row" in status


def _rec(method, peer, tf, row, causal, protocol="head_to_head"):
    b, sq, sk, h, h_kv = row
    return {"method": method, "protocol": f"{protocol}:{peer}", "tflops_median": tf, "b": b, "sq": sq,
            "sk": sk, "h": h, "h_kv": h_kv, "d": 128, "causal": causal, "runs": 100}


def _pair(ratio, row, causal, protocol="head_to_head"):
    return [_rec(PAIR, PEER, 700.0 * ratio, row, causal, protocol), _rec(PEER, PAIR, 700.0, row, causal, protocol)]


def test_rope_verdict_applies_the_goal_of_each_row():
    long_row, short_row = (2, 8192, 8192, 32, 32), (16, 1024, 1024, 32, 32)
    speed = []
    for protocol in ("head_to_head", "in_context"):
        speed += _pair(1.25, long_row, False, protocol) + _pair(1.05, short_row, False, protocol)
    verdict = report.rope_verdict_lines(speed)
    assert len(verdict) == 2 and all(v.endswith(": met") for v in verdict), verdict
    # 1.10 at 8k tokens misses the 1.20 goal; at 1k it would have met the 1.00 one.
    worse = [r for r in speed if not (r["sq"] == 8192 and r["protocol"].startswith("head_to_head"))]
    worse += _pair(1.10, long_row, False)
    verdict = report.rope_verdict_lines(worse)
    assert "not met at 1 of 2 rows" in verdict[0] and verdict[1].endswith(": met"), verdict
    # A failed figure (tflops null) is a miss, never a pass.
    failed = [dict(r, tflops_median=None) if r["method"] == PEER and r["sq"] == 1024 else r for r in speed]
    assert all("not met at 1 of 2 rows" in v for v in report.rope_verdict_lines(failed))
    table = report.rope_table(speed + [_rec(PAIR, "fp8attn_end_to_end", 700.0, long_row, False),
                                       _rec("fp8attn_end_to_end", PAIR, 800.0, long_row, False)])
    (line,) = [x for x in table if x.startswith("| 2 | 8192 |")]
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[5:] == ["875.0", "700.0", "1.250", "1.250", ">= 1.20", "800.0", "0.875"], cells
    # The rope records stay out of the other tables, and theirs out of this one.
    assert report.rows(report.split_rope(speed)[0]) == []
    assert len(report.rope_table(_pair(1.0, short_row, True) + [_rec("fp8attn", "fa3_fp8", 1.0, long_row, True)])) == 3


def test_dry_stand_ins_rotate_as_the_library_does():
    """The stand-ins' rotation: rotate_half with Llama's tables, the queries at the last sq of
    max(sq, sk) positions; a quarter turn checked by hand."""
    shape = sweep.Shape(1, 3, 5, 1, 1, 128, True)
    n, q_pos0, k_pos0 = sweep.rope_positions(shape)
    assert (n, q_pos0, k_pos0) == (5, 2, 0)
    cos, sin = dry.rope_tables(n)
    assert cos.shape == (5, 64) and cos.dtype == np.float32 and np.all(cos[0] == 1) and np.all(sin[0] == 0)
    x = np.random.default_rng(int(time.time_ns() % 2**31)).standard_normal((1, 1, 1, 128))
    quarter_c, quarter_s = np.zeros((1, 64), np.float32), np.ones((1, 64), np.float32)
    r = dry.rope_rotate(x, quarter_c, quarter_s, 0)
    assert np.array_equal(r[..., :64], -x[..., 64:]) and np.array_equal(r[..., 64:], x[..., :64])
    ref = dry.rope_rotate(x, cos, sin, 1)
    assert not np.allclose(ref, x)  # row 1: a real rotation
    assert np.allclose(np.linalg.norm(ref), np.linalg.norm(x))

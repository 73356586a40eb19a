#!/usr/bin/env python3
"""Checks of the harness's plan and protocols that need no GPU, torch or numpy:
  python3 bench/test_protocol.py      (exit 1 and the failing check on any failure)
FLOP counts against brute force (causal bottom-right, sq != sk both ways), the alternation order
of speed.head_to_head, the in-context GEMM before every timed call, enough input sets to exceed
the L2, a method that cannot be built recorded as failed on both sides of its pairing, and the
report's completeness verdict (fp8attn and every kernel peer with figures at every row, both
protocols) counting each missing or failed pairing.
tests/python/test_bench_protocol.py runs every check under pytest (the README's test command)."""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import report  # noqa: E402
import speed  # noqa: E402
import sweep  # noqa: E402


def brute_pairs(sq, sk, causal):
    return sum(1 for i in range(sq) for j in range(sk) if not causal or j <= i + sk - sq)


def check_flops():
    rng = random.Random()
    for _ in range(200):
        sq, sk = rng.randint(1, 70), rng.randint(1, 70)
        for causal in (False, True):
            s = sweep.Shape(1, sq, sk, 1, 1, 128, causal)
            assert s.visible_pairs() == brute_pairs(sq, sk, causal), (sq, sk, causal)
    seed = sweep.Shape(2, 8192, 8192, 32, 32, 128, True)
    assert seed.flops() == 4.0 * 2 * 32 * 128 * 8192 * 8193 / 2


def check_alternation():
    for runs, block in ((100, 2), (7, 3), (100, 1), (5, 5)):
        order = []
        a = lambda: order.append("a")  # noqa: E731
        b = lambda: order.append("b")  # noqa: E731
        gemm = lambda: order.append("g")  # noqa: E731
        ta, tb = speed.head_to_head(a, b, runs, block, warmup=0, before=gemm)
        assert len(ta) == len(tb) >= runs, (len(ta), runs)
        calls = [c for c in order if c != "g"]
        assert all(order[i] == "g" and order[i + 1] != "g" for i in range(0, len(order), 2)), \
            "a GEMM right before every call"
        rounds = [calls[i:i + 2 * block] for i in range(0, len(calls), 2 * block)]
        assert len(rounds) % 2 == 0, "as many rounds with a first as with b first"
        for r, chunk in enumerate(rounds):
            first = "a" if r % 2 == 0 else "b"
            other = "b" if first == "a" else "a"
            assert chunk == [first] * block + [other] * block, (r, chunk)


def check_input_sets():
    for s in sweep.sweep():
        assert sweep.input_sets(s) * s.fp8_input_bytes() >= min(
            2 * sweep.L2_BYTES, sweep.MAX_INPUT_SETS * s.fp8_input_bytes()), s


def check_failed_pairing():
    s = sweep.Shape(1, 64, 64, 2, 2, 128, False)
    recs = speed.run_pairing(s, "fp8attn", "fa3_fp8", "head_to_head",
                             {"fp8attn": lambda: None, "fa3_fp8": "FA3 not importable"}, None,
                             4, 2, {})
    assert [r["method"] for r in recs] == ["fp8attn", "fa3_fp8"]
    assert all(r["tflops_median"] is None and "FA3 not importable" in r["error"] for r in recs)
    assert recs[0]["protocol"] == "head_to_head:fa3_fp8" and recs[1]["protocol"] == "head_to_head:fp8attn"


def _records(rows, drop=None, fail=None):
    """Paired speed records of fp8attn and every kernel peer at `rows`, both protocols; `drop`
    leaves one (row, peer, protocol) pairing out, `fail` records it as failed."""
    out = []
    for s in rows:
        for peer in report.KERNEL_PEERS:
            for proto in speed.PROTOCOLS:
                key = (s, peer, proto)
                if key == drop:
                    continue
                if key == fail:
                    out += speed.run_pairing(s, "fp8attn", peer, proto, {"fp8attn": lambda: None,
                                             peer: "refused"}, None, 2, 1, {})
                    continue
                t = [1.0 + random.random() for _ in range(4)]
                out += [speed.record("fp8attn", s, t, f"{proto}:{peer}"),
                        speed.record(peer, s, t, f"{proto}:fp8attn")]
    return out


def check_completeness_verdict():
    rows = [sweep.Shape(1, 64, 64, 2, 2, 128, c) for c in (False, True)]
    rows += [sweep.Shape(1, 32, 96, 2, 1, 128, True)]

    def line(recs):
        hits = [ln for ln in report.verdict_lines(recs, seed=(1, 64, 64, 2, 2)) if "with figures" in ln]
        assert len(hits) == 1, hits
        return hits[0]
    assert line(_records(rows)).endswith(": complete"), line(_records(rows))
    rng = random.Random()
    for _ in range(5):
        key = (rng.choice(rows), rng.choice(report.KERNEL_PEERS), rng.choice(speed.PROTOCOLS))
        assert line(_records(rows, drop=key)).endswith("1 pairings without a figure"), key
        assert line(_records(rows, fail=key)).endswith("1 pairings without a figure"), key


def main() -> int:
    # Every check_ function, as tests/python/test_bench_protocol.py collects them.
    checks = [f for n, f in globals().items() if n.startswith("check_")]
    failed = 0
    for c in checks:
        try:
            c()
            print(f"PASS {c.__name__}")
        except AssertionError as e:
            failed += 1
            print(f"FAIL {c.__name__}: {e}")
    print(f"{len(checks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""CPU rehearsal of rule.py: synthesizes the microbenchmark's JSON (the "bits", "c_big" and
"round" tests of wgmma_accum.cu) from known rules with an exact Python adder, and checks that
rule.derive recovers each rule. Exit status 1 on any mismatch.

  python3 tools/wgmma_accum/rehearse.py
"""
from __future__ import annotations

import math
import sys

import rule as R


def synth(bits, group, c_aligned, rounding) -> dict:
    run = lambda c, terms: R.adder(c, terms, bits, group, c_aligned, rounding)
    tests, rows = [], []
    for i in (0, 31):
        for s in range(32):
            if s == i:
                continue
            kept = 0
            for j in range(1, 27):
                t = [0.0] * 32
                t[i], t[s] = 256.0, 2.0 ** (8 - j)
                if run(0.0, t) == 256.0 + 2.0 ** (8 - j) and j == kept + 1:
                    kept = j
            rows.append([i, s, kept])
    c_big = 0
    for j in range(1, 27):
        t = [0.0] * 32
        t[0] = 2.0 ** (8 - j)
        if run(256.0, t) == 256.0 + 2.0 ** (8 - j) and j == c_big + 1:
            c_big = j
    for i, s in ((0, 1), (31, 0), (0, 5), (31, 30)):
        for j in range(1, 27):
            t = [0.0] * 32
            t[i], t[s] = 256.0, 2.0 ** (8 - j)
            tests.append({"kind": "bits", "i": i, "s": s, "j": j, "got": run(0.0, t)})
    for j in range(8, 21):
        tests.append({"kind": "many_small", "j": j, "got": run(0.0, [256.0] + [2.0 ** (8 - j)] * 31)})
        tests.append({"kind": "smalls_then_big", "j": j, "got": run(0.0, [2.0 ** (8 - j)] * 31 + [256.0])})
        for f in (0.25, 0.5, 0.75, -0.25, -0.5, -0.75):
            t = [0.0] * 32
            t[0], t[1] = 256.0, f * 2.0 ** (8 - j)
            tests.append({"kind": "round", "j": j, "frac": f, "got": run(0.0, t)})
    return {"self_check": {"ok": True}, "tests": tests,
            "derived": {"fraction_bits_min": min(r[2] for r in rows), "bits_by_position": rows,
                        "c_big_bits": c_big}}


def main() -> int:
    bad = 0
    for case in [(13, 32, True, "zero"), (13, 32, True, "down"), (14, 16, True, "zero"),
                 (13, 4, False, "nearest"), (12, 8, True, "down")]:
        got = R.derive(synth(*case))
        ok = (got["fraction_bits"], got["group"], got["c_aligned"], got["rounding"]) == case
        bad += not ok
        print(f"{'ok ' if ok else 'BAD'} rule {case} -> {got['tag']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The FP8 tensor core's accumulation rule, read from the microbenchmark's JSON
(tools/wgmma_accum/run.sh), as the CPU model's scheme keys (model/accumulator.h):

  python3 tools/wgmma_accum/rule.py results/wgmma-accum.json
  -> {"fraction_bits": ..., "group": ..., "c_aligned": ..., "rounding": ..., "tag": ...}
     :acc_bits=..:acc_group=..:acc_round=..:acc_c_aligned=..

fraction_bits: the fewest bits below the big product's leading bit that a small product keeps
(tests "bits"); group: the alignment group size whose rule (adder() below) reproduces the most
of the position-dependent tests (bits, many_small, smalls_then_big, round); c_aligned: C = 2^8 keeps no more bits of a product than a product does
(tests "c_big"); rounding: +3/4 and -1/4 of the unit at the cut (tests "round") tell nearest,
toward -inf (down) and toward zero.
"""
from __future__ import annotations

import json
import math
import sys

# What the model assumed before the measurement: 13 fraction bits, one group per 32-product
# k-step with the running sum in it, truncation toward zero.
ASSUMED = {"fraction_bits": 13, "group": 32, "c_aligned": True, "rounding": "zero",
           "tag": "assumed-f13-g32-zero", "source": "assumed (not measured)"}


def adder(c: float, terms: list[float], bits: int, group: int, c_aligned: bool, rounding: str) -> float:
    """The rule on one dot product (exact Python arithmetic; what model/accumulator.cc does)."""
    cut = {"zero": math.trunc, "down": math.floor, "nearest": round}[rounding]
    for g0 in range(0, len(terms), group):
        g = terms[g0:g0 + group]
        mx = max([abs(t) for t in g] + ([abs(c)] if c_aligned else []))
        if mx == 0:
            continue
        unit = 2.0 ** (math.frexp(mx)[1] - 1 - bits)
        s = sum(cut(t / unit) for t in g) * unit
        c = (cut(c / unit) * unit + s) if c_aligned else c + s
    return float(c)


def terms_of(t: dict) -> tuple[float, list[float]] | None:
    """A test's C and 32 products, rebuilt from its kind and parameters."""
    x = [0.0] * 32
    small = 2.0 ** (8 - t["j"])
    if t["kind"] == "bits":
        x[t["i"]], x[t["s"]] = 256.0, small
    elif t["kind"] == "many_small":
        x = [256.0] + [small] * 31
    elif t["kind"] == "smalls_then_big":
        x = [small] * 31 + [256.0]
    elif t["kind"] == "round":
        x[0], x[1] = 256.0, t["frac"] * small
    else:
        return None
    return 0.0, x


def _tag(r: dict) -> str:
    return f"measured-f{r['fraction_bits']}-g{r['group']}-{r['rounding']}" + ("" if r["c_aligned"] else "-cfp32")


def derive(doc: dict) -> dict:
    if not doc.get("self_check", {}).get("ok"):
        raise ValueError("the microbenchmark's self-check failed: its results cannot be used")
    d = doc["derived"]
    f = int(d["fraction_bits_min"])
    c_aligned = int(d["c_big_bits"]) <= f + 1
    unit = 2.0 ** (8 - f)
    by = {(t["j"], t["frac"]): t["got"] - 256.0 for t in doc["tests"] if t["kind"] == "round"}
    up = by.get((f, 0.75))
    down = by.get((f, -0.25))
    if up is None or down is None:
        raise ValueError(f"no rounding tests at the cut j = {f}")
    if up == unit:
        rounding = "nearest"
    elif down == -unit:
        rounding = "down"
    else:
        rounding = "zero"
    # The group: the size whose rule reproduces the most of the tests that depend on it.
    tests = [(t, terms_of(t)) for t in doc["tests"]]
    tests = [(t, x) for t, x in tests if x is not None]
    score = {g: sum(adder(c, x, f, g, c_aligned, rounding) == t["got"] for t, (c, x) in tests)
             for g in (32, 16, 8, 4, 2, 1)}
    group = max(score, key=lambda g: (score[g], g))
    r = {"fraction_bits": f, "group": group, "c_aligned": c_aligned, "rounding": rounding,
         "tests_reproduced": f"{score[group]}/{len(tests)}", "source": doc.get("provenance", {})}
    r["tag"] = _tag(r)
    return r


def rule_from_file(path: str) -> dict:
    with open(path) as fh:
        return derive(json.load(fh))


def scheme_keys(rule: dict) -> str:
    return (f":acc_bits={rule['fraction_bits']}:acc_group={rule['group']}"
            f":acc_round={rule['rounding']}:acc_c_aligned={int(rule['c_aligned'])}")


if __name__ == "__main__":
    r = rule_from_file(sys.argv[1]) if len(sys.argv) > 1 else ASSUMED
    print(json.dumps({k: v for k, v in r.items() if k != "source"}))
    print(scheme_keys(r))

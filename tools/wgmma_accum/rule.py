#!/usr/bin/env python3
"""The FP8 tensor core's accumulation rule, read from the microbenchmark's JSON
(tools/wgmma_accum/run.sh), as the CPU model's scheme keys (model/accumulator.h):

  python3 tools/wgmma_accum/rule.py results/wgmma-accum.json
  -> {"fraction_bits": ..., "group": ..., "c_aligned": ..., "rounding": ..., "tag": ...}
     :acc_bits=..:acc_group=..:acc_round=..:acc_c_aligned=..

fraction_bits: the fewest bits below the big product's leading bit that a small product keeps
(tests "bits"); group: the largest power of two g such that every (big, small) pair inside one
aligned block of g positions keeps only those bits (pairs in different blocks keep more: they
are aligned apart); c_aligned: C = 2^8 keeps no more bits of a product than a product does
(tests "c_big"); rounding: +3/4 and -1/4 of the unit at the cut (tests "round") tell nearest,
toward -inf (down) and toward zero.
"""
from __future__ import annotations

import json
import sys

# What the model assumed before the measurement: 13 fraction bits, one group per 32-product
# k-step with the running sum in it, truncation toward zero.
ASSUMED = {"fraction_bits": 13, "group": 32, "c_aligned": True, "rounding": "zero",
           "tag": "assumed-f13-g32-zero", "source": "assumed (not measured)"}


def _tag(r: dict) -> str:
    return f"measured-f{r['fraction_bits']}-g{r['group']}-{r['rounding']}" + ("" if r["c_aligned"] else "-cfp32")


def derive(doc: dict) -> dict:
    if not doc.get("self_check", {}).get("ok"):
        raise ValueError("the microbenchmark's self-check failed: its results cannot be used")
    d = doc["derived"]
    f = int(d["fraction_bits_min"])
    pairs = [tuple(p) for p in d["bits_by_position"]]
    group = 1
    for g in (32, 16, 8, 4, 2):
        if all(b == f for i, s, b in pairs if i // g == s // g):
            group = g
            break
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
    r = {"fraction_bits": f, "group": group, "c_aligned": c_aligned, "rounding": rounding,
         "source": doc.get("provenance", {})}
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

#!/usr/bin/env python3
"""How far a re-capture is from the committed fixtures: for every fixture, the share of BF16 codes
that differ from the same slice of the full capture in data/cache, and the largest difference
relative to the slice's amax. Writes results/captures-reproducibility.json (command, commit,
machine, date).

  python tools/capture/reproducibility.py
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

import provenance
import st_io

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def main() -> int:
    manifest = json.load(open(os.path.join(REPO, "data", "captures.json")))
    rows = []
    for fx in manifest.get("fixtures", []):
        model = next(m for m in manifest["models"] if m["slug"] == fx["model"])
        layer = next(L for L in model["layers"] if L["layer"] == fx["layer"])
        full_path = os.path.join(REPO, layer["file"])
        if not os.path.exists(full_path):
            continue
        t, _ = st_io.read(os.path.join(REPO, fx["file"]))
        full, meta = st_io.read(full_path)
        for n, h in (("q", fx["q_head"]), ("k", fx["kv_head"]), ("v", fx["kv_head"])):
            a, b = t[n][0, :, 0], full[n][0, : fx["tokens"], h]
            fa, fb = st_io.bf16_to_f32(a), st_io.bf16_to_f32(b)
            rows.append({"model": fx["model"], "layer": fx["layer"], "tensor": n,
                         "codes_differing": float((a != b).mean()),
                         "max_abs_diff_over_amax": float(np.abs(fa - fb).max() / np.abs(fa).max())})
    out = os.path.join(REPO, "results", "captures-reproducibility.json")
    with open(out, "w") as f:
        json.dump({"provenance": provenance.record(sys.argv),
                   "note": "committed fixture vs the same slice of the capture now in data/cache",
                   "rows": rows}, f, indent=1)
    for r in rows:
        print(f"{r['model']} layer {r['layer']} {r['tensor']}: {r['codes_differing']:.2%} of codes differ, "
              f"max diff / amax {r['max_abs_diff_over_amax']:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

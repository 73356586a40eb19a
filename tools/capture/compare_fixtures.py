#!/usr/bin/env python3
"""Compares fresh captures (data/cache/captures/<model>/layerNN.safetensors, e.g. from
`capture.py --tokens 2048 --pack-only`) with the committed fixtures (data/fixtures/), which were
cut from the full 8192-token capture: for the fixture's query and KV head over its 2048 tokens,
the share of BF16 codes that are equal and the largest difference relative to the tensor's amax.
A causal model's first 2048 tokens do not depend on the later ones, so only the forward pass's
FP32 summation order (matrix shapes, BLAS) can make them differ.
usage: python3 tools/capture/compare_fixtures.py [--out FILE]"""
import argparse
import glob
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import st_io  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    for fx in sorted(glob.glob(os.path.join(REPO, "data", "fixtures", "*.safetensors"))):
        ft, fm = st_io.read(fx)
        src = os.path.join(REPO, fm["source_file"])
        if not os.path.exists(src):
            rows.append({"fixture": os.path.basename(fx), "error": f"{fm['source_file']} absent"})
            continue
        ct, cm = st_io.read(src)
        n = int(fm["tokens"])
        if int(cm["tokens"]) < n:
            rows.append({"fixture": os.path.basename(fx), "error": f"capture has {cm['tokens']} tokens"})
            continue
        heads = {"q": int(fm["source_q_head"]), "k": int(fm["source_kv_head"]), "v": int(fm["source_kv_head"])}
        row = {"fixture": os.path.basename(fx), "capture": fm["source_file"], "capture_tokens": int(cm["tokens"]),
               "tokens": n}
        for name, h in heads.items():
            a = ft[name][0, :n, 0]
            b = ct[name][0, :n, h]
            fa, fb = st_io.bf16_to_f32(a), st_io.bf16_to_f32(b)
            amax = float(np.abs(fa).max())
            row[name] = {"equal_codes": float((a == b).mean()),
                         "max_abs_diff_over_amax": float(np.abs(fa - fb).max() / amax) if amax else 0.0}
        rows.append(row)
    out = {"command": "python3 " + " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "rows": rows}
    text = json.dumps(out, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Packs a subset of the full captures into one folder of <= 56 MiB, to carry to the GPU machine
(default .carry/captures, where bench/harness.py looks for them).

  python tools/capture/pack.py                          # all heads, first 2048 tokens
  python tools/capture/pack.py --tokens 8192 --kv-heads 0   # one GQA group at full length

Per (model, layer) one safetensors file with BF16 q, k, v shaped (1, tokens, h, 128); choosing
KV heads keeps every query head of their groups, so GQA stays intact (query head i of the pack
reads KV head i // (h / h_kv) of the pack). The folder holds pack.json listing files, source
heads and sha256s. Files are the same format as the full captures (same metadata keys, with
tokens, q_heads and kv_heads rewritten).

A head_dim-64 model (SmolLM2) is zero-padded to 128 channels, the kernel's head dim: Q K^T and
the first 64 channels of O are unchanged provided the softmax scale stays 1/sqrt(64), which the
file's metadata then carries as softmax_scale (head_dim_model = 64).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np

import st_io

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PACK_BUDGET = 56 * 2**20
KERNEL_HEAD_DIM = 128


def pad_head_dim(codes: np.ndarray) -> np.ndarray:
    """BF16 codes (b, s, h, d) -> (b, s, h, 128), the new channels +0."""
    d = codes.shape[-1]
    if d == KERNEL_HEAD_DIM:
        return codes
    out = np.zeros(codes.shape[:-1] + (KERNEL_HEAD_DIM,), codes.dtype)
    out[..., :d] = codes
    return out


def parse_heads(spec: str, n: int) -> list[int]:
    if spec == "all":
        return list(range(n))
    heads = sorted({int(x) for x in spec.split(",")})
    if any(not 0 <= h < n for h in heads):
        raise SystemExit(f"--kv-heads {spec}: heads must lie in [0, {n})")
    return heads


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=2048, help="first N tokens of each capture")
    ap.add_argument("--kv-heads", default="all", help="'all' or a comma list of KV heads")
    ap.add_argument("--models", default="all", help="'all' or a comma list of model slugs")
    ap.add_argument("--layers", default="all", help="'all' or a comma list of layers")
    # bench/harness.py reads captures from .carry/captures (git-ignored; the lead carries .carry).
    ap.add_argument("--out", default=os.path.join(REPO, ".carry", "captures"))
    args = ap.parse_args(argv)

    with open(os.path.join(REPO, "data", "captures.json")) as f:
        manifest = json.load(f)
    plan = []
    for model in manifest["models"]:
        if args.models != "all" and model["slug"] not in args.models.split(","):
            continue
        kv = parse_heads(args.kv_heads, model["kv_heads"])
        rep = model["q_heads"] // model["kv_heads"]
        q = [g * rep + i for g in kv for i in range(rep)]
        for layer in model["layers"]:
            if args.layers != "all" and str(layer["layer"]) not in args.layers.split(","):
                continue
            if not 0 < args.tokens <= model["layers"][0]["tensors"]["q"]["shape"][1]:
                raise SystemExit(f"--tokens {args.tokens}: captures hold {manifest['tokens']}")
            plan.append((model, layer, q, kv))
    if not plan:
        raise SystemExit("nothing selected")
    size = sum(2 * args.tokens * KERNEL_HEAD_DIM * (len(q) + 2 * len(kv)) for _, _, q, kv in plan)
    if size > PACK_BUDGET:
        raise SystemExit(f"the selection takes {size / 2**20:.1f} MiB, over the 56 MiB budget: "
                         "fewer tokens, KV heads, layers or models")

    os.makedirs(args.out, exist_ok=True)
    for old in os.listdir(args.out):
        if old.endswith(".safetensors") or old == "pack.json":
            os.remove(os.path.join(args.out, old))
    entries = []
    for model, layer, q_heads, kv_heads in plan:
        tensors, meta = st_io.read(os.path.join(REPO, layer["file"]))
        sel = {"q": tensors["q"][:, : args.tokens, q_heads], "k": tensors["k"][:, : args.tokens, kv_heads],
               "v": tensors["v"][:, : args.tokens, kv_heads]}
        sel = {n: np.ascontiguousarray(pad_head_dim(t)) for n, t in sel.items()}
        hd = model["head_dim"]
        scale = 1.0 / math.sqrt(hd)  # a Python float: its repr is the plain number ('0.125')
        padded = {} if hd == KERNEL_HEAD_DIM else {
            "head_dim": KERNEL_HEAD_DIM, "head_dim_model": hd, "softmax_scale": repr(scale),
            "padding": f"channels {hd}..127 are zeros; run with softmax_scale 1/sqrt({hd})"}
        name = f"{model['slug']}-layer{layer['layer']:02d}.safetensors"
        out_meta = {**meta, "tokens": args.tokens, "q_heads": len(q_heads), "kv_heads": len(kv_heads),
                    "source_q_heads": ",".join(map(str, q_heads)),
                    "source_kv_heads": ",".join(map(str, kv_heads)), **padded,
                    **{f"sha256_{n}": st_io.sha256_array(t) for n, t in sel.items()}}
        st_io.write(os.path.join(args.out, name), {n: ("BF16", t) for n, t in sel.items()}, out_meta)
        entries.append({"model": model["slug"], "layer": layer["layer"], "file": name,
                        "tokens": args.tokens, "q_heads": q_heads, "kv_heads": kv_heads,
                        "head_dim_model": hd, "softmax_scale": scale,
                        "sha256": st_io.sha256_file(os.path.join(args.out, name))})
    with open(os.path.join(args.out, "pack.json"), "w") as f:
        json.dump({"text_sha256": manifest["text_sha256"], "files": entries,
                   "layout": "BF16 q, k, v (1, tokens, h, 128); q and k post-RoPE; head_dim-64 models "
                             "zero-padded to 128 (softmax_scale in the file's metadata)"}, f, indent=1)
    total = sum(os.path.getsize(os.path.join(args.out, e["file"])) for e in entries)
    print(f"packed {len(entries)} files, {total / 2**20:.1f} MiB, into {os.path.relpath(args.out, REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

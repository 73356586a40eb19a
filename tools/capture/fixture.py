#!/usr/bin/env python3
"""Cuts the committed fixture out of the full captures: per (model, layer) one KV head and one
of its query heads over the first --tokens tokens, BF16 (1, tokens, 1, 128) each.

  python tools/capture/fixture.py            # every model in data/captures.json

The KV head is the one whose K has the largest per-channel |mean| (the outlier a quantizer must
survive); the query head is the one of its group with the most attention mass on token 0. The
metadata carries FP64 figures of this slice's causal attention (mean entropy, mean mass on
token 0, output RMS), which tests/cpu/test_captures.cc recomputes with the C++ reference.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

import st_io

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURE_DIR = os.path.join(REPO, "data", "fixtures")
FIXTURE_BUDGET = 10 * 2**20


def slice_attention_f64(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> dict:
    """Causal attention of one head pair in FP64: q, k, v (s, d)."""
    s, d = q.shape
    sc = (q.astype(np.float64) @ k.astype(np.float64).T) / np.sqrt(d)
    sc[np.triu_indices(s, 1)] = -np.inf
    m = sc.max(axis=1, keepdims=True)
    p = np.exp(sc - m)
    den = p.sum(axis=1, keepdims=True)
    p /= den
    o = p @ v.astype(np.float64)
    logp = np.log(np.where(p > 0, p, 1.0))
    return {"ref_mean_entropy_nats": float(-(p * logp).sum(axis=1).mean()),
            "ref_mean_mass_on_token0": float(p[:, 0].mean()),
            "ref_out_rms": float(np.sqrt((o ** 2).mean()))}


def make_fixture(model: dict, layer: dict, tokens: int) -> tuple[str, dict]:
    tensors, meta = st_io.read(os.path.join(REPO, layer["file"]))
    q, k, v = (tensors[n][0, :tokens] for n in ("q", "k", "v"))  # BF16 codes (s, h, d)
    kf = st_io.bf16_to_f32(k)
    kv_head = int(np.argmax(np.abs(kf.mean(axis=0)).max(axis=1)))
    rep = model["q_heads"] // model["kv_heads"]
    group = range(kv_head * rep, (kv_head + 1) * rep)
    sinks = [layer["attention"]["mass_on_token0_per_q_head"][h] for h in group]
    q_head = group[int(np.argmax(sinks))]
    sl = {"q": q[:, q_head:q_head + 1], "k": k[:, kv_head:kv_head + 1], "v": v[:, kv_head:kv_head + 1]}
    ref = slice_attention_f64(*(st_io.bf16_to_f32(sl[n])[:, 0] for n in ("q", "k", "v")))
    out_meta = {**meta, "tokens": tokens, "q_heads": 1, "kv_heads": 1,
                "source_q_head": q_head, "source_kv_head": kv_head,
                "source_file": layer["file"], "source_tokens": meta["tokens"],
                "selection": "kv head with the largest per-channel |mean| of K; query head of its "
                             "group with the most attention mass on token 0 (full sequence)",
                **{k_: f"{v_:.17g}" for k_, v_ in ref.items()}}
    for n in ("q", "k", "v"):
        out_meta[f"sha256_{n}"] = st_io.sha256_array(np.ascontiguousarray(sl[n][None]))
    name = f"{model['slug']}-layer{layer['layer']:02d}.safetensors"
    path = os.path.join(FIXTURE_DIR, name)
    st_io.write(path, {n: ("BF16", np.ascontiguousarray(sl[n][None])) for n in ("q", "k", "v")},
                out_meta)
    return path, {"model": model["slug"], "layer": layer["layer"], "file": os.path.relpath(path, REPO),
                  "tokens": tokens, "q_head": q_head, "kv_head": kv_head, **ref,
                  "sha256": st_io.sha256_file(path)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--models", default="all", help="'all' or a comma list of slugs (the other "
                    "models' fixtures stay as listed)")
    args = ap.parse_args(argv)
    manifest_path = os.path.join(REPO, "data", "captures.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    chosen = {m["slug"] for m in manifest["models"]} if args.models == "all" else set(args.models.split(","))
    entries = [e for e in manifest.get("fixtures", []) if e["model"] not in chosen]
    for model in manifest["models"]:
        if model["slug"] not in chosen:
            continue
        for layer in model["layers"]:
            path, entry = make_fixture(model, layer, args.tokens)
            entries.append(entry)
            print(f"wrote {entry['file']} ({os.path.getsize(path) / 2**20:.2f} MiB): q head "
                  f"{entry['q_head']}, kv head {entry['kv_head']}")
    total = sum(os.path.getsize(os.path.join(REPO, e["file"])) for e in entries)
    if total > FIXTURE_BUDGET:
        raise SystemExit(f"fixtures take {total / 2**20:.1f} MiB, over the 10 MiB budget")
    manifest["fixtures"] = entries
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"fixtures: {len(entries)} files, {total / 2**20:.2f} MiB in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())

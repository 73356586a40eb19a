#!/usr/bin/env python3
"""Cuts the study's subsets out of the full captures (data/cache/captures/<model>/layerNN.safetensors,
BF16 q, k, v shaped (1, 8192, h, 128)) into data/cache/study/ (git-ignored):

  <model>-LNN-prefix<P>   every head, the first P tokens as queries and keys: a complete causal
                          attention of a shorter text; the same subset the GPU pack
                          (tools/capture/pack.py default) carries, so the kernel's run on the H200
                          and this study see the same data.
  <model>-LNN-tail<T>     every head, the last T tokens as queries against all the keys: the
                          long-context rows (bottom-right causal alignment keeps them exactly the
                          rows of the full causal attention), at the same cost as the prefix.
  <model>-LNN-prefix<P>-hH  query head H alone with its KV head (for the per-head attribution).

The BF16 bytes are copied, never converted. Prints what it wrote; --check only lists.

usage: lab/study/make_subsets.py [--prefix 2048] [--tail 512] [--per-head] [--out data/cache/study]
"""
import argparse
import json
import pathlib
import struct
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]


def read_safetensors(path):
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, t in header.items():
        if t["dtype"] != "BF16":
            raise SystemExit(f"{path}: tensor {name} is {t['dtype']}, expected BF16")
        b, e = t["data_offsets"]
        tensors[name] = np.frombuffer(raw, dtype=np.uint16, count=(e - b) // 2, offset=8 + n + b).reshape(t["shape"])
    return tensors, meta


def write_safetensors(path, tensors, meta):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr, dtype=np.uint16)
        header[name] = {"dtype": "BF16", "shape": list(arr.shape), "data_offsets": [off, off + arr.nbytes]}
        blobs.append(arr.tobytes())
        off += arr.nbytes
    header["__metadata__"] = {k: str(v) for k, v in meta.items()}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--captures", type=pathlib.Path, default=ROOT / "data/cache/captures")
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "data/cache/study")
    ap.add_argument("--prefix", type=int, default=2048)
    ap.add_argument("--tail", type=int, default=512)
    ap.add_argument("--per-head", action="store_true", help="also one file per query head (prefix)")
    args = ap.parse_args()
    files = sorted(args.captures.glob("*/layer*.safetensors"))
    if not files:
        sys.exit(f"no captures under {args.captures}: run tools/capture/capture_all.sh")
    args.out.mkdir(parents=True, exist_ok=True)
    for f in files:
        model, layer = f.parent.name, int(f.stem.replace("layer", ""))
        t, meta = read_safetensors(f)
        q, k, v = t["q"], t["k"], t["v"]
        s, h, hk = q.shape[1], q.shape[2], k.shape[2]
        base = f"{model}-L{layer:02d}"
        sub = dict(meta, source=str(f.relative_to(ROOT)), model=model, layer=layer)
        p = min(args.prefix, s)
        outs = {f"{base}-prefix{p}": ({"q": q[:, :p], "k": k[:, :p], "v": v[:, :p]},
                                      dict(sub, subset=f"tokens [0, {p}) as queries and keys, all heads"))}
        if args.tail:
            tl = min(args.tail, s)
            outs[f"{base}-tail{tl}"] = ({"q": q[:, s - tl:], "k": k, "v": v},
                                        dict(sub, subset=f"queries [{s - tl}, {s}) against keys [0, {s}), all heads"))
        if args.per_head:
            for qh in range(h):
                kh = qh // (h // hk)
                outs[f"{base}-prefix{p}-h{qh:02d}"] = (
                    {"q": q[:, :p, qh:qh + 1], "k": k[:, :p, kh:kh + 1], "v": v[:, :p, kh:kh + 1]},
                    dict(sub, subset=f"tokens [0, {p}), query head {qh}, kv head {kh}", q_head=qh, kv_head=kh))
        for name, (tens, m) in outs.items():
            path = args.out / f"{name}.safetensors"
            write_safetensors(path, tens, m)
            print(f"{path.relative_to(ROOT)}: q {tuple(tens['q'].shape)} k/v {tuple(tens['k'].shape)}")


if __name__ == "__main__":
    main()

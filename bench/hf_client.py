#!/usr/bin/env python3
"""A real client: fp8attn registered as a transformers attention implementation (fp8attn.hf),
inside a Qwen2-architecture model built from a config at Qwen2.5-1.5B's width (hidden 1536,
12 query heads / 2 KV heads, head dim 128), a few layers, random weights, one causal forward
over --tokens tokens. The same weights run with transformers' sdpa (BF16), and with sdpa in
FP32 as the yardstick of what BF16 itself costs. Reports the logits' errors (max / mean abs,
relative RMS, top-1 agreement) and the attention time per forward (CUDA events around every
attention call, summed over layers; median over --runs forwards).

  python3 bench/hf_client.py --tokens 4096 --layers 4 --out client.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def _timed(fn, events: list):
    def wrapper(*args, **kwargs):
        import torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn(*args, **kwargs)
        end.record()
        events.append((start, end))
        return out
    return wrapper


def _errors(logits, ref) -> dict:
    import torch
    x, r = logits.double(), ref.double()
    diff = (x - r).abs()
    return {"max_abs": float(diff.max()), "mean_abs": float(diff.mean()),
            "rel_rms": float((diff.pow(2).mean() / r.pow(2).mean()).sqrt()),
            "top1_agreement": float((x.argmax(-1) == r.argmax(-1)).double().mean()),
            "finite": bool(torch.isfinite(logits).all())}


def run(tokens: int = 4096, layers: int = 4, runs: int = 3, seed: int = 0,
        mode: str = "e4m3") -> dict:
    import torch
    import transformers
    from transformers import AttentionInterface, AutoModelForCausalLM, Qwen2Config
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    import fp8attn.hf

    events: dict[str, list] = {"fp8attn": [], "sdpa": []}
    name = fp8attn.hf.register("fp8attn_client", mode=mode)  # attention and mask functions
    # The same attention function again, timed.
    AttentionInterface.register(name, _timed(fp8attn.hf.make_attention_forward(mode),
                                             events["fp8attn"]))
    AttentionInterface.register("sdpa_timed", _timed(sdpa_attention_forward, events["sdpa"]))
    try:
        from transformers.masking_utils import AttentionMaskInterface, sdpa_mask
        AttentionMaskInterface.register("sdpa_timed", sdpa_mask)
    except ImportError:
        pass

    cfg = Qwen2Config(hidden_size=1536, intermediate_size=8960, num_hidden_layers=layers,
                      num_attention_heads=12, num_key_value_heads=2, head_dim=128,
                      max_position_embeddings=max(32768, tokens), vocab_size=151936,
                      tie_word_embeddings=True)
    torch.manual_seed(seed)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa_timed")
    model.float()
    model.eval()
    ids = torch.randint(0, cfg.vocab_size, (1, tokens), device="cuda",
                        generator=torch.Generator(device="cuda").manual_seed(seed + 1))

    def set_impl(impl: str):
        if hasattr(model, "set_attn_implementation"):
            model.set_attn_implementation(impl)
        else:
            model.config._attn_implementation = impl

    @torch.no_grad()
    def forward(impl: str, n: int):
        set_impl(impl)
        key = "fp8attn" if impl == name else "sdpa"
        logits, per_forward = None, []
        for _ in range(n):
            events[key].clear()
            logits = model(input_ids=ids).logits
            torch.cuda.synchronize()
            per_forward.append(sum(s.elapsed_time(e) for s, e in events[key]))
        return logits.float(), per_forward, len(events[key])

    t0 = time.time()
    ref32, _, _ = forward("sdpa_timed", 1)                   # FP32 weights and activations
    model.to(torch.bfloat16)
    ref16, sdpa_ms, calls = forward("sdpa_timed", runs + 1)  # first run: warm-up
    got, fp8_ms, fp8_calls = forward(name, runs + 1)
    return {
        "model": {"architecture": "Qwen2", "hidden": 1536, "heads": 12, "kv_heads": 2,
                  "head_dim": 128, "layers": layers, "tokens": tokens, "weights": "random",
                  "seed": seed, "dtype": "bfloat16", "causal": True, "mode": mode},
        "logits_fp8attn_vs_sdpa_bf16": _errors(got, ref16),
        "logits_fp8attn_vs_sdpa_fp32": _errors(got, ref32),
        "logits_sdpa_bf16_vs_sdpa_fp32": _errors(ref16, ref32),
        "attention_ms_per_forward": {
            "fp8attn_median": statistics.median(fp8_ms[1:]), "sdpa_bf16_median": statistics.median(sdpa_ms[1:]),
            "fp8attn_runs": fp8_ms[1:], "sdpa_bf16_runs": sdpa_ms[1:],
            "attention_calls_per_forward": {"fp8attn": fp8_calls, "sdpa": calls},
            "what": "sum over the layers of CUDA-event time around each attention call "
                    "(fp8attn: pre-pass + kernel + layout views; sdpa: transformers' "
                    "sdpa_attention_forward)"},
        "transformers": transformers.__version__, "wall_s": time.time() - t0,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mode", default="e4m3")
    ap.add_argument("--out", help="JSON file to write")
    args = ap.parse_args()
    res = run(args.tokens, args.layers, args.runs, mode=args.mode)
    text = json.dumps(res, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

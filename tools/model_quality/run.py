#!/usr/bin/env python3
"""Model-level accuracy: a model's full forward pass over the fixed text with the attention of
every layer computed by one scheme's CPU emulation, against the pass with exact attention.

  python tools/model_quality/run.py --model smollm2-135m --tokens 1024
  python tools/model_quality/run.py --model qwen2.5-coder-1.5b --tokens 1024 --acc-rule results/wgmma-accum.json

Schemes (SCHEMES below): exact (FP32 attention on the BF16 Q, K, V), bf16-flash (FA3-BF16
numerics), fa3-fp8 (FA3 FP8: per-(batch, KV head) amax/448 scales), fp8attn-default (the
library's pre-pass + E4M3-P kernel numerics), fp8attn-accurate (the library's accurate mode: the
same pre-pass writing V^T in FP16, P in FP16), and as an extra fp8attn-accurate-e4m3v (the earlier
accurate mode: V^T in E4M3, P in FP16).
The FP8 products follow the tensor core's accumulation rule: --acc-rule takes the rule the
microbenchmark measured (tools/wgmma_accum/rule.py reads it); without it the model's assumed
rule is used and the results say so. Head dim 64 runs zero-padded to 128 with the softmax scale
kept at 1/sqrt(64), as the kernel would run it.

Per scheme: perplexity of the predicted tokens; against the exact run: next-token KL(exact ||
scheme) mean and p99 over positions, top-1 agreement. Checkpoints after every layer under
data/cache/model-quality/<model>-<tokens>/<scheme>/ (an interrupted run resumes there), one
progress line per layer. Writes the model's records into results/model-quality.json: those of
the schemes run replace their own, the others are kept. A run of every scheme records its
provenance per model; a run of some schemes records it in each of its records.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time

import numpy as np

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tools", "capture"))
sys.path.insert(0, os.path.join(REPO, "tools", "wgmma_accum"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cache_guard  # noqa: E402
import forward  # noqa: E402
import provenance  # noqa: E402
from gguf_model import GgufModel  # noqa: E402
from weights import MODELS, ensure_gguf  # noqa: E402
import rule as acc_rule_mod  # noqa: E402

KERNEL_HEAD_DIM = 128
# name -> (model scheme, which products are FP8 tensor-core products: "qk", "pv")
SCHEMES = {
    "exact": (None, ()),
    "bf16-flash": ("bf16-flash", ()),
    "fa3-fp8": ("fa3-fp8", ("qk", "pv")),
    "fp8attn-default": ("fp8attn-default", ("qk", "pv")),
    "fp8attn-accurate": ("fp8attn-accurate", ("qk",)),
    "fp8attn-accurate-e4m3v": ("fp8attn-accurate-e4m3v", ("qk",)),
}


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def load_lib(path: str):
    lib = ctypes.CDLL(path)
    f = lib.fp8attn_model_attention
    fp = ctypes.POINTER(ctypes.c_float)
    f.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, fp, fp, fp,
                  ctypes.c_float, ctypes.c_int, fp]
    f.restype = ctypes.c_int
    lib.fp8attn_model_last_error.restype = ctypes.c_char_p
    lib.fp8attn_model_scheme_summary.argtypes = [ctypes.c_char_p]
    lib.fp8attn_model_scheme_summary.restype = ctypes.c_char_p
    return lib


def scheme_summary(lib, spec: str | None) -> str:
    if spec is None:
        return "numpy fp32 exact attention on BF16 q, k, v"
    got = lib.fp8attn_model_scheme_summary(spec.encode())
    if got is None:
        raise SystemExit(f"{spec}: {lib.fp8attn_model_last_error().decode()}")
    return got.decode()


def scheme_spec(name: str, acc_keys: str) -> str | None:
    base, fp8_products = SCHEMES[name]
    if base is None:
        return None
    keys = "".join(f":acc_{p}=aligned" for p in fp8_products)
    return base + (keys + acc_keys if keys else "")


def pad_head_dim(x: np.ndarray) -> np.ndarray:
    """(s, h, d) -> (s, h, 128) with zeros: Q K^T and the first d channels of O are unchanged."""
    d = x.shape[-1]
    if d == KERNEL_HEAD_DIM:
        return np.ascontiguousarray(x, dtype=np.float32)
    out = np.zeros(x.shape[:-1] + (KERNEL_HEAD_DIM,), np.float32)
    out[..., :d] = x
    return out


def emulated_attention(lib, spec: str):
    def attention(q, k, v, scale):
        s, h, d = q.shape
        hkv = k.shape[1]
        if k.shape[0] != s:
            raise ValueError("model-quality runs whole sequences (no KV cache)")
        qp, kp, vp = pad_head_dim(q), pad_head_dim(k), pad_head_dim(v)
        o = np.empty((s, h, KERNEL_HEAD_DIM), np.float32)
        fp = ctypes.POINTER(ctypes.c_float)
        rc = lib.fp8attn_model_attention(spec.encode(), s, h, hkv, KERNEL_HEAD_DIM,
                                         qp.ctypes.data_as(fp), kp.ctypes.data_as(fp),
                                         vp.ctypes.data_as(fp), ctypes.c_float(scale), 1,
                                         o.ctypes.data_as(fp))
        if rc != 0:
            raise RuntimeError(lib.fp8attn_model_last_error().decode())
        return np.ascontiguousarray(o[..., :d])
    return attention


def run_scheme(model: GgufModel, ids: np.ndarray, name: str, attention, work: str) -> np.ndarray:
    """The final-normed hidden states of the pass, resuming from the last finished layer."""
    cfg = model.config
    os.makedirs(work, exist_ok=True)
    state = os.path.join(work, "state.json")
    x_path = os.path.join(work, "x.npy")
    start = 0
    if os.path.exists(state):
        start = json.load(open(state))["layers_done"]
        x = np.load(x_path)
        log(f"  {name}: resuming after layer {start}/{cfg.n_layers}")
    else:
        x = forward.embed(model, ids)
    positions = np.arange(len(ids))
    for i in range(start, cfg.n_layers):
        t = time.time()
        x = forward.block(cfg, model.layer(i), i, x, positions, attention=attention)
        np.save(x_path + ".tmp.npy", x)
        os.replace(x_path + ".tmp.npy", x_path)
        with open(state + ".tmp", "w") as f:
            json.dump({"layers_done": i + 1}, f)
        os.replace(state + ".tmp", state)
        log(f"  {name}: layer {i + 1}/{cfg.n_layers} in {time.time() - t:.1f} s")
    return forward.rms_norm(x, model.weight("output_norm.weight"), cfg.rms_eps)


def log_probs(model: GgufModel, hidden: np.ndarray, chunk: int = 256):
    """Yields (t0, log-softmax rows) of the next-token distributions, chunk rows at a time."""
    w_out = model.weight("output.weight")
    for t0 in range(0, hidden.shape[0], chunk):
        logits = (hidden[t0:t0 + chunk] @ w_out.T).astype(np.float64)
        logits -= logits.max(axis=1, keepdims=True)
        logits -= np.log(np.exp(logits).sum(axis=1, keepdims=True))
        yield t0, logits


def score(model, hidden, targets, exact_path: str | None, save_exact: str | None) -> dict:
    """NLL per position; with the exact run's log-probs, KL(exact || this) and top-1 agreement."""
    n = len(targets)
    nll = np.empty(n)
    kl = np.full(n, np.nan)
    agree = np.zeros(n, bool)
    ref = np.load(exact_path, mmap_mode="r") if exact_path else None
    store = None
    if save_exact:
        store = np.lib.format.open_memmap(save_exact + ".tmp.npy", "w+", np.float32,
                                          (n, model.config.vocab_size))
    for t0, lp in log_probs(model, hidden[:n]):
        t1 = t0 + lp.shape[0]
        nll[t0:t1] = -lp[np.arange(lp.shape[0]), targets[t0:t1]]
        if store is not None:
            store[t0:t1] = lp[:, :store.shape[1]]
        if ref is not None:
            r = np.asarray(ref[t0:t1], np.float64)
            kl[t0:t1] = (np.exp(r) * (r - lp[:, :r.shape[1]])).sum(axis=1)
            agree[t0:t1] = r.argmax(axis=1) == lp.argmax(axis=1)
    if store is not None:
        store.flush()
        del store
        os.replace(save_exact + ".tmp.npy", save_exact)
    out = {"nll_mean": float(nll.mean()), "ppl": float(np.exp(nll.mean()))}
    if ref is not None:
        out.update(kl_mean=float(kl.mean()), kl_p99=float(np.percentile(kl, 99)),
                   top1_agree=float(agree.mean()))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, choices=[m for m in MODELS if "deepseek" not in m])
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--text", default=os.path.join(REPO, "data", "text_sample.txt"))
    ap.add_argument("--acc-rule", default=None, help="results JSON of tools/wgmma_accum/run.sh")
    ap.add_argument("--lib", default=os.path.join(REPO, "build-model", "tools", "model_quality",
                                                  "libfp8attn_model_c.so"))
    ap.add_argument("--results", default=os.path.join(REPO, "results", "model-quality.json"))
    args = ap.parse_args(argv)
    names = args.schemes.split(",")
    if any(n not in SCHEMES for n in names):
        raise SystemExit(f"--schemes: known are {', '.join(SCHEMES)}")
    if "exact" not in names:
        names.insert(0, "exact")  # the reference of every other scheme
    names.sort(key=lambda n: n != "exact")
    rule = acc_rule_mod.rule_from_file(args.acc_rule) if args.acc_rule else acc_rule_mod.ASSUMED
    acc_keys = acc_rule_mod.scheme_keys(rule)
    np.seterr(over="ignore")

    cache = os.path.join(REPO, "data", "cache")
    model = GgufModel(ensure_gguf(args.model, cache, log), os.path.join(cache, "dequant", args.model))
    model.dequantize_all(log)
    text = open(args.text, encoding="utf-8").read()
    ids = np.array(model.encode(text)[: args.tokens])
    if len(ids) < args.tokens:
        raise SystemExit(f"the text gives {len(ids)} tokens, fewer than {args.tokens}")
    lib = load_lib(args.lib)
    work_root = os.path.join(cache, "model-quality", f"{args.model}-{args.tokens}-{rule['tag']}")
    exact_lp = os.path.join(cache, "model-quality", f"{args.model}-{args.tokens}-exact-logprobs.npy")
    log(f"{args.model}: {len(ids)} tokens, {model.config.n_layers} layers, head_dim "
        f"{model.config.head_dim}, schemes {names}, accumulator rule {rule['tag']}")

    metrics = {}
    for name in names:
        work = os.path.join(work_root if name != "exact" else os.path.dirname(exact_lp) +
                            f"/{args.model}-{args.tokens}-exact", name)
        done = os.path.join(work, "metrics.json")
        spec = scheme_spec(name, acc_keys)
        summary = scheme_summary(lib, spec)
        # Checkpoints are reused only if made by this very emulation (cache_guard.py); the exact
        # pass is run.py's own NumPy, no model scheme.
        reused = name == "exact" or cache_guard.claim(work, summary, log)
        if reused and os.path.exists(done) and (name != "exact" or os.path.exists(exact_lp)):
            metrics[name] = json.load(open(done))
            log(f"  {name}: done before ({metrics[name]['ppl']:.4f})")
            continue
        attention = None if spec is None else emulated_attention(lib, spec)
        t = time.time()
        hidden = run_scheme(model, ids, name, attention, work)
        m = score(model, hidden, ids[1:], None if name == "exact" else exact_lp,
                  exact_lp if name == "exact" else None)
        m.update(scheme_spec=spec or "numpy fp32 exact attention on BF16 q, k, v",
                 scheme_summary=summary, seconds=round(time.time() - t, 1))
        with open(done, "w") as f:
            json.dump(m, f, indent=1)
        metrics[name] = m
        log(f"  {name}: ppl {m['ppl']:.4f}" + (f", KL mean {m['kl_mean']:.3e}, top-1 "
                                              f"{m['top1_agree']:.4f}" if "kl_mean" in m else ""))

    ppl0 = metrics["exact"]["ppl"]
    records = []
    for name in names:
        m = metrics[name]
        records.append({"model": args.model, "scheme": name, "tokens": int(len(ids)),
                        "ppl": m["ppl"], "ppl_delta": m["ppl"] - ppl0,
                        "kl_mean": m.get("kl_mean", 0.0), "kl_p99": m.get("kl_p99", 0.0),
                        "top1_agree": m.get("top1_agree", 1.0), "scheme_spec": m["scheme_spec"],
                        "scheme_summary": m.get("scheme_summary"),
                        "head_dim": model.config.head_dim,
                        "padded_to": KERNEL_HEAD_DIM if model.config.head_dim < KERNEL_HEAD_DIM else None,
                        "accumulator_rule": rule, "seconds": m["seconds"]})
    doc = {"records": []}
    if os.path.exists(args.results):
        doc = json.load(open(args.results))
    prov = provenance.record(sys.argv)
    if set(SCHEMES) <= set(names):
        doc["records"] = [r for r in doc.get("records", []) if r["model"] != args.model] + records
        doc.setdefault("provenance", {})[args.model] = prov
    else:  # some schemes: theirs replaced, each with its own provenance; the others kept as they are
        records = [{**r, "provenance": prov} for r in records if r["scheme"] != "exact"
                   or not any(o["model"] == args.model and o["scheme"] == "exact"
                              for o in doc.get("records", []))]
        ran = {r["scheme"] for r in records}
        doc["records"] = [r for r in doc.get("records", [])
                          if not (r["model"] == args.model and r["scheme"] in ran)] + records
    doc["note"] = ("KL(exact || scheme) of the next-token distributions per position (nats), mean "
                   "and 99th percentile; top1_agree: share of positions whose argmax equals the "
                   "exact run's; ppl over the tokens - 1 predicted tokens of the text's prefix")
    with open(args.results, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    log(f"wrote {os.path.relpath(args.results, REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

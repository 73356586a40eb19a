"""What the manifest says about each captured tensor, and the manifest itself."""
from __future__ import annotations

import json
import os

import numpy as np


def _r(x: float) -> float:
    return float(f"{float(x):.5g}")


def channel_stats(x: np.ndarray) -> dict[str, list[float]]:
    """x (s, h, d): per (head, channel) over tokens, head-major lists of h * d values."""
    flat = x.reshape(x.shape[0], -1).astype(np.float64)
    return {"mean": [_r(v) for v in flat.mean(axis=0)],
            "std": [_r(v) for v in flat.std(axis=0)],
            "amax": [_r(v) for v in np.abs(flat).max(axis=0)]}


def tensor_summary(x: np.ndarray, top: int = 4) -> dict:
    """The numbers a quantizer cares about: range, channel bias against spread, outliers."""
    s, h, d = x.shape
    flat = x.reshape(s, h * d).astype(np.float64)
    mean, std, amax = flat.mean(axis=0), flat.std(axis=0), np.abs(flat).max(axis=0)
    order = np.argsort(-np.abs(mean))[:top]
    token_norm = np.sqrt((flat ** 2).sum(axis=1) / h)  # per-token RMS over heads of |x_head|
    return {
        "shape": [1, s, h, d],
        "amax": _r(np.abs(flat).max()),
        "rms": _r(np.sqrt((flat ** 2).mean())),
        "channel_abs_mean_max": _r(np.abs(mean).max()),
        "channel_abs_mean_median": _r(np.median(np.abs(mean))),
        "channel_std_median": _r(np.median(std)),
        "channel_amax_max": _r(amax.max()),
        "channel_amax_median": _r(np.median(amax)),
        "top_mean_channels": [{"head": int(i // d), "channel": int(i % d), "mean": _r(mean[i]),
                               "std": _r(std[i]), "amax": _r(amax[i])} for i in order],
        "token0_norm_over_median": _r(token_norm[0] / np.median(token_norm)),
    }


def update_manifest(path: str, entry: dict, prov: dict, text_sha256: str, tokens: int,
                    text_path: str) -> None:
    """Replaces (or adds) one model's entry; the other models' entries stay as they were."""
    manifest = {}
    if os.path.exists(path):
        with open(path) as f:
            manifest = json.load(f)
    if manifest.get("text_sha256", text_sha256) != text_sha256 or manifest.get("tokens", tokens) != tokens:
        manifest = {}  # another text or length: the old entries no longer belong
    models = [m for m in manifest.get("models", []) if m.get("slug") != entry["slug"]]
    models.append({**entry, "provenance": prov})
    manifest = {
        "text": text_path, "text_sha256": text_sha256, "tokens": tokens,
        "layout": "safetensors, BF16 tensors q, k, v shaped (b, s, h, d) = (1, tokens, heads, head_dim)",
        "regenerate": "tools/capture/capture_all.sh",
        "models": sorted(models, key=lambda m: m["slug"]),
    }
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def attention_by_head(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, chunk: int = 512,
                      dtype=np.float32):
    """Plain FP32 causal attention, one query head at a time after expanding K and V to every
    query head (np.repeat): a second implementation, apart from forward.causal_attention, for
    checking the capture files. q (s, h, d), k and v (s, h_kv, d), sq == sk; computed in dtype.

    Returns out (s, h, d), and per query head the means over rows of the attention entropy
    (nats) and of the probability on token 0."""
    s, h, d = q.shape
    rep = h // k.shape[1]
    q = q.astype(dtype)
    k_full = np.repeat(k.astype(dtype), rep, axis=1)  # query head i -> kv head i // rep
    v_full = np.repeat(v.astype(dtype), rep, axis=1)
    out = np.empty_like(q)
    entropy, sink = np.zeros(h), np.zeros(h)
    for head in range(h):
        kh = np.ascontiguousarray(k_full[:, head])
        vh = np.ascontiguousarray(v_full[:, head])
        for a in range(0, s, chunk):
            b = min(s, a + chunk)
            sc = (q[a:b, head] @ kh[:b].T) * dtype(scale)  # (rows, keys)
            visible = np.arange(b)[None, :] <= np.arange(a, b)[:, None]
            sc = np.where(visible, sc, -np.inf)
            p = np.exp(sc - sc.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            out[a:b, head] = p @ vh[:b]
            logp = np.log(np.where(p > 0, p, 1.0))
            entropy[head] += -(p * logp).sum()
            sink[head] += p[:, 0].sum()
    return out, entropy / s, sink / s

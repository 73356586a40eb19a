"""The decoder forward pass in NumPy FP32 (Qwen2 and Llama layouts), with a hook that hands out
post-RoPE Q, K (before any GQA expansion), V and the attention output of chosen layers.

Shapes follow the capture files: activations are (tokens, heads, head_dim).
"""
from __future__ import annotations

import numpy as np

from gguf_model import GgufModel, ModelConfig
from st_io import bf16_to_f32, f32_to_bf16

ATTN_QUERY_CHUNK = 256  # rows of Q per score block: bounds the (rows x keys) score matrix
MLP_TOKEN_CHUNK = 2048  # tokens per MLP block: bounds the (tokens x d_ff) intermediates


def round_bf16(x: np.ndarray) -> np.ndarray:
    """FP32 values rounded (RNE) to the nearest BF16, kept in FP32."""
    return bf16_to_f32(f32_to_bf16(x)).reshape(x.shape)


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    inv = 1.0 / np.sqrt(np.mean(np.square(x, dtype=np.float32), axis=-1, keepdims=True) + eps)
    return (x * inv) * w


def rope(x: np.ndarray, positions: np.ndarray, theta: float, neox: bool) -> np.ndarray:
    """x: (s, h, d). Angles in FP64, applied in FP32."""
    d = x.shape[-1]
    inv_freq = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = positions.astype(np.float64)[:, None] * inv_freq[None, :]  # (s, d/2)
    cos = np.cos(ang).astype(np.float32)[:, None, :]
    sin = np.sin(ang).astype(np.float32)[:, None, :]
    if neox:
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
    out = np.empty_like(x)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    out[..., 0::2] = x1 * cos - x2 * sin
    out[..., 1::2] = x2 * cos + x1 * sin
    return out


def causal_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float,
                     want_stats: bool = False):
    """Exact FP32 softmax attention, bottom-right causal (query i sees keys j <= i + sk - sq).

    q: (sq, h, d); k, v: (sk, h_kv, d). Query head i reads KV head i // (h / h_kv).
    Returns out (sq, h, d) and, with want_stats, per query head the mean over query rows of the
    attention entropy (nats) and of the probability on key 0.
    """
    sq, n_heads, d = q.shape
    sk, n_kv, _ = k.shape
    rep = n_heads // n_kv
    if rep * n_kv != n_heads or sk < sq:
        raise ValueError(f"bad attention shapes q {q.shape} k {k.shape}")
    off = sk - sq
    out = np.empty((sq, n_heads, d), np.float32)
    entropy = np.zeros(n_heads)
    sink = np.zeros(n_heads)
    for g in range(n_kv):
        kg = np.ascontiguousarray(k[:, g, :], dtype=np.float32)  # (sk, d)
        vg = np.ascontiguousarray(v[:, g, :], dtype=np.float32)
        heads = slice(g * rep, (g + 1) * rep)
        for a in range(0, sq, ATTN_QUERY_CHUNK):
            b = min(a + ATTN_QUERY_CHUNK, sq)
            n_keys = b + off
            rows = b - a
            qc = np.ascontiguousarray(q[a:b, heads, :].transpose(1, 0, 2), dtype=np.float32)
            s = (qc.reshape(rep * rows, d) @ kg[:n_keys].T).reshape(rep, rows, n_keys)
            s *= np.float32(scale)
            masked = np.arange(n_keys)[None, :] > (np.arange(a, b) + off)[:, None]  # (rows, keys)
            s_masked = np.where(masked[None], np.float32(-np.inf), s)
            mx = s_masked.max(axis=-1, keepdims=True)
            p = np.exp(s_masked - mx)
            den = p.sum(axis=-1, keepdims=True)
            p /= den
            o = p.reshape(rep * rows, n_keys) @ vg[:n_keys]
            out[a:b, heads, :] = o.reshape(rep, rows, d).transpose(1, 0, 2)
            if want_stats:
                # H = -sum p log p = max + log(den) - sum p * s  (p is 0 where masked)
                ps = np.einsum("hrk,hrk->hr", p, np.where(masked[None], 0.0, s).astype(np.float32))
                h_rows = mx[..., 0].astype(np.float64) + np.log(den[..., 0]) - ps
                entropy[heads] += h_rows.sum(axis=1)
                sink[heads] += p[..., 0].sum(axis=1)
    if want_stats:
        return out, entropy / sq, sink / sq
    return out


class KvCache:
    def __init__(self, n_layers: int):
        self.k = [None] * n_layers
        self.v = [None] * n_layers

    def append(self, layer: int, k: np.ndarray, v: np.ndarray):
        if self.k[layer] is None:
            self.k[layer], self.v[layer] = k, v
        else:
            self.k[layer] = np.concatenate([self.k[layer], k])
            self.v[layer] = np.concatenate([self.v[layer], v])
        return self.k[layer], self.v[layer]


def _linear(x: np.ndarray, w: dict, name: str) -> np.ndarray:
    y = x @ w[name + ".weight"].T
    bias = w.get(name + ".bias")
    if bias is not None:
        y += bias
    return y


def block(cfg: ModelConfig, w: dict, layer: int, x: np.ndarray, positions: np.ndarray,
          cache: KvCache | None = None, capture: dict | None = None, attention=None) -> np.ndarray:
    """One decoder layer on x (s, d_model), in place-free; returns the new residual stream.

    attention(q, k, v, scale) -> o replaces the exact FP32 attention on the BF16 Q, K, V (the
    model-quality study runs each scheme's emulation there)."""
    s = x.shape[0]
    hd = cfg.head_dim
    h = rms_norm(x, w["attn_norm.weight"], cfg.rms_eps)
    q = _linear(h, w, "attn_q").reshape(s, cfg.n_heads, hd)
    k = _linear(h, w, "attn_k").reshape(s, cfg.n_kv_heads, hd)
    v = _linear(h, w, "attn_v").reshape(s, cfg.n_kv_heads, hd)
    q = rope(q, positions, cfg.rope_theta, cfg.rope_neox)
    k = rope(k, positions, cfg.rope_theta, cfg.rope_neox)
    if capture is not None:
        # What the attention would give on unrounded inputs: shows what BF16 alone costs.
        capture["o_fp32_inputs"] = causal_attention(q, k, v, 1.0 / np.sqrt(hd))
    # A BF16 model hands its attention BF16 Q, K, V, and so will the FP8 pipeline: round here,
    # so that the captured tensors are exactly what this model's attention consumed.
    q, k, v = round_bf16(q), round_bf16(k), round_bf16(v)
    k_all, v_all = (k, v) if cache is None else cache.append(layer, k, v)
    o = (attention or causal_attention)(q, k_all, v_all, 1.0 / np.sqrt(hd))
    if capture is not None:
        capture.update(q=q, k=k, v=v, o=o)
    x = x + _linear(o.reshape(s, cfg.n_heads * hd), w, "attn_output")
    h = rms_norm(x, w["ffn_norm.weight"], cfg.rms_eps)
    for a in range(0, s, MLP_TOKEN_CHUNK):
        hc = h[a:a + MLP_TOKEN_CHUNK]
        gate = hc @ w["ffn_gate.weight"].T
        up = hc @ w["ffn_up.weight"].T
        gate *= up / (1.0 + np.exp(-gate))  # SwiGLU: silu(gate) * up
        x[a:a + MLP_TOKEN_CHUNK] += gate @ w["ffn_down.weight"].T
    return x


def embed(model: GgufModel, ids) -> np.ndarray:
    return np.array(model.weight("token_embd.weight")[np.asarray(ids)], dtype=np.float32)


def forward_hidden(model: GgufModel, ids, capture_layers=(), on_capture=None, log=print,
                   cache: KvCache | None = None, start: int = 0) -> np.ndarray:
    """Runs every layer; returns the final-normed hidden states (s, d_model).

    on_capture(layer, dict(q, k, v, o)) is called for each layer in capture_layers.
    """
    cfg = model.config
    x = embed(model, ids)
    positions = np.arange(start, start + len(ids))
    for i in range(cfg.n_layers):
        cap = {} if i in capture_layers else None
        x = block(cfg, model.layer(i), i, x, positions, cache, cap)
        if cap is not None and on_capture is not None:
            on_capture(i, cap)
        if log is not None:
            log(f"  layer {i + 1}/{cfg.n_layers} done")
    return rms_norm(x, model.weight("output_norm.weight"), cfg.rms_eps)


def next_token_nll(model: GgufModel, hidden: np.ndarray, targets: np.ndarray,
                   vocab_chunk: int = 16384, token_chunk: int = 2048) -> np.ndarray:
    """-log p(targets[t] | hidden[t]) for every t, with the logits computed in vocab blocks
    (a running log-sum-exp), so the (tokens x vocab) matrix never exists whole."""
    w_out = model.weight("output.weight")
    n = hidden.shape[0]
    lse_max = np.full(n, -np.inf)
    lse_sum = np.zeros(n)
    target_logit = np.zeros(n)
    for v0 in range(0, w_out.shape[0], vocab_chunk):
        wc = np.array(w_out[v0:v0 + vocab_chunk])
        for t0 in range(0, n, token_chunk):
            t1 = min(n, t0 + token_chunk)
            logits = (hidden[t0:t1] @ wc.T).astype(np.float64)
            m_new = np.maximum(lse_max[t0:t1], logits.max(axis=1))
            lse_sum[t0:t1] = (lse_sum[t0:t1] * np.exp(lse_max[t0:t1] - m_new)
                              + np.exp(logits - m_new[:, None]).sum(axis=1))
            lse_max[t0:t1] = m_new
            tt = targets[t0:t1]
            hit = (tt >= v0) & (tt < v0 + wc.shape[0])
            target_logit[t0:t1][hit] = logits[np.nonzero(hit)[0], tt[hit] - v0]
    return lse_max + np.log(lse_sum) - target_logit


def greedy_continuation(model: GgufModel, prompt_ids, n_new: int, log=print) -> list[int]:
    """Greedy decoding with a KV cache: one prefill of the prompt, then one token per step."""
    cfg = model.config
    cache = KvCache(cfg.n_layers)
    w_out = model.weight("output.weight")
    h = forward_hidden(model, prompt_ids, cache=cache, log=None)
    out = []
    pos = len(prompt_ids)
    for step in range(n_new):
        tok = int(np.argmax(h[-1] @ w_out.T))
        out.append(tok)
        if step + 1 < n_new:
            h = forward_hidden(model, [tok], cache=cache, start=pos, log=None)
            pos += 1
        if log is not None and (step + 1) % 16 == 0:
            log(f"  generated {step + 1}/{n_new} tokens")
    return out

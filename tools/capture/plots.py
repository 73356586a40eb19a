#!/usr/bin/env python3
"""Plots for docs/captures.md, from results/captures-channels-<model>.json and data/captures.json.

  python tools/capture/plots.py

docs/img/captures-<model>-kv-channels.png: per (KV head, channel) |mean| and amax of K and V,
one row per captured layer (log scale: the outlier channels stand out).
docs/img/captures-<model>-attention.png: per query head the mean attention entropy and the
mean attention mass on token 0, per captured layer.
"""
from __future__ import annotations

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
IMG = os.path.join(REPO, "docs", "img")


def plot_channels(model: dict, channels: dict) -> str:
    layers = model["layers"]
    fig, axes = plt.subplots(len(layers), 2, figsize=(13, 2.8 * len(layers)), squeeze=False)
    for row, layer in enumerate(layers):
        ch = channels[str(layer["layer"])]
        for col, name in enumerate(("k", "v")):
            ax = axes[row, col]
            mean = np.abs(np.array(ch[name]["mean"]))
            amax = np.array(ch[name]["amax"])
            std = np.array(ch[name]["std"])
            x = np.arange(len(mean))
            ax.plot(x, amax, lw=0.7, color="tab:red", label="amax")
            ax.plot(x, mean, lw=0.9, color="tab:blue", label="|mean|")
            ax.plot(x, std, lw=0.6, color="tab:green", alpha=0.7, label="std")
            ax.set_yscale("log")
            for h in range(1, model["kv_heads"]):
                ax.axvline(h * model["head_dim"], color="k", lw=0.5, ls=":")
            ax.set_title(f"layer {layer['layer']}: {name.upper()} per (kv head, channel)", fontsize=9)
            ax.set_xlim(0, len(mean))
            if row == len(layers) - 1:
                ax.set_xlabel(f"kv head * {model['head_dim']} + channel")
            if row == 0 and col == 0:
                ax.legend(fontsize=8, loc="upper right")
    fig.suptitle(f"{model['name']} ({model['quant']}): K and V channel statistics over "
                 f"{model['perplexity_tokens'] + 1} tokens", fontsize=10)
    fig.tight_layout()
    path = os.path.join(IMG, f"captures-{model['slug']}-kv-channels.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_attention(model: dict) -> str:
    layers = model["layers"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 3.4))
    width = 0.8 / len(layers)
    heads = np.arange(model["q_heads"])
    for i, layer in enumerate(layers):
        att = layer["attention"]
        axes[0].bar(heads + i * width, att["entropy_nats_per_q_head"], width, label=f"layer {layer['layer']}")
        axes[1].bar(heads + i * width, att["mass_on_token0_per_q_head"], width, label=f"layer {layer['layer']}")
    axes[0].set_title("mean attention entropy per query head (nats)", fontsize=9)
    axes[1].set_title("mean attention mass on token 0 per query head", fontsize=9)
    for ax in axes:
        ax.set_xticks(heads + 0.4 - width / 2)
        ax.set_xticklabels(heads)
        ax.set_xlabel("query head")
        ax.legend(fontsize=8)
    axes[0].axhline(np.log((model["perplexity_tokens"] + 1) / np.e), color="k", lw=0.5, ls=":")
    fig.suptitle(f"{model['name']}: attention on the captured BF16 Q, K, V (dotted: log(s/e), "
                 "the mean entropy of uniform causal attention)", fontsize=10)
    fig.tight_layout()
    path = os.path.join(IMG, f"captures-{model['slug']}-attention.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main() -> int:
    with open(os.path.join(REPO, "data", "captures.json")) as f:
        manifest = json.load(f)
    os.makedirs(IMG, exist_ok=True)
    for model in manifest["models"]:
        with open(os.path.join(REPO, "results", f"captures-channels-{model['slug']}.json")) as f:
            channels = json.load(f)["layers"]
        for path in (plot_channels(model, channels), plot_attention(model)):
            print("wrote", os.path.relpath(path, REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())

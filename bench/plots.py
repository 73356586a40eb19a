"""The harness's pictures (matplotlib, Agg): TFLOP/s at every sweep row, and issue 14's
trade-off, error ratio to FA3 BF16 against TFLOP/s at the seed shape, one point per mode and peer,
one panel per dataset. Each returns False when it has nothing to draw."""
from __future__ import annotations

from pathlib import Path

import report

SPEED_LINES = [("fp8attn", "fp8attn", "fa3_fp8"), ("FA3 FP8", "fa3_fp8", "fp8attn"),
               ("FA3 BF16", "fa3_bf16", "fp8attn"), ("SDPA cuDNN BF16", "sdpa_cudnn_bf16", "fp8attn"),
               ("fp8attn end to end (BF16 in)", "fp8attn_end_to_end", "fa3_bf16"),
               ("fp8attn accurate (FP16 V^T; seed and short rows)", report.ACCURATE, "fa3_fp8"),
               ("rope + quantize + fp8attn (BF16 pre-rotary in)", report.ROPE_PAIR, report.ROPE_PEER),
               ("BF16 rotary + FA3 BF16", report.ROPE_PEER, report.ROPE_PAIR)]
# (label, method whose speed, its pairing peer, accuracy method, reference, marker)
TRADEOFF_POINTS = [
    ("fp8attn (E4M3 P), per-head inputs", "fp8attn", "fa3_fp8", "fp8attn", "kernel_only", "o"),
    ("fp8attn (E4M3 P), own inputs", "fp8attn", "fa3_fp8", "fp8attn@prepass", "kernel_only", "s"),
    ("fp8attn exact softmax, per-head inputs", "fp8attn_exact", "fa3_fp8", "fp8attn_exact", "kernel_only", "<"),
    ("P hi+lo, own inputs", "fp8attn_p_hilo", "fa3_fp8", "fp8attn_p_hilo@prepass", "kernel_only", "^"),
    ("FP16 P on E4M3 V (converter), own inputs", "fp8attn_p_fp16", "fa3_fp8", "fp8attn_p_fp16@prepass",
     "kernel_only", "v"),
    ("accurate (FP16 P, FP16 V^T), own inputs", report.ACCURATE, "fa3_fp8",
     f"{report.ACCURATE}@prepass", "kernel_only", "h"),
    ("accurate, per-head Q K + FP16 V", report.ACCURATE, "fa3_fp8", report.ACCURATE, "kernel_only", "H"),
    ("FA3 FP8, per-head inputs", "fa3_fp8", "fp8attn", "fa3_fp8", "kernel_only", "D"),
    ("fp8attn end to end (BF16 in)", "fp8attn_end_to_end", "fa3_bf16", "fp8attn_end_to_end", "end_to_end", "P"),
    ("accurate end to end (BF16 in)", report.E2E_ACCURATE, "fa3_bf16", report.E2E_ACCURATE,
     "end_to_end", "p"),
    ("FA3 BF16 end to end", "fa3_bf16", "fp8attn", "fa3_bf16", "end_to_end", "*"),
    ("SDPA cuDNN BF16 end to end", "sdpa_cudnn_bf16", "fp8attn", "sdpa_cudnn_bf16", "end_to_end", "X")]


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def speed_png(path: Path, res: dict, title: str) -> bool:
    speed = res.get("speed") or []
    rows = report.rows(speed)
    if not rows:
        return False
    plt = _plt()
    idx = report._index(speed)
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6), sharey=True)
    for ax, causal in zip(axes, (False, True)):
        mine = [r for r in rows if r[1] == causal]
        labels = [f"{k[0]}x{k[1]}" + (f"/{k[2]}" if k[1] != k[2] else "") + f"\n{k[3]}/{k[4]}" for k, _ in mine]
        for label, method, peer in SPEED_LINES:
            ys = []
            for row in mine:
                rec = idx.get((row[0], row[1], method, f"head_to_head:{peer}"))
                ys.append(rec["tflops_median"] if rec and rec.get("tflops_median") else float("nan"))
            if any(y == y for y in ys):  # a method this run timed (a part may time only some)
                ax.plot(range(len(mine)), ys, marker="o", label=label)
        ax.set_xticks(range(len(mine)), labels, fontsize=7)
        ax.set_title("causal" if causal else "non-causal")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("TFLOP/s, median, head to head")
    axes[0].legend(fontsize=7)
    fig.suptitle(title + "\nrows: b x s (/ sk), h / h_kv", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def tradeoff_png(path: Path, res: dict, title: str) -> bool:
    acc, speed = res.get("accuracy") or [], res.get("speed") or []
    ix, idx = report.acc_index(acc), report._index(speed)
    datasets = list(dict.fromkeys(r["dataset"] for r in acc if "@" not in r["dataset"]))
    datasets = [d for d in datasets if any((d, c, report.ACC_YARDSTICK, "end_to_end") in ix
                                           for c in (False, True))]
    if not datasets:
        return False
    plt = _plt()
    cols = min(3, len(datasets))
    nrows = -(-len(datasets) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 4.2 * nrows), squeeze=False)
    drawn = False
    for ax, ds in zip(axes.flat, datasets):
        for causal, fill in ((False, True), (True, False)):
            for i, (label, sm, peer, am, ref, marker) in enumerate(TRADEOFF_POINTS):
                rec = idx.get((report.seed_of(res), causal, sm, f"head_to_head:{peer}"))
                err = report.acc_ratio(ix, ds, causal, am, ref)
                if not rec or not rec.get("tflops_median") or err is None:
                    continue
                color = plt.get_cmap("tab10" if len(TRADEOFF_POINTS) <= 10 else "tab20")(i)
                ax.scatter(rec["tflops_median"], err, marker=marker, s=46,
                           facecolors=color if fill else "none", edgecolors=color,
                           label=f"{label}" if not causal else None)
                drawn = True
        ax.set_yscale("log")
        ax.axhline(report.ACC_BOUND, color="grey", lw=0.8, ls="--")
        ax.set_title(f"{ds} (filled: non-causal, hollow: causal)", fontsize=8)
        ax.set_xlabel("TFLOP/s at the seed shape (head to head)", fontsize=8)
        ax.set_ylabel(f"RMSE / {report.ACC_YARDSTICK} end-to-end RMSE", fontsize=8)
        ax.grid(True, alpha=0.3, which="both")
    for ax in list(axes.flat)[len(datasets):]:
        ax.axis("off")
    if not drawn:
        plt.close(fig)
        return False
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="lower center", ncol=4)
    fig.suptitle(title + "\nissue 14: error (kernel-only unless end to end) vs speed; dashed: 2x FA3 BF16",
                 fontsize=9)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True

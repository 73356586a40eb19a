#!/usr/bin/env python3
"""Issue 17's CPU study: can the pre-pass read K and V once? The smoothing centre (any vector is
exact) and the scales' amax from a sample of keys instead of a statistics pass over all of them.

For every captured set with head_dim 128 (data/cache/captures/*/layer*.safetensors: the
Qwen2.5-Coder-1.5B layers; SmolLM2-135M's head_dim 64 is not a shape the pre-pass takes) and the
synthetic sets (gaussian, outlier, kbias), both masks, every head, the CPU model
(build-*/tools/eval/fp8attn-eval, the bit-faithful pre-pass mirror model/prepass.cc + the kernel's
numerics) gives the end-to-end error (RMSE and max |err| against exact FP64 attention on the BF16
inputs, as the GPU harness measures it) of:
  mean            today's default (FP8ATTN_CENTRE_MEAN: exact mean and amax, two reads)
  sample          FP8ATTN_CENTRE_SAMPLE as the library runs it: 128 keys spread evenly from key 4,
                  scale bound 16 x the sample's amax, regrouped with the true amax if exceeded
  block           the centre from keys 4..131 (a block after the sink) instead
  headroom 1/4/64 the library's sample with another bound factor
and, with NumPy, how often the true amax exceeds the bound (the fused pass's second quantization
of that group: a cost, never an error) per (layer, kv head) for K and per channel for V.

Writes results/one-pass-study.json (every record + ratios to `mean`) and results/one-pass-study.md.
usage: lab/study/one_pass.py [--eval build-pp/tools/eval/fp8attn-eval] [--heads-subset N]
"""
import argparse
import datetime
import json
import pathlib
import platform
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
BASE = "fp8attn-default"
VARIANTS = {
    "mean": BASE,
    "sample": f"{BASE}:prepass_centre=sample",
    "block": f"{BASE}:prepass_centre=sample:prepass_sample=block",
    "headroom1": f"{BASE}:prepass_centre=sample:prepass_headroom=1",
    "headroom4": f"{BASE}:prepass_centre=sample:prepass_headroom=4",
    "headroom64": f"{BASE}:prepass_centre=sample:prepass_headroom=64",
}
SYNTHETIC = [("gaussian", 8192, 4, 4), ("outlier", 8192, 4, 4), ("kbias", 8192, 4, 2)]
SEED = 0x5EED5EED5EED5EED
ROWS, SKIP, HEADROOM = 128, 4, 16.0


def run_eval(exe, args, out_json):
    cmd = [str(exe), *args, "--mask", "both", "--no-kernel-only", "--quiet", "--scheme",
           ",".join(VARIANTS.values()), "--json", str(out_json)]
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return " ".join(cmd), json.loads(pathlib.Path(out_json).read_text())


def sign_negative(seed, c):  # fp8attn_hadamard_sign_negative (quant.h)
    m = (1 << 64) - 1
    z = (seed + 0x9E3779B97F4A7C15 * (1 + c // 64)) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    z ^= z >> 31
    return (z >> (c % 64)) & 1


def hadamard_matrix():
    h = np.array([[1.0]])
    while h.shape[0] < 128:
        h = np.block([[h, h], [h, -h]])
    signs = np.array([-1.0 if sign_negative(SEED, c) else 1.0 for c in range(128)])
    return signs[:, None] * h  # x @ (diag(signs) H): the unnormalized rotation of the pre-pass


def sample_keys(s, strided=True):
    if s <= ROWS + SKIP:
        return np.arange(s)
    i = np.arange(ROWS)
    return SKIP + (i * (s - SKIP) // ROWS if strided else i)


def load_bf16(path):
    """The BF16 tensors of a safetensors file as FP64 arrays (NumPy has no bfloat16)."""
    raw = pathlib.Path(path).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "BF16":
            continue
        a, b = meta["data_offsets"]
        u = np.frombuffer(raw, np.uint16, (b - a) // 2, 8 + n + a)
        out[name] = (u.astype(np.uint32) << 16).view(np.float32).astype(np.float64).reshape(
            meta["shape"])
    return out


def head_dim(path):
    raw = pathlib.Path(path).read_bytes()[:100000]
    n = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8:8 + n])["q"]["shape"][-1]


def resample_rates(path):
    """Per kv head: does K's true amax (rotated, centred) exceed 16 x the sample's? Per channel
    for V. (NumPy FP64: a count, not the mirror's bytes.)"""
    t = load_bf16(path)
    hm = hadamard_matrix()
    out = {"k_heads": 0, "k_resampled": 0, "v_channels": 0, "v_resampled": 0,
           "k_true_over_sample": [], "v_true_over_sample_max": []}
    for name in ("k", "v"):
        x = t[name][0]  # (s, h, d)
        keys = sample_keys(x.shape[0])
        for h in range(x.shape[1]):
            rows = x[:, h, :] @ hm if name == "k" else x[:, h, :]
            centre = rows[keys].mean(axis=0)
            samp = np.abs(rows[keys] - centre).max(axis=0)
            true = np.abs(rows - centre).max(axis=0)
            if name == "k":
                out["k_heads"] += 1
                out["k_resampled"] += int(true.max() > HEADROOM * samp.max())
                out["k_true_over_sample"].append(float(true.max() / samp.max()))
            else:
                out["v_channels"] += true.size
                out["v_resampled"] += int((true > HEADROOM * samp).sum())
                out["v_true_over_sample_max"].append(float((true / samp).max()))
    return out


def git_commit():
    return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval", default="build-pp/tools/eval/fp8attn-eval")
    ap.add_argument("--heads-subset", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    exe = ROOT / a.eval
    captures = sorted((ROOT / "data/cache/captures").glob("*/layer*.safetensors"))
    records, commands, rates = [], [], {}
    common = ["--threads", str(a.threads)] + (["--heads-subset", str(a.heads_subset)]
                                              if a.heads_subset else [])
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for p in captures:
            model = p.parent.name
            d = head_dim(p)
            if d != 128:
                print(f"skip {model}/{p.name}: head_dim {d}", file=sys.stderr)
                continue
            jobs.append((f"{model}/{p.stem}", ["--data", str(p.relative_to(ROOT))]))
            rates[f"{model}/{p.stem}"] = resample_rates(p)
        for kind, s, h, hk in SYNTHETIC:
            jobs.append((kind, ["--synthetic", kind, "--seqlen", str(s), "--heads", str(h),
                                "--heads-kv", str(hk)]))
        for i, (name, args) in enumerate(jobs):
            print(f"[{i + 1}/{len(jobs)}] {name}", file=sys.stderr, flush=True)
            cmd, recs = run_eval(exe, args + common, pathlib.Path(tmp) / f"{i}.json")
            commands.append(cmd)
            for r in recs:
                r["set"] = name
            records += [r for r in recs if r["reference"] == "end_to_end"]

    names = {v: k for k, v in VARIANTS.items()}
    table = {}
    for r in records:
        if r["scheme"] not in names:
            continue
        table.setdefault((r["set"], r["causal"]), {})[names[r["scheme"]]] = r
    rows, worst = [], {k: [0.0, 0.0] for k in VARIANTS}
    for (name, causal), by in sorted(table.items()):
        m = by["mean"]
        row = {"set": name, "causal": causal, "mean_rmse": m["rmse"], "mean_max_abs": m["max_abs"]}
        for k, r in by.items():
            row[f"{k}_rmse_ratio"] = r["rmse"] / m["rmse"]
            row[f"{k}_max_ratio"] = r["max_abs"] / m["max_abs"]
            worst[k][0] = max(worst[k][0], row[f"{k}_rmse_ratio"])
            worst[k][1] = max(worst[k][1], row[f"{k}_max_ratio"])
        rows.append(row)
    out = {
        "what": "end-to-end error of one-pass centre variants against today's exact mean (issue 17)",
        "command": "python3 lab/study/one_pass.py " + " ".join(sys.argv[1:]),
        "eval_commands": commands,
        "commit": git_commit(),
        "machine": f"{platform.node()}, {platform.processor() or platform.machine()}",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "variants": VARIANTS,
        "rows": rows,
        "worst_ratio_to_mean": {k: {"rmse": v[0], "max_abs": v[1]} for k, v in worst.items()},
        "resample_rates": rates,
        "records": records,
    }
    (ROOT / "results/one-pass-study.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [f"# One-pass pre-pass: centre variants vs the exact mean ({out['date']}, {out['commit']})",
             "", f"command: `{out['command']}`; machine: {out['machine']}", "",
             "End-to-end error (against exact FP64 attention) as a ratio to today's default "
             "(`mean`); each row: one set and mask, every head.", "",
             "| set | causal | mean rmse | mean max | " +
             " | ".join(f"{k} rmse / max" for k in VARIANTS if k != "mean") + " |",
             "|---|---|---:|---:|" + "---:|" * (len(VARIANTS) - 1)]
    for r in rows:
        lines.append(f"| {r['set']} | {'yes' if r['causal'] else 'no'} | {r['mean_rmse']:.3e} | "
                     f"{r['mean_max_abs']:.3e} | " + " | ".join(
                         f"{r.get(k + '_rmse_ratio', float('nan')):.3f} / "
                         f"{r.get(k + '_max_ratio', float('nan')):.3f}"
                         for k in VARIANTS if k != "mean") + " |")
    lines += ["", "Worst ratio over all rows: " + ", ".join(
        f"{k} {v['rmse']:.3f} / {v['max_abs']:.3f}" for k, v in out["worst_ratio_to_mean"].items()
        if k != "mean"), "", "Groups whose true amax exceeds 16x the sample's (requantized):", ""]
    for name, r in rates.items():
        lines.append(f"- {name}: K {r['k_resampled']}/{r['k_heads']} heads (true/sample amax up to "
                     f"{max(r['k_true_over_sample']):.2f}), V {r['v_resampled']}/{r['v_channels']} "
                     f"channels (up to {max(r['v_true_over_sample_max']):.2f})")
    (ROOT / "results/one-pass-study.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

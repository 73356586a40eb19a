#!/usr/bin/env python3
"""Lab probe (GPU): several builds and host settings of the E4M3 kernel, each head to head with FA3 FP8.

Issue 13's seed causal row sits just under 0.95 of FA3 FP8, and the long-tile kernel's speed moves
by a few percent with ptxas's schedule (lab/perf-log.md, third to fifth sessions). This probe times
configurations that change nothing in the arithmetic:
  - libraries whose kernels were compiled with other ptxas options (same PTX, other schedule);
  - the release library under lab-only environment knobs (lab/variants/host-knobs.patch): the
    short-tile threshold (which 192-key kernel a row gets) and the causal L2 section size.
Each configuration is paired with FA3 FP8 alone (speed.head_to_head), per shape, in rounds whose
order reverses; one process per library (one library a process), the configurations of one
library alternating inside it. Every configuration's output on the first input set is hashed, so
that a build whose bits differ from the release's shows (none should).

  python3 lab/probes/lottery_ab.py --config TAG=LIB[,ENV=VAL...][,MODE=fp8attn_exact] ... --out DIR [--rounds 2]
      [--peer fa3_fp8|fa3_bf16]
Writes DIR/lottery_ab.json (command, commit, GPU, date, records) and prints a table.
--data FILE (a capture pack's safetensors, q (1, s, hq, 128), k and v (1, s, hkv, 128), BF16): the
inputs are that file's activations instead of Gaussian draws, the shape's sequence the file's
tokens (--shape-set captured), tiled to MHA as the harness's part `captured` does
(bench/captured_speed.mha_inputs), the second input set with the query heads shifted by one. Real scores move the running max more
often than Gaussian ones (lab/study-fastmode/rescale_count.py), which is what a change to the
rescale shows on.
MODE=fp8attn_accurate runs FP16 P on an FP16 V^T (V / v_descale of the same per-head inputs,
fp8attn_calls.with_fp16_v); --peer fa3_bf16 pairs every configuration with FA3 in BF16 on the
BF16 tensors the inputs were quantized from (the accurate mode's yardstick, issue 14).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import probe_doc  # noqa: E402

import fp8attn_calls as fc  # noqa: E402
import methods  # noqa: E402
import speed  # noqa: E402
from kernel_ab import inputs  # noqa: E402  (the same per-head E4M3 input sets)
from sweep import Shape  # noqa: E402

# (b, s, h, h_kv, causal): the long-tile kernel's rows (8k, 4k non-causal) and the short-tile
# kernel's (4k, 2k, 1k causal).
SHAPES = [(2, 8192, 32, 32, True), (2, 8192, 32, 32, False), (4, 4096, 32, 32, False),
          (4, 4096, 32, 32, True), (8, 2048, 32, 32, True), (16, 1024, 32, 32, True)]
# --shape-set long: the sweep's rows of 8k and more (which 192-key kernel a long causal row should get).
# --shape-set trim: the rows a trimmed first block (Config::kTrimFirstBlock) reaches.
TRIM_SHAPES = [(16, 1024, 32, 32, False), (8, 2048, 32, 32, False), (16, 1024, 32, 32, True),
               (8, 2048, 32, 32, True), (4, 4096, 32, 32, True), (2, 8192, 32, 32, True),
               (4, 4096, 16, 2, True), (2, 8000, 32, 32, True), (1, 16384, 32, 32, True)]
LONG_SHAPES = [(2, 8192, 32, 32, True), (2, 8192, 32, 8, True), (1, 16384, 32, 32, True),
               (2, 8000, 32, 32, True), (2, 8192, 32, 32, False)]
# --shape-set all: every E4M3 kernel's rows (a change to all three 192-key kernels): the trim
# set plus the long-tile kernel's non-causal rows.
ALL_SHAPES = TRIM_SHAPES + [(2, 8192, 32, 32, False), (4, 4096, 32, 32, False)]
# --shape-set sections: causal rows whose (batch, head) pairs span several L2 sections, as
# (b, sq, sk, h, h_kv, causal): the causal tile order's section sizes (attn/sections.h).
SECTION_SHAPES = [(1, 2048, 16384, 32, 8, True), (4, 4096, 4096, 32, 32, True),
                  (8, 2048, 2048, 32, 32, True), (16, 1024, 1024, 32, 32, True),
                  (2, 8192, 8192, 32, 32, True), (1, 16384, 16384, 32, 32, True)]

# --shape-set waves: why sq 2k x sk 16k GQA non-causal (512 tiles, 3.9 waves on 132 SMs) trails FA3
# FP8 by 5% where 16k x 16k (same tile length, 31 waves) leads by 2%: the same tiles with and without
# GQA, with whole waves (h 33: 528 tiles = 4.0 waves), with twice the waves, and GQA 4k with the MHA
# layout beside it.
WAVES_SHAPES = [(1, 2048, 16384, 32, 8, False), (1, 2048, 16384, 32, 32, False),
                (1, 2048, 16384, 33, 33, False), (2, 2048, 16384, 32, 8, False),
                (1, 16384, 16384, 32, 8, False), (4, 4096, 4096, 16, 2, False),
                (4, 4096, 4096, 16, 16, False)]

# --shape-set launch: a fixed cost per launch or per CTA? 132 heads make one tile per SM per
# 128 query rows, so sq = 128 n gives exactly n waves; the time against n (16k and 4k keys) splits
# each kernel's time into a per-launch intercept and a per-wave slope.
LAUNCH_SHAPES = [(1, 128 * n, sk, 132, 132, False) for sk in (16384, 4096) for n in (1, 2, 4, 8, 16)]

# --shape-set shortnc: the non-causal rows from 2k to 8k keys (where a per-tile change shows).
SHORTNC_SHAPES = [(8, 2048, 2048, 32, 32, False), (4, 4096, 4096, 32, 32, False),
                  (4, 4096, 4096, 16, 2, False), (2, 8000, 8000, 32, 32, False),
                  (2, 8192, 8192, 32, 32, False)]

# --shape-set triorule: non-causal shapes where the tail-aware three-warpgroup rule (branch
# trio-tail-rule, lab/results/study/2026-12-04-cpu-s30-trio-rule.md) moves the accurate mode from
# three warpgroups back to the 192-key kernel (predicted 2-5% faster), then two it leaves on three.
TRIO_RULE_SHAPES = [(1, 8192, 8192, 28, 4, False), (1, 8192, 8192, 40, 8, False),
                    (1, 16384, 16384, 40, 8, False), (2, 8192, 8192, 40, 8, False),
                    (1, 8192, 8192, 32, 8, False), (2, 8192, 8192, 32, 8, False),
                    (1, 16384, 16384, 32, 8, False)]

# --shape-set sweep: the harness's sweep (bench/sweep.py SWEEP_ROWS), both masks.
SWEEP_SHAPES = [(b, sq, sk, h, hkv, c) for (b, sq, sk, h, hkv) in
                [(2, 8192, 8192, 32, 32), (2, 8192, 8192, 32, 8), (16, 1024, 1024, 32, 32),
                 (8, 2048, 2048, 32, 32), (4, 4096, 4096, 32, 32), (1, 16384, 16384, 32, 32),
                 (4, 4096, 4096, 16, 2), (1, 2048, 16384, 32, 8), (2, 8000, 8000, 32, 32)]
                for c in (False, True)]

# --shape-set sweeprest: the sweep's rows after its first 8, for an A/B whose first call covered
# `--shape-set sweep --shapes 8`: sq 2k x sk 16k and the 4k rows (32/32, 16/2 GQA) first, then
# 16k and 8000 (--shapes 6: sq 2k x sk 16k and the 4k rows, both masks).
SWEEP_REST_SHAPES = sorted(SWEEP_SHAPES[8:], key=lambda r: (r[1] not in (2048, 4096), r[1], -r[4], r[5]))

# --shape-set nc: the sweep's non-causal rows, shortest tiles first (a change to the non-causal
# kernel's tile boundary: lab/perf-log.md, twentieth session).
NC_SHAPES = sorted([r for r in SWEEP_SHAPES if not r[5]], key=lambda r: (r[2], -r[0], -r[4]))

# --shape-set captured: rows of the capture's length (--data), both masks, MHA.
CAPTURED_SHAPES = [(8, 2048, 2048, 32, 32, False), (8, 2048, 2048, 32, 32, True)]

# --shape-set offsweep: shapes users run that the harness's sweep does not (issue 13's "lead at
# every shape"): a 40/8 head layout (the issue's own example), Qwen-7B-like 28/4 at an odd length,
# a short prefill, small and large prefill chunks against a long context, a 32k sequence.
OFFSWEEP_SHAPES = [(4, 4096, 4096, 40, 8, True), (4, 4096, 4096, 40, 8, False),
                   (2, 3000, 3000, 28, 4, True), (2, 3000, 3000, 28, 4, False),
                   (8, 512, 512, 32, 8, True), (4, 128, 8192, 32, 8, True),
                   (1, 1024, 16384, 32, 8, True), (1, 32768, 32768, 32, 8, True),
                   (1, 32768, 32768, 32, 8, False)]

SHAPE_SETS = {"offsweep": OFFSWEEP_SHAPES, "nc": NC_SHAPES, "captured": CAPTURED_SHAPES, "sweeprest": SWEEP_REST_SHAPES, "short": SHAPES, "sweep": SWEEP_SHAPES, "long": LONG_SHAPES, "trim": TRIM_SHAPES, "sections": SECTION_SHAPES,
              "all": ALL_SHAPES, "waves": WAVES_SHAPES, "launch": LAUNCH_SHAPES, "shortnc": SHORTNC_SHAPES,
              "triorule": TRIO_RULE_SHAPES}


def captured_inputs(shape: Shape, path: str, n_sets: int):
    """kernel_ab.inputs' (qz, q, k, v) sets built from a capture file's activations (--data)."""
    from safetensors.torch import load_file
    import captured_speed
    t = load_file(path, device="cuda")
    qkv = (t["q"], t["k"], t["v"])  # (1, s, h, 128)
    if qkv[0].shape[1] != shape.sq or qkv[1].shape[1] != shape.sk or shape.h != shape.h_kv:
        raise SystemExit(f"lottery_ab: {path} holds {qkv[0].shape[1]} tokens; the shape wants {shape.sq}, MHA")
    sets = []
    for i in range(n_sets):
        q, k, v = captured_speed.mha_inputs(qkv, shape.b, shape.h, shift=i)
        sets.append((fc.quantize_per_head(q, k, v), q, k, v))
    return sets


def parse_config(text):
    """TAG=LIB[,ENV=VAL...]; the pseudo-variable MODE=NAME (a bench method name, default fp8attn,
    e.g. fp8attn_exact) picks the P precision instead of setting an environment variable."""
    tag, _, rest = text.partition("=")
    lib, *envs = rest.split(",")
    env = dict(e.split("=", 1) for e in envs)
    return {"tag": tag, "lib": lib, "mode": env.pop("MODE", "fp8attn"), "env": env}


def same_bits(records, modes):
    """Whether every configuration of one mode gave the same output on each shape's first input
    set (the out_sha1 of its records): one line, naming the shapes where they differ."""
    digests = {}
    for r in records:
        if "out_sha1" in r:
            key = (modes[r["method"]], r["b"], r["sq"], r["sk"], r["h_kv"], r["causal"])
            digests.setdefault(key, set()).add(r["out_sha1"])
    differ = [k for k, v in digests.items() if len(v) > 1]
    return ("output hashes: every configuration of a mode equal on every shape" if not differ
            else f"output hashes DIFFER (mode, b, sq, sk, h_kv, causal): {differ}")


def child(args, configs, fa3):
    """One library (every config shares it), the configs alternating per shape."""
    lib = fc.load(configs[0]["lib"])
    records = []
    base_env = {k: os.environ.get(k) for c in configs for k in c["env"]}
    sets = SHAPE_SETS[args.shape_set]
    for row in sets[: args.shapes]:
        b, sq, sk, h, hkv, causal = row if len(row) == 6 else (row[0], row[1], *row[1:])
        shape = Shape(b, sq, sk, h, hkv, 128, causal)
        full = (captured_inputs(shape, args.data, 2) if args.data
                else inputs(shape, args.seed, with_bf16=True))  # [(qz, q, k, v)]
        sets = [f[0] for f in full]
        if args.peer == "fa3_bf16":
            theirs = methods.rotating([methods._fa3_bf16(fa3, q, k, v, causal) for _, q, k, v in full])
        else:
            theirs = methods.rotating([methods._fa3_fp8(fa3, qz, causal) for qz in sets])
        order = configs if args.round % 2 == 0 else configs[::-1]
        for c in order:
            for k, v in base_env.items():  # the knobs are read at every call
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            os.environ.update(c["env"])
            if c["mode"] == fc.ACCURATE:
                runners = [fc.accurate_runner(lib, fc.with_fp16_v(qz, v), causal) for qz, _, _, v in full]
            else:
                runners = [fc.kernel_runner(lib, qz, causal, c["mode"]) for qz in sets]
            torch.cuda.synchronize()
            digest = hashlib.sha1(runners[0].keep[2].cpu().view(torch.int16).numpy().tobytes()).hexdigest()[:12]
            mine = methods.rotating(runners)
            ta, tb = speed.head_to_head(mine, theirs, args.runs)
            ra = speed.record(c["tag"], shape, ta, f"head_to_head:{args.peer}", round=args.round, out_sha1=digest)
            rb = speed.record(args.peer, shape, tb, f"head_to_head:{c['tag']}", round=args.round)
            records += [ra, rb]
            print(f"  r{args.round} {shape.label():36s} {c['tag']:14s} {ra['tflops_median']:7.1f} vs {args.peer} "
                  f"{rb['tflops_median']:7.1f}  ratio {ra['tflops_median'] / rb['tflops_median']:.4f}  out {digest}",
                  flush=True)
            del runners, mine
        del sets, full, theirs
        torch.cuda.empty_cache()
    return records


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", action="append", required=True, help="TAG=LIB[,ENV=VAL...]")
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--shapes", type=int, default=len(SHAPES), help="the first N of SHAPES")
    ap.add_argument("--shape-set", choices=tuple(SHAPE_SETS), default="short")
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--peer", choices=("fa3_fp8", "fa3_bf16"), default="fa3_fp8")
    ap.add_argument("--data", help="a capture file: its activations as the inputs (see the docstring)")
    ap.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--child-json", help=argparse.SUPPRESS)
    args = ap.parse_args()
    configs = [parse_config(c) for c in args.config]
    fa3 = methods.load_fa3()
    if isinstance(fa3, str):
        print(f"lottery_ab: {fa3}")
        return 1
    if args.child_json:
        Path(args.child_json).write_text(json.dumps(child(args, configs, fa3)))
        return 0

    libs = list(dict.fromkeys(c["lib"] for c in configs))
    records = []
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for r in range(args.rounds):
        for lib in (libs if r % 2 == 0 else libs[::-1]):
            js = out / f".lottery-{r}.json"
            cmd = [sys.executable, __file__, "--out", str(out), "--runs", str(args.runs),
                   "--seed", str(args.seed), "--round", str(r), "--shapes", str(args.shapes),
                   "--shape-set", args.shape_set, "--peer", args.peer, *(["--data", args.data] if args.data else []),
                   "--child-json", str(js)]
            for c in args.config:
                if parse_config(c)["lib"] == lib:
                    cmd += ["--config", c]
            rc = subprocess.call(cmd)
            if rc == 0 and js.exists():
                records += json.loads(js.read_text())
                js.unlink()
            else:
                records.append({"lib": lib, "round": r, "error": f"child exited {rc}"})
    # Per (config, shape): the mean over rounds of its ratio to the FA3 FP8 it was paired with.
    ratios = {}
    for a, b in zip(records, records[1:]):
        if a.get("method") not in (None, args.peer) and b.get("method") == args.peer and \
                b["protocol"] == f"head_to_head:{a['method']}":
            key = (a["method"], a["b"], a["sq"], a["causal"], a["h_kv"], a["sk"])
            ratios.setdefault(key, []).append(a["tflops_median"] / b["tflops_median"])
    print(f"config / {args.peer}, mean over rounds (each round's ratio in brackets)")
    for key, rs in sorted(ratios.items(), key=lambda kv: (kv[0][1], kv[0][3], kv[0][0])):
        records.append({"summary": True, "method": key[0], "b": key[1], "sq": key[2], "sk": key[5], "causal": key[3],
                        "h_kv": key[4], "ratio_mean": statistics.fmean(rs), "ratios": rs})
        print(f"  b{key[1]:<2d} s{key[2]:<5d} sk {key[5]:<5d} h_kv {key[4]:<2d} causal={int(key[3])} {key[0]:14s} {statistics.fmean(rs):.4f} "
              f"[{', '.join(f'{x:.4f}' for x in rs)}]")
    print(same_bits(records, {c["tag"]: c["mode"] for c in configs}))
    path = probe_doc.write(args.out, "lottery_ab.json", records, torch.cuda.get_device_name(),
                           builds=probe_doc.lib_commits({c["tag"]: c["lib"] for c in configs}))
    print(f"lottery_ab: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

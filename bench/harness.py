#!/usr/bin/env python3
"""The GPU harness: fp8attn head to head with FlashAttention-3 (FP8 and BF16) and PyTorch SDPA
cuDNN BF16 at every row of the sweep (bench/sweep.py), causal and not, alone and each call right
after a QKV-projection GEMM; the BF16-in path (fp8attn_end_to_end) against FA3 BF16; accuracy of
every method on the same data. Writes results/<date>-<gpu>-<commit>.{json,md,png} and
<...>-tradeoff.png. Builds nothing: loads the carried libfp8attn.so (bench/fp8attn_calls.py).
Part `rope` (not in the default parts): the BF16-in path with the rotary fused, the same sweep and
protocols: fp8attn_rope_quantize_pair (pre-rotary BF16 in, fp8attn_attention_rope) against
fa3_bf16_rope_pair (fp8attn_rope_bf16 on Q and K, then FA3 BF16), and head to head with the plain
fp8attn_end_to_end; its records join the others in res["speed"] (a `--speed-from` file's too).
Part `captured` (not in the default parts): fp8attn against FA3 FP8 and the accurate mode against
FA3 BF16 on the capture pack's own activations (bench/captured_speed.py), in res["speed_captured"].

  python3 bench/harness.py --lib .carry/libfp8attn.so --out "$OUT" --tests-json tests.json
  python3 bench/harness.py --only speed --quick ...       # parts of a session (repeat --only)
  python3 bench/harness.py --only rope ...                # the rotary-fused pairs alone
  python3 bench/harness.py --only accuracy --only captured ...   # both need the capture pack
  python3 bench/harness.py --plan                         # the plan and its time estimate only
  python3 bench/harness.py --dry-run --out /tmp/h         # no GPU, no torch: numpy stand-ins
FA3 comes from PyPI fa3-fwd==0.0.3 (module fa3_fwd_interface on PYTHONPATH); if it does not
import, every FA3 record says why (tflops_median null, error) instead of being left out.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import report  # noqa: E402
import speed  # noqa: E402
import sweep  # noqa: E402

T0 = time.time()
KERNEL_PEERS = ("fa3_fp8", "fa3_bf16", "sdpa_cudnn_bf16")
SEED_MODES = ("fp8attn_exact", "fp8attn_p_hilo", "fp8attn_p_fp16")
# The accurate mode (FP16 P on FP16 V^T, issue 14): head to head and in context with FA3 BF16 at
# every row and with FA3 FP8 at the seed and the short row; its BF16-in call head to head with FA3
# BF16 at the seed.
ACCURATE, E2E_ACCURATE = "fp8attn_accurate", "fp8attn_accurate_end_to_end"
ROPE_PAIR, ROPE_PEER = report.ROPE_PAIR, report.ROPE_PEER  # part "rope" (issue 17)
SPEED_PARTS = ("speed", "rope")
# Guesses for the time estimate only (TFLOP/s on the H200, from issues 13, 14 and 17; the
# accurate mode's from lab/results/probe/2026-12-01-h200-310618d-accurate-v16-ab.json; the rope
# pairs' below results/rope-pairs-704758963d1e.json's, for their short rows).
GUESS_TFLOPS = {"fp8attn": 800, "fp8attn_exact": 780, "fp8attn_p_hilo": 450, "fp8attn_p_fp16": 520,
                "fp8attn_end_to_end": 600, ACCURATE: 580, E2E_ACCURATE: 450, "fa3_fp8": 850,
                "fa3_bf16": 700, "sdpa_cudnn_bf16": 560, "gemm": 650,
                ROPE_PAIR: 550, ROPE_PEER: 600}
WARMUP = 5
SEED_ROW = list(sweep.SEED)  # the first row of the sweep run (tiny in a dry run)
SHORT_ROW = list(sweep.SHORT)  # sweep.DRY_SHORT in a dry run


def log(msg: str) -> None:
    print(f"[{time.time() - T0:6.1f} s] {msg}", flush=True)


def gpu_clocks() -> dict:
    fields = ("clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,power.limit,"
              "temperature.gpu,clocks_throttle_reasons.active")
    try:
        line = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        got = dict(zip(fields.split(","), [v.strip() for v in line.split(",")]))
    except Exception as e:  # no nvidia-smi (dry run): say so instead of inventing clocks
        got = {"error": f"{type(e).__name__}: {e}"}
    got["elapsed_s"] = round(time.time() - T0, 1)
    return got


def read_commit(path: str) -> str:
    for f in (Path(path), ROOT / ".carry" / "COMMIT"):
        if f.exists():
            return f.read_text().strip()
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def gpu_slug(name: str) -> str:
    name = re.sub(r"^nvidia\s+", "", name.strip(), flags=re.I)
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "gpu"


def read_tests(path: str | None) -> tuple[dict, dict]:
    if not path or not Path(path).exists():
        return {"passed": 0, "failed": 0}, {"error": "no test summary given"}
    detail = json.loads(Path(path).read_text())
    return {"passed": int(detail.get("passed", 0)), "failed": int(detail.get("failed", 0))}, detail


def read_attachments(specs: list[str], notes: list) -> dict:
    """--attach name=path: JSON blocks from other GPU stages, kept under res['attached'][name]."""
    out = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name:
            raise SystemExit(f"--attach {spec!r}: expected NAME=PATH")
        try:
            out[name] = json.loads(Path(path).read_text())
        except Exception as e:  # a missing or broken block is reported, never fatal
            out[name] = {"error": f"{path}: {type(e).__name__}: {e}"}
            notes.append(f"attach {name}: {out[name]['error']}")
    return out


def pairings(shape, part: str = "speed") -> list[tuple[str, str, str]]:
    """(method, peer, protocol) timed at one shape by a speed part ("speed" or "rope")."""
    if part == "rope":
        return ([(ROPE_PAIR, ROPE_PEER, p) for p in speed.PROTOCOLS]
                + [(ROPE_PAIR, "fp8attn_end_to_end", "head_to_head")])
    out = [("fp8attn", peer, p) for peer in KERNEL_PEERS for p in speed.PROTOCOLS]
    out += [("fp8attn_end_to_end", "fa3_bf16", p) for p in speed.PROTOCOLS]
    seed = sweep.is_seed(shape, tuple(SEED_ROW))
    if seed:
        out += [(mode, "fa3_fp8", "head_to_head") for mode in SEED_MODES]
    # The accurate mode with FA3 BF16 at every row (issue 14: where FA3 BF16 is faster, the mode has
    # no reason to exist, and the report must say so), with FA3 FP8 at the seed and short rows;
    # head to head and in context (after the QKV GEMM) as the default: at the power cap the
    # accurate kernel runs at a lower clock than FA3 FP8 when alone, so the two protocols could
    # differ for it (measured within 2% of each other in 0c1f1f5's run).
    short = sweep.is_seed(shape, tuple(SHORT_ROW))
    peers = ("fa3_fp8", "fa3_bf16") if seed or short else ("fa3_bf16",)
    out += [(ACCURATE, peer, p) for peer in peers for p in speed.PROTOCOLS]
    if seed:
        out.append((E2E_ACCURATE, "fa3_bf16", "head_to_head"))
    return out


def calls_per_method(runs: int, block: int) -> int:
    rounds = -(-runs // block)
    return (rounds + rounds % 2) * block


def estimate_s(shapes, runs: int, block: int, part: str = "speed") -> float:
    n = calls_per_method(runs, block) + WARMUP
    total = 0.0
    for s in shapes:
        ms = {m: s.flops() / (t * 1e12) * 1e3 for m, t in GUESS_TFLOPS.items()}
        gemm_ms = 2.0 * s.b * s.sq * s.h * s.d * (s.h + 2 * s.h_kv) * s.d / (GUESS_TFLOPS["gemm"] * 1e9)
        total += 0.5  # inputs, quantization, SDPA's copies
        for a, b, p in pairings(s, part):
            total += n * (ms[a] + ms[b] + (2 * gemm_ms if p == "in_context" else 0)) / 1e3
    return total


def run_speed(args, shapes, backend, fa3, notes, part: str = "speed") -> list:
    import backends as md
    recs = []
    n = calls_per_method(args.runs, args.block)
    for i, shape in enumerate(shapes):
        names = list(dict.fromkeys(m for a, b, _ in pairings(shape, part) for m in (a, b)))
        sets = None
        try:
            sets = [backend.make_inputs(shape, args.seed + 1000 * j)
                    for j in range(sweep.input_sets(shape))]
            runners = backend.speed_runners(names, shape, sets, fa3, notes)
            gemm = backend.qkv_gemm(shape)
        except Exception as e:  # the row is recorded as failed, the sweep goes on
            why = f"inputs for {shape.label()}: {type(e).__name__}: {e}"
            notes.append(why)
            runners, gemm = {m: why for m in names}, None
        extra = {"input_sets": sweep.input_sets(shape), "block": args.block}
        for a, b, protocol in pairings(shape, part):
            got = speed.run_pairing_or_failed(shape, a, b, protocol, runners, gemm, args.runs,
                                              args.block, extra)
            recs += got
            ra, rb = got
            ratio = speed.ratio_text(ra, rb)
            log(f"{part} {i + 1}/{len(shapes)} {shape.label():<34} {protocol:<12} "
                f"{a} {report.fmt_tf(ra)} vs {b} {report.fmt_tf(rb)}  ratio {ratio}"
                + (f"  FAILED: {ra.get('error') or rb.get('error')}" if ratio == "-" else ""))
        del runners, gemm, sets
        md.release()
    log(f"{part}: done, {n} timed calls per method per pairing")
    return recs


def run_accuracy(args, backend, fa3, notes) -> tuple[list, list]:
    import accuracy
    import backends as md
    s = md.ACC_SHAPE_DRY if args.dry_run else md.ACC_SHAPE
    # (name, (q, k, v), softmax_scale): synthetic sets at 1/sqrt(d); a capture at its pack's own.
    datasets = [(kind, backend.synthetic(kind, s["b"], s["s"], s["h"], s["h_kv"], s["d"],
                                         args.seed + i), None)
                for i, kind in enumerate(("gaussian", "outlier"))]
    captured = backend.captures(args.captures, notes)
    if not captured:  # a results file without the captured layers: say so where the run is watched
        log(f"accuracy: WARNING: no captured activations ({args.captures}): synthetic sets only")
    datasets += captured
    acc_methods = backend.accuracy_methods(fa3, notes)
    log(f"accuracy: {len(datasets)} datasets x 2 masks x {len(acc_methods)} methods; synthetic at "
        f"b={s['b']} s={s['s']} h={s['h']}/{s['h_kv']} d=128, seed {args.seed}")
    acc, lse = [], []
    for name, qkv, scale in datasets:
        if scale is not None:
            log(f"accuracy {name}: softmax_scale {scale!r} from its pack metadata")
        for causal in (False, True):
            try:
                a, l = accuracy.run_dataset(name, qkv, causal, acc_methods, backend.quantize,
                                            lambda m: None, notes, prepass=backend.prepass,
                                            ops=backend.ops, softmax_scale=scale,
                                            quantize_v16=backend.quantize_v16)
                acc += a
                lse += l
                worst = [r["method"] for r in a if r["rmse"] is None]
                log(f"accuracy {name} causal={int(causal)}: {len(a)} records"
                    + (f", FAILED: {sorted(set(worst))}" if worst else ""))
            except Exception as e:
                notes.append(f"accuracy {name} causal={int(causal)} aborted: {type(e).__name__}: {e}")
                log(notes[-1])
        md.release()
    return acc, lse


def merge_prepass_bench(args, res, notes) -> None:
    """bench/bench_prepass.py's run(lib_path=...) (pre-pass bandwidth, its own end-to-end timing
    and accuracy); its speed records get a protocol naming what they were alternated with."""
    import importlib.util
    f = ROOT / "bench" / "bench_prepass.py"
    try:
        spec = importlib.util.spec_from_file_location("bench_prepass", f)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        extra = mod.run(lib_path=str(args.lib))
    except Exception as e:
        notes.append(f"bench_prepass.py failed: {type(e).__name__}: {e}")
        log(notes[-1])
        return
    notes += [f"bench_prepass: {n}" for n in extra.get("notes", [])]
    pair = ("fp8attn_end_to_end", "fp8attn_kernel_on_prepass_inputs")
    for r in extra.get("speed", []):
        other = pair[1] if r["method"] == pair[0] else pair[0]
        r.setdefault("protocol", f"alternating:{other}")
        r["source"] = "bench_prepass"
    res["speed"] += extra.get("speed", [])
    res["accuracy"] += extra.get("accuracy", [])
    if extra.get("prepass"):
        res["prepass"] = extra["prepass"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=str(ROOT / ".carry" / "libfp8attn.so"))
    ap.add_argument("--out", default=os.environ.get("OUT", str(ROOT / "results")))
    ap.add_argument("--tests-json", help="test summary written by scripts/gpu_session.sh")
    ap.add_argument("--commit-file", default=str(ROOT / ".carry" / "COMMIT"))
    ap.add_argument("--captures", default=str(ROOT / ".carry" / "captures"),
                    help="folder of captured q/k/v safetensors (used if it exists)")
    ap.add_argument("--command", help="the command to record (default: this one)")
    ap.add_argument("--only", action="append", choices=("speed", "rope", "accuracy", "captured", "prepass"),
                    help="run only these parts (repeat; default: speed and accuracy)")
    ap.add_argument("--quick", action="store_true", help="speed at the seed row and 16 x 1k only")
    ap.add_argument("--runs", type=int, default=100, help="timed calls per method per pairing")
    ap.add_argument("--block", type=int, default=2, help="calls per block in the alternation")
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--attach", action="append", default=[], metavar="NAME=PATH",
                    help="a JSON file from another GPU stage, stored under attached.NAME")
    ap.add_argument("--speed-from", metavar="PATH",
                    help="take the speed records (and their clocks) from this results JSON of the same "
                         "commit, written by an earlier call of the same GPU session, instead of timing")
    ap.add_argument("--without-fa3", action="store_true", help="record FA3 as not run")
    ap.add_argument("--plan", action="store_true", help="print the plan and estimate, run nothing")
    ap.add_argument("--dry-run", action="store_true", help="no GPU, no torch: numpy stand-ins")
    args = ap.parse_args()
    if args.dry_run and args.runs == ap.get_default("runs"):
        args.runs = 4  # the numpy stand-ins are slow; the figures mean nothing anyway
    if args.runs < 100 and not (args.dry_run or args.plan):
        ap.error("--runs must be >= 100 (the median of >= 100 calls per method)")
    parts = args.only or ["speed", "accuracy"]
    rows = sweep.DRY_ROWS if args.dry_run else (sweep.QUICK_ROWS if args.quick else sweep.SWEEP_ROWS)
    shapes = sweep.sweep(rows)
    SEED_ROW[:] = rows[0]
    SHORT_ROW[:] = sweep.DRY_SHORT if args.dry_run else sweep.SHORT
    h200_shapes = sweep.sweep(sweep.QUICK_ROWS if args.quick else sweep.SWEEP_ROWS)
    ests = {p: estimate_s(h200_shapes, args.runs, args.block, p) for p in SPEED_PARTS}
    est = ests["speed"]
    log(f"plan: parts {parts}; {len(shapes)} speed shapes, pairings per shape "
        f"{len(pairings(shapes[0]))} at the seed (rope: {len(pairings(shapes[0], 'rope'))}), "
        f"{calls_per_method(args.runs, args.block)} timed calls per method per pairing; on the H200 "
        f"speed estimated at {est:.0f} s, rope at {ests['rope']:.0f} s "
        "(from guessed TFLOP/s; accuracy adds ~1 s per dataset and mask)")
    if args.plan:
        for s in shapes:
            log(f"  {s.label():<34} input sets {sweep.input_sets(s)}  "
                + ", ".join(f"{a}~{b}:{p}" for part in SPEED_PARTS if part in parts
                            for a, b, p in pairings(s, part)))
        return 0

    import backends as md
    notes: list[str] = []
    backend = md.backend(args, notes)
    fa3 = "FA3 disabled by --without-fa3" if args.without_fa3 else backend.load_fa3()
    if isinstance(fa3, str):
        notes.append(fa3)
    log(f"harness: {backend.gpu_name}, {backend.versions}; FA3: "
        f"{fa3 if isinstance(fa3, str) else getattr(fa3, '__file__', 'imported')}")
    tests, tests_detail = read_tests(args.tests_json)
    clocks = {"start": gpu_clocks(), **backend.torch_clocks()}
    res = {"commit": read_commit(args.commit_file), "gpu": gpu_slug(backend.gpu_name),
           "tests": tests, "speed": [], "accuracy": [], "lse": [], "notes": notes,
           "command": args.command or " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
           "gpu_name": backend.gpu_name, "clocks": clocks, "torch": backend.versions,
           "tests_detail": tests_detail, "dry_run": bool(args.dry_run), "parts": parts,
           "fa3": {"pin": md.FA3_PIN, "available": not isinstance(fa3, str),
                   **({"error": fa3} if isinstance(fa3, str) else
                      {"module": getattr(fa3, "__file__", "?")})},
           "speed_protocol": {"runs": calls_per_method(args.runs, args.block), "block": args.block,
                              "warmup": WARMUP, "rows": [list(r) for r in rows],
                              "seed": [*rows[0], 128],
                              "estimate_s": round(est, 1), "estimate_rope_s": round(ests["rope"], 1),
                              "flops": sweep.__doc__.strip()},
           "attached": read_attachments(args.attach, notes)}
    date = dt.datetime.now(dt.timezone.utc)
    res["date"] = date.strftime("%Y-%m-%d %H:%M UTC")
    stem = f"{date.strftime('%Y-%m-%d')}-{res['gpu']}-{res['commit']}"

    def write():
        res["harness_seconds"] = round(time.time() - T0, 1)
        return report.write_all(Path(args.out), stem, res)

    if args.speed_from:
        prev = json.loads(Path(args.speed_from).read_text())
        if prev.get("commit") != res["commit"] or prev.get("gpu") != res["gpu"]:
            raise SystemExit(f"--speed-from {args.speed_from}: commit/gpu {prev.get('commit')}/{prev.get('gpu')} "
                             f"differ from this run's {res['commit']}/{res['gpu']}")
        res["speed"] = prev["speed"]
        res["speed_protocol"] = prev.get("speed_protocol", res["speed_protocol"])
        clocks["speed_call"] = prev.get("clocks", {})
        res["parts"] = sorted(set(parts) | set(prev.get("parts", [])))
        for key, part in (("prepass", "prepass"), ("accuracy", "accuracy"), ("lse", "accuracy"),
                          ("speed_captured", "captured")):
            if key in prev and part not in parts:  # the earlier call's, unless re-run here
                res[key] = prev[key]
        notes.append(f"speed records (and the pre-pass and accuracy records of parts not run here) from "
                     f"{Path(args.speed_from).name} (date {prev.get('date')}), an earlier call of this GPU "
                     "session on the same commit: the carry limit keeps FA3's wheel and the capture pack "
                     "out of one call")
        notes.extend(f"(earlier call) {n}" for n in prev.get("notes", []))
    for part in (p for p in SPEED_PARTS if p in parts):
        log(f"{part}: {len(shapes)} shapes")
        # This part's records replace its own (from --speed-from) and keep the other part's.
        kept = [r for r in res["speed"] if report.is_rope(r) != (part == "rope")]
        res["speed"] = kept + run_speed(args, shapes, backend, fa3, notes, part)
        clocks[f"after_{part}"] = gpu_clocks()
        write()  # a later part that hangs into the session's limit must not cost these
    if "accuracy" in parts:
        res["accuracy"], res["lse"] = run_accuracy(args, backend, fa3, notes)
        clocks["after_accuracy"] = gpu_clocks()
        write()
    if "captured" in parts:
        import captured_speed
        log(f"captured: speed on the activations in {args.captures}")
        res["speed_captured"] = captured_speed.run(args, backend, fa3, notes, log)
        clocks["after_captured"] = gpu_clocks()
        write()
    if "prepass" in parts:
        if args.dry_run:
            notes.append("prepass: bench/bench_prepass.py needs the GPU; not run in a dry run")
        else:
            log("prepass: bench/bench_prepass.py")
            merge_prepass_bench(args, res, notes)
    c = clocks["start"]
    clocks["summary"] = (f"SM {c.get('clocks.sm', '?')} (max {c.get('clocks.max.sm', '?')}), "
                         f"memory {c.get('clocks.mem', '?')}, power {c.get('power.draw', '?')} / "
                         f"{c.get('power.limit', '?')} at start; SM "
                         f"{clocks.get('after_speed', {}).get('clocks.sm', '?')} after the speed part"
                         + (f", {clocks['after_rope'].get('clocks.sm', '?')} after the rope part"
                            if "after_rope" in clocks else ""))
    for p in write():
        log(f"wrote {p}")
    log(f"harness: done in {time.time() - T0:.0f} s (estimate for speed {est:.0f} s, rope "
        f"{ests['rope']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

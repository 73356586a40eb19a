#!/usr/bin/env python3
"""Runs fp8attn-eval (the CPU numerics model) over the study's datasets and scheme lists
(lab/study/schemes.py) and writes the raw records to results/numerics-raw-<part>.json (each
record carries fp8attn-eval's command, commit, machine and date). Parts:

  captures   every capture (data/cache/study/*-prefix<P>.safetensors and *-tail<T>, from
             lab/study/make_subsets.py), all heads, causal and not; every scheme list
  synthetic  gaussian, outlier (FA3's test) and kbias, b=1, s=2048, 4 of 32 heads; every list
  per-head   one file per query head (prefix); PER_HEAD schemes
  full       the full captures (8192 tokens, every head); FULL schemes

Runs under nice -n 10 with --threads 2 (the machine's cores are shared).
usage: lab/study/run_study.py [--parts captures,synthetic,per-head,full] [--eval PATH]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import schemes as S  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
STUDY = ROOT / "data/cache/study"


def run_eval(exe, data_args, specs, out_json, threads, extra=()):
    cmd = ["nice", "-n", "10", str(exe), *data_args, "--mask", "both", "--threads", str(threads),
           "--scheme", ",".join(specs), "--json", str(out_json), "--quiet", *extra]
    t0 = time.time()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"fp8attn-eval failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
    return json.loads(out_json.read_text()), time.time() - t0


RUN_KEYS = ("command", "commit", "machine", "date")


def compact(part, records, log, wall_s):
    """fp8attn-eval repeats its run metadata (command, commit, machine, date) in every record:
    keep one copy per run (`runs`) and give each record the index of its run."""
    runs, out = [], []
    for r in records:
        key = tuple(r.get(k) for k in RUN_KEYS)
        if key not in runs:
            runs.append(key)
        out.append({**{k: v for k, v in r.items() if k not in RUN_KEYS}, "run": runs.index(key)})
    return {"part": part, "runner": "lab/study/run_study.py --parts " + part, "wall_s": wall_s, "jobs": log,
            "runs": [dict(zip(RUN_KEYS, k)) for k in runs], "records": out}


def expand(raw):
    """The records of a raw file with their run metadata (compact or not)."""
    runs = raw.get("runs")
    return [{**r, **runs[r["run"]]} if runs is not None and "run" in r else r for r in raw["records"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parts", default="captures,synthetic,per-head,full")
    ap.add_argument("--eval", type=pathlib.Path, default=ROOT / "build-h5/tools/eval/fp8attn-eval")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / "results")
    ap.add_argument("--compact", action="store_true", help="rewrite existing results/numerics-raw-*.json compactly (same data)")
    args = ap.parse_args()
    if args.compact:
        for f in sorted(args.out.glob("numerics-raw-*.json")):
            d = json.loads(f.read_text())
            f.write_text(json.dumps(compact(d["part"], expand(d), d["jobs"], d["wall_s"]), separators=(",", ":")) + "\n")
            print(f"compacted {f.name}: {f.stat().st_size / 2**20:.1f} MiB")
        return
    if not args.eval.exists():
        sys.exit(f"{args.eval} missing: cmake -S . -B build-h5 -DFP8ATTN_BUILD_CUDA=OFF && cmake --build build-h5 --target fp8attn-eval")
    every = list(dict.fromkeys([*S.CANDIDATES.values(), *S.LIFTS.values(), *S.ABLATION.values(), *S.COMPONENTS]))
    tmp = args.out / ".numerics-tmp.json"
    for part in args.parts.split(","):
        records, log = [], []
        t_part = time.time()
        if part == "captures":
            files = sorted(STUDY.glob("*-prefix*.safetensors")) + sorted(STUDY.glob("*-tail*.safetensors"))
            files = [f for f in files if "-h" not in f.stem.split("-prefix")[-1]]
            jobs = [(["--data", str(f.relative_to(ROOT))], every, ()) for f in files]
        elif part == "synthetic":
            jobs = [(["--synthetic", kind, "--seqlen", "2048", "--heads", "32", "--heads-subset", "4",
                      "--seed", "1"], every, ()) for kind in ("gaussian", "outlier", "kbias")]
        elif part == "per-head":
            files = sorted(f for f in STUDY.glob("*-prefix*-h*.safetensors"))
            jobs = [(["--data", str(f.relative_to(ROOT))], list(S.PER_HEAD.values()), ()) for f in files]
        elif part == "full":
            files = sorted((ROOT / "data/cache/captures").glob("*/layer*.safetensors"))
            jobs = [(["--data", str(f.relative_to(ROOT))], list(S.FULL.values()), ()) for f in files]
        else:
            sys.exit(f"unknown part {part}")
        if not jobs:
            sys.exit(f"part {part}: no data (run lab/study/make_subsets.py --per-head first)")
        for data_args, specs, extra in jobs:
            recs, sec = run_eval(args.eval, data_args, specs, tmp, args.threads, extra)
            if part == "full":  # full captures are named layerNN: say which model
                model = pathlib.Path(data_args[1]).parent.name
                for r in recs:
                    r["dataset"] = f"{model}-L{r['dataset'].replace('layer', '')}-full8192"
            records += recs
            log.append({"data": data_args, "schemes": len(specs), "wall_s": round(sec, 1)})
            print(f"[study] {part} {' '.join(data_args)}: {len(recs)} records, {sec:.1f} s", flush=True)
        tmp.unlink(missing_ok=True)
        out = args.out / f"numerics-raw-{part}.json"
        out.write_text(json.dumps(compact(part, records, log, round(time.time() - t_part, 1)), separators=(",", ":")) + "\n")
        print(f"[study] wrote {out.relative_to(ROOT)} ({len(records)} records, {time.time() - t_part:.0f} s)", flush=True)


if __name__ == "__main__":
    main()

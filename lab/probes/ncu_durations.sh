#!/usr/bin/env bash
# Kernel-only durations of fp8attn's and FA3 FP8's calls at short shapes (Nsight Compute, base
# clocks, every kernel each call launches), where the eager head-to-head protocol times the host
# side of each call too (lab/perf-log.md, twenty-fifth session, "the lead beyond the sweep").
# On the GPU machine from the repo root after carry_bundle and carry_fa3 (lab/probes/carry.sh).
# SHAPES: "b s h hkv causal [sq]" lines; the last CALLS calls' kernels are listed, one line each.
set -u
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
[[ -x "$NCU" ]] || { echo "ncu not found"; exit 1; }
SHAPES=${SHAPES:-"8 512 32 8 1
4 8192 32 8 1 128"}
while read -r b s h hkv c sq; do
  [[ -z "$b" ]] && continue
  for m in ${METHODS:-fp8attn fa3_fp8}; do
    echo "== $m b$b sk$s sq${sq:-$s} h$h/$hkv causal=$c"
    timeout 200 "$NCU" --section SpeedOfLight --csv --page details python3 lab/probes/ncu_vs_fa3.py \
      --lib .carry/libfp8attn.so --method "$m" --b "$b" --s "$s" --h "$h" --hkv "$hkv" --causal "$c" \
      --sq "${sq:-0}" --calls 5 2>/dev/null |
      python3 -c '
import csv, sys
rows = [r for r in csv.reader(l for l in sys.stdin if l.startswith("\""))]
head, rows = rows[0], rows[1:]
ki, ni, vi, ui = (head.index(x) for x in ("Kernel Name", "Metric Name", "Metric Value", "Metric Unit"))
for r in rows:
    if r[ni] == "Duration":
        print(f"  {r[ki][:90]:90s} {r[vi]:>10s} {r[ui]}")' | tail -n "${TAIL:-12}"
  done
done <<< "$SHAPES"

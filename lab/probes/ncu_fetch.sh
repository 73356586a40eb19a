#!/usr/bin/env bash
# GPU machine (~2 minutes): is a build's loss an instruction-fetch one? Nsight Compute's raw
# WarpStateStats (the per-issue stall reasons, no_instruction among them) and SpeedOfLight
# (duration) of the default kernel, for each TAG=LIB, at each shape of SHAPES ("b s h hkv causal",
# ';'-separated; default 16 x 1k and 2 x 8k non-causal), at the GPU's own clocks.
# lab/perf-log.md, twentieth session ("the folded epilogue, measured").
#   bash lab/probes/ncu_fetch.sh rel=/tmp/lot/rel/libfp8attn.so fold=/tmp/lot/fold/libfp8attn.so
# Writes $OUT/ncu-fetch.tar.gz (one CSV per TAG and shape); summarise here with
# lab/tools/ncu_fetch_summary.py. SOURCE=1: the per-SASS-line stall samples instead (SourceCounters,
# source page), for lab/tools/ncu_stall_reasons.py and lab/tools/ncu_fetch_summary.py --lines.
# METHOD (default fp8attn): the method ncu_vs_fa3.py runs, e.g. fp8attn_accurate.
set -u
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
[[ -x "$NCU" ]] || { echo "ncu not found"; exit 1; }
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/fetch"
IFS=';' read -ra shapes <<< "${SHAPES:-16 1024 32 32 0;2 8192 32 32 0}"
for spec in "$@"; do
  tag=${spec%%=*} lib=${spec#*=}
  for shape in "${shapes[@]}"; do
    read -r b s h hkv c <<< "$shape"
    f="$OUT/fetch/$tag-b$b-s$s-c$c.csv"
    if [[ -n ${SOURCE:-} ]]; then
      what=(--section SourceCounters --page source --print-source sass)
    else
      what=(--section WarpStateStats --section SpeedOfLight --page raw)
    fi
    timeout 200 "$NCU" --clock-control none --kernel-name-base demangled -k regex:'attention_fwd_kernel' \
      --launch-skip 3 --launch-count 1 "${what[@]}" --csv \
      python3 lab/probes/ncu_vs_fa3.py --lib "$lib" --method "${METHOD:-fp8attn}" \
      --b "$b" --s "$s" --h "$h" --hkv "$hkv" --causal "$c" > "$f" 2> "${f%.csv}.err"
    echo "== $tag b$b s$s c$c rc=$? $(wc -l < "$f") lines"
  done
done
tar -C "$OUT" -czf "$OUT/ncu-fetch.tar.gz" fetch && rm -rf "$OUT/fetch"

#!/usr/bin/env bash
# On the GPU machine, one call (~3 minutes): where the 224-key exact kernel's issue rate goes
# (lab/perf-log.md, fourteenth session, "the 224-key exact kernel in Nsight Compute"). For relx
# (.carry/lot.tar.xz's rel, FP8ATTN_P_E4M3_EXACT at 192 keys) and x224 (.carry/lot-nc224.tar.xz,
# the same mode at 224 keys), at SHAPE (default the seed, non-causal), one launch each:
# the per-SASS-line warp-stall samples (SourceCounters, --page source --print-source sass, at the
# GPU's own clocks, as ncu_source_vs_fa3.sh); lab/tools/ncu_stall_reasons.py then sums the
# stall_* columns per kernel side by side and lists each kernel's top lines.
# Carry the two archives and .carry/fa3_site.tar.xz (carry_lot installs FA3; unused here).
# Files in $OUT: b224-source.log, b224-stalls.txt, b224-source.tar.gz (the CSVs).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/src"
source lab/probes/carry.sh
carry_lot rel=rel "$OUT/b224-source.log" > /dev/null
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
read -r b s h hkv c <<< "${SHAPE:-2 8192 32 32 0}"
for run in relx:rel x224:nc224; do
  IFS=: read -r tag folder <<< "$run"
  args=(python3 lab/probes/ncu_vs_fa3.py --lib "$B/$folder/libfp8attn.so" --method fp8attn_exact
        --b "$b" --s "$s" --h "$h" --hkv "$hkv" --causal "$c")
  timeout 100 "$NCU" --clock-control none -k regex:attention_fwd_kernel --launch-skip 3 --launch-count 1 \
    --section SourceCounters --section WarpStateStats --page source --print-source sass --csv "${args[@]}" \
    > "$OUT/src/$tag-source.csv" 2>> "$OUT/b224-source.log"
  echo "== $tag source rc=$? $(wc -l < "$OUT/src/$tag-source.csv") lines" | tee -a "$OUT/b224-source.log"
done
python3 lab/tools/ncu_stall_reasons.py "$OUT/src" relx x224 > "$OUT/b224-stalls.txt" 2>&1
tar -C "$OUT" -czf "$OUT/b224-source.tar.gz" src && rm -rf "$OUT/src"
head -80 "$OUT/b224-stalls.txt"

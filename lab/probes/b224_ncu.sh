#!/usr/bin/env bash
# On the GPU machine, one call (~1-3 minutes): why the 224-key kernels lost 6-12% head to head
# (lab/perf-log.md, fourteenth session, "224-key blocks again, measured", and the two entries after
# it). Nsight Compute on one launch each of relx (the exact mode at 192 keys, .carry/lot.tar.xz's
# rel) and x224 (the exact mode at 224 keys, .carry/lot-nc224.tar.xz) at SHAPE (default
# "2 8192 32 32 0": the seed, non-causal). Carry those two archives and .carry/fa3_site.tar.xz.
#   MODE=details (default): speed of light, launch, occupancy, scheduler, warp states,
#     instructions, compute and memory workload, FA3 FP8 (224 keys) as the third kernel;
#     files b224-ncu.log, b224-ncu-summary.txt (lab/probes/ncu_summary.py), b224-ncu.tar.gz.
#   MODE=source: the per-SASS-line warp-stall samples (SourceCounters, --page source, at the GPU's
#     own clocks, as ncu_source_vs_fa3.sh), summed per reason and over the key loop by
#     lab/tools/ncu_stall_reasons.py; files b224-source.log, b224-stalls.txt, b224-source.tar.gz.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ncu"
MODE=${MODE:-details}
log=$OUT/b224-${MODE/details/ncu}.log
source lab/probes/carry.sh
carry_lot rel=rel "$log" > /dev/null
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
read -r b s h hkv c <<< "${SHAPE:-2 8192 32 32 0}"
if [[ $MODE == source ]]; then
  runs=(relx:rel:fp8attn_exact x224:nc224:fp8attn_exact)
  opts=(--clock-control none --section SourceCounters --section WarpStateStats --page source --print-source sass)
else
  runs=(relx:rel:fp8attn_exact x224:nc224:fp8attn_exact fa3_fp8:rel:fa3_fp8)
  opts=(--section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats
        --section WarpStateStats --section InstructionStats --section ComputeWorkloadAnalysis
        --section MemoryWorkloadAnalysis --page details)
fi
for run in "${runs[@]}"; do
  IFS=: read -r tag folder method <<< "$run"
  csv=$OUT/ncu/$tag-b$b-s$s-h$h-$hkv-c$c${MODE/details/}.csv
  [[ $MODE == source ]] && csv=$OUT/ncu/$tag-source.csv
  timeout 150 "$NCU" --kernel-name-base demangled -k regex:'attention_fwd_kernel|FlashAttnFwd' \
    --launch-skip 3 --launch-count 1 "${opts[@]}" --csv \
    python3 lab/probes/ncu_vs_fa3.py --lib "$B/$folder/libfp8attn.so" --method "$method" \
    --b "$b" --s "$s" --h "$h" --hkv "$hkv" --causal "$c" > "$csv" 2>> "$log"
  echo "== $tag rc=$? $(wc -l < "$csv") lines" | tee -a "$log"
done
if [[ $MODE == source ]]; then
  python3 lab/tools/ncu_stall_reasons.py "$OUT/ncu" relx x224 > "$OUT/b224-stalls.txt" 2>&1
  tar -C "$OUT" -czf "$OUT/b224-source.tar.gz" ncu && rm -rf "$OUT/ncu"
  head -80 "$OUT/b224-stalls.txt"
else
  python3 lab/probes/ncu_summary.py "$OUT"/ncu/*.csv > "$OUT/b224-ncu-summary.txt" 2>&1
  tar -C "$OUT" -czf "$OUT/b224-ncu.tar.gz" ncu && rm -rf "$OUT/ncu"
  tail -60 "$OUT/b224-ncu-summary.txt"
fi

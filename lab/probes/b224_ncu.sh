#!/usr/bin/env bash
# On the GPU machine, one call (~3 minutes): why the 224-key kernels lost 6-12% head to head
# (lab/perf-log.md, fourteenth session, "224-key blocks again, measured"). Nsight Compute (speed of
# light, launch, occupancy, scheduler, warp states, instructions) on one launch each of relx (the
# exact mode at 192 keys, .carry/lot.tar.xz's rel), x224 (the exact mode at 224 keys,
# .carry/lot-nc224.tar.xz) and FA3 FP8 (224 keys) at SHAPE (default "2 8192 32 32 0": the seed,
# non-causal). Carry those two archives and .carry/fa3_site.tar.xz.
# Files in $OUT: b224-ncu.log, b224-ncu-summary.txt, b224-ncu.tar.gz (the CSVs).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ncu"
source lab/probes/carry.sh
carry_lot rel=rel "$OUT/b224-ncu.log" > /dev/null
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
read -r b s h hkv c <<< "${SHAPE:-2 8192 32 32 0}"
for run in relx:rel:fp8attn_exact x224:nc224:fp8attn_exact fa3_fp8:rel:fa3_fp8; do
  IFS=: read -r tag folder method <<< "$run"
  timeout 150 "$NCU" --kernel-name-base demangled -k regex:'attention_fwd_kernel|FlashAttnFwd' \
    --launch-skip 3 --launch-count 1 --section SpeedOfLight --section LaunchStats --section Occupancy \
    --section SchedulerStats --section WarpStateStats --section InstructionStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --csv --page details \
    python3 lab/probes/ncu_vs_fa3.py --lib "$B/$folder/libfp8attn.so" --method "$method" \
    --b "$b" --s "$s" --h "$h" --hkv "$hkv" --causal "$c" > "$OUT/ncu/$tag-b$b-s$s-h$h-$hkv-c$c.csv" \
    2>> "$OUT/b224-ncu.log"
  echo "== $tag rc=$? $(wc -l < "$OUT/ncu/$tag-b$b-s$s-h$h-$hkv-c$c.csv") lines" | tee -a "$OUT/b224-ncu.log"
done
python3 lab/probes/ncu_summary.py "$OUT"/ncu/*.csv > "$OUT/b224-ncu-summary.txt" 2>&1
tar -C "$OUT" -czf "$OUT/b224-ncu.tar.gz" ncu && rm -rf "$OUT/ncu"
tail -60 "$OUT/b224-ncu-summary.txt"

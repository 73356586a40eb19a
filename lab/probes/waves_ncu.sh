#!/usr/bin/env bash
# GPU machine (~3 minutes): issue 13's sq 2k x sk 16k GQA non-causal row (512 tiles) against
# 16k x 16k GQA (4096 tiles of the same length): fp8attn trails FA3 FP8 on the first and leads it
# on the second (lab/perf-log.md, "shape-set waves" and "launch", ninth session). Nsight Compute
# at the GPU's own clocks, WarpStateStats, SpeedOfLight and MemoryWorkloadAnalysis (L2 hit rates,
# DRAM bytes) of both kernels at both shapes, so the next session can tell the memory system from
# the tile's own issue. Carry .carry/bundle.tar.xz and .carry/fa3_site.tar.xz.
#   WAVES_LIB: another library for the fp8attn rows (e.g. /tmp/vtlib/vt/libfp8attn.so, unpacked
#   from .carry/lot-vt.tar.xz by lab/probes/vt128_check.sh; WAVES_LIB_ARCHIVE=.carry/lot-vt.tar.xz
#   unpacks it here: WAVES_LIB=/tmp/waveslib/vt/libfp8attn.so); WAVES_METHODS (default "fp8attn
#   fa3_fp8"); WAVES_TAG: a prefix for the CSV names (e.g. vt_: the summary groups by what follows the first "-").
# Writes $OUT/waves-ncu.tar.gz (one CSV per method and sq); summarise with
# lab/tools/ncu_fetch_summary.py.
set -u
cd "$(dirname "$0")/../.."
source lab/probes/carry.sh
carry_bundle
carry_fa3 > /dev/null 2>&1
if [[ -n "${WAVES_LIB_ARCHIVE:-}" ]]; then
  rm -rf /tmp/waveslib && mkdir -p /tmp/waveslib && tar -xJf "$WAVES_LIB_ARCHIVE" -C /tmp/waveslib
fi
LIB=${WAVES_LIB:-$BUNDLE_LIB}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
mkdir -p "$OUT/waves"
for m in ${WAVES_METHODS:-fp8attn fa3_fp8}; do
  for sq in 2048 16384; do
    f="$OUT/waves/${WAVES_TAG:-}$m-b1-s$sq-c0.csv"
    timeout 150 "$NCU" --clock-control none --kernel-name-base demangled \
      -k regex:'attention_fwd_kernel|FlashAttnFwd|flash_fwd' --launch-skip 3 --launch-count 1 \
      --section WarpStateStats --section SpeedOfLight --section MemoryWorkloadAnalysis --page raw --csv \
      python3 lab/probes/ncu_vs_fa3.py --lib "$LIB" --method "$m" --b 1 --s 16384 --sq "$sq" \
      --h 32 --hkv 8 --causal 0 > "$f" 2> "${f%.csv}.err"
    echo "== $m sq $sq rc=$? $(wc -l < "$f") lines"
  done
done
tar -C "$OUT" -czf "$OUT/waves-ncu.tar.gz" waves && rm -rf "$OUT/waves"

#!/usr/bin/env bash
# Nsight Compute's per-instruction warp-stall samples (SourceCounters) of the rotated, row-scaled
# Q pass at the seed shape (lab/probes/ncu_prepass.py's launches; the first quantize_q in
# the profiled range), at the GPU's own clocks: SASS with samples to $OUT, the top lines printed.
# GPU machine, carry [".carry"].
cd "$(dirname "$0")/../.."
source lab/probes/lib.sh
probe_init
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
[[ -x "$NCU" ]] || { echo "ncu not found"; exit 1; }
out=${OUT:-.}/ncu-qpass-source-$(cat .carry/COMMIT).csv
timeout 300 "$NCU" --profile-from-start off --clock-control none -k regex:quantize_q_kernel \
  --launch-count 1 --section SourceCounters --section WarpStateStats \
  --page source --print-source sass --csv \
  python3 lab/probes/ncu_prepass.py .carry/libfp8attn.so > "$out" 2> "${out%.csv}.err"
echo "ncu rc=$? $(wc -l < "$out") lines"
head -c 600 "$out"; echo
tail -3 "${out%.csv}.err"

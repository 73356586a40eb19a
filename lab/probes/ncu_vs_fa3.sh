#!/usr/bin/env bash
# Nsight Compute on fp8attn's default kernel and FA3 FP8's kernel at the same shapes (issue 13:
# "ncu on both kernels side by side shows where the cycles differ"). Runs on the GPU machine from
# the repo root with .carry (scripts/stage_gpu.sh) and FA3 importable (PYTHONPATH=/tmp/site).
# SHAPES: "b s h hkv causal [sq]" lines (s: the keys; sq, when given, the queries); METHODS (default "fp8attn fa3_fp8"; issue 14:
# "fp8attn_accurate fa3_bf16"). CSVs and a summary to $OUT.
set -u
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
[[ -x "$NCU" ]] || { echo "ncu not found"; exit 1; }
SHAPES=${SHAPES:-"16 1024 32 32 1
2 8192 32 32 1"}
mkdir -p "${OUT:-.}/ncu"
while read -r b s h hkv c sq; do
  [[ -z "$b" ]] && continue
  for m in ${METHODS:-fp8attn fa3_fp8}; do
    tag="$m-b$b-s$s-h$h-$hkv-c$c${sq:+-sq$sq}"
    timeout 240 "$NCU" --kernel-name-base demangled -k regex:'attention_fwd_kernel|FlashAttnFwd|flash_fwd' --launch-skip 3 --launch-count 1 \
      --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section LaunchStats \
      --section InstructionStats --section ComputeWorkloadAnalysis --section Occupancy --section MemoryWorkloadAnalysis \
      --csv --page details python3 lab/probes/ncu_vs_fa3.py --lib .carry/libfp8attn.so --method "$m" \
      --b "$b" --s "$s" --h "$h" --hkv "$hkv" --causal "$c" --sq "${sq:-0}" > "${OUT:-.}/ncu/$tag.csv" 2> "${OUT:-.}/ncu/$tag.err"
    echo "== $tag rc=$? $(wc -l < "${OUT:-.}/ncu/$tag.csv") lines"
  done
done <<< "$SHAPES"
python3 lab/probes/ncu_summary.py "${OUT:-.}"/ncu/*.csv | tee "${OUT:-.}/ncu-summary.txt"
tail -n 3 "${OUT:-.}"/ncu/*.err
tar -C "${OUT:-.}" -czf "${OUT:-.}/ncu.tar.gz" ncu && rm -rf "${OUT:-.}/ncu"

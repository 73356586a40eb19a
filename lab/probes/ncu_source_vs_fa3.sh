#!/usr/bin/env bash
# Per-SASS-instruction warp-stall samples (SourceCounters) of fp8attn's default kernel and FA3 FP8's
# at one shape ("b s h hkv causal" in SHAPE), at the GPU's own clocks, plus the raw WarpStateStats
# (stall reasons). METHODS (default "fp8attn fa3_fp8"; any of lab/probes/ncu_vs_fa3.py's, e.g.
# "fp8attn fp8attn_accurate" for the two modes' kernels side by side).
# GPU machine; carry .carry/libfp8attn.so and .whl; FA3 in /tmp/site.
set -u
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
[[ -x "$NCU" ]] || { echo "ncu not found"; exit 1; }
read -r b s h hkv c <<< "${SHAPE:-16 1024 32 32 1}"
mkdir -p "${OUT:-.}/src"
for m in ${METHODS:-fp8attn fa3_fp8}; do
  tag="$m-b$b-s$s-c$c"
  timeout 240 "$NCU" --clock-control none --kernel-name-base demangled -k regex:'attention_fwd_kernel|FlashAttnFwd' \
    --launch-skip 3 --launch-count 1 --section SourceCounters --section WarpStateStats \
    --page source --print-source sass --csv \
    python3 lab/probes/ncu_vs_fa3.py --lib .carry/libfp8attn.so --method "$m" \
    --b "$b" --s "$s" --h "$h" --hkv "$hkv" --causal "$c" > "${OUT:-.}/src/$tag-source.csv" 2> "${OUT:-.}/src/$tag.err"
  echo "== $tag source rc=$? $(wc -l < "${OUT:-.}/src/$tag-source.csv") lines"
  timeout 240 "$NCU" --clock-control none --kernel-name-base demangled -k regex:'attention_fwd_kernel|FlashAttnFwd' \
    --launch-skip 3 --launch-count 1 --section WarpStateStats --page raw --csv \
    python3 lab/probes/ncu_vs_fa3.py --lib .carry/libfp8attn.so --method "$m" \
    --b "$b" --s "$s" --h "$h" --hkv "$hkv" --causal "$c" > "${OUT:-.}/src/$tag-raw.csv" 2>> "${OUT:-.}/src/$tag.err"
  echo "== $tag raw rc=$?"
done
tar -C "${OUT:-.}" -czf "${OUT:-.}/ncu-source.tar.gz" src && rm -rf "${OUT:-.}/src"

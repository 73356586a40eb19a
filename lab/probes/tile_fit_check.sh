#!/usr/bin/env bash
# Issue 13 on the GPU machine, one call (~3 minutes): where each configuration's cycles go, split
# into a cost per key and a cost per tile (lab/tools/ncu_tile_fit.py). Nsight Compute at fixed
# clocks on fp8attn at two non-causal shapes with the same 4096 tiles (4 x 4k and 1 x 16k, h 32),
# once per configuration, and on FA3 FP8 once; the fit is robust to a configuration re-scheduling
# the key loop (that moves the per-key term, not the per-tile one).
#   bash lab/probes/tile_fit_check.sh TAG=FOLDER[,ENV=VALUE...] ...   (FOLDER inside .carry/lot*.tar.xz)
# Carry the archives and FA3 (.carry/fa3_site.tar.xz).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ncu"
source lab/probes/carry.sh
carry_lot "$1" "$OUT/tile-fit.log"
first=${1#*=}; first=${first%%,*}
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
SHAPES=("4 4096 32 32" "1 16384 32 32")
profile() {  # tag lib method b s h hkv [env...]
  local tag=$1 lib=$2 method=$3 b=$4 s=$5 h=$6 hkv=$7; shift 7
  env "$@" timeout 240 "$NCU" --kernel-name-base demangled -k regex:'attention_fwd_kernel|FlashAttnFwd' \
    --launch-skip 3 --launch-count 1 --section SpeedOfLight --section LaunchStats --section InstructionStats \
    --csv --page details python3 lab/probes/ncu_vs_fa3.py --lib "$lib" --method "$method" \
    --b "$b" --s "$s" --h "$h" --hkv "$hkv" --causal 0 > "$OUT/ncu/$tag-b$b-s$s-h$h-$hkv-c0.csv" 2>> "$OUT/tile-fit.log"
  echo "== $tag b$b s$s h$h/$hkv rc=$?" | tee -a "$OUT/tile-fit.log"
}
tags=()
for c in "$@"; do
  tag=${c%%=*} rest=${c#*=}
  folder=${rest%%,*} envs=()
  [[ "$rest" == *,* ]] && IFS=, read -r -a envs <<< "${rest#*,}"
  for sh in "${SHAPES[@]}"; do profile "$tag" "$B/$folder/libfp8attn.so" fp8attn $sh "${envs[@]}"; done
  tags+=("$tag")
done
for sh in "${SHAPES[@]}"; do profile fa3_fp8 "$B/$first/libfp8attn.so" fa3_fp8 $sh; done
tar -C "$OUT" -czf "$OUT/tile-fit-ncu.tar.gz" ncu && rm -rf "$OUT/ncu"
python3 lab/tools/ncu_tile_fit.py "$OUT/tile-fit-ncu.tar.gz" b4-s4096-h32-32-c0 b1-s16384-h32-32-c0 \
  --methods "${tags[@]}" fa3_fp8 | tee "$OUT/tile-fit.txt"

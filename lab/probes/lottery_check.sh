#!/usr/bin/env bash
# Issue 13 on the GPU machine, one call (~5 minutes): lottery_ab.py over the libraries of
# .carry/lot.tar.xz (staged by lab/probes/lottery_stage.sh: rel = main + lab/variants/host-knobs.patch,
# and the same tree with the two 192-key E4M3 kernels compiled under other ptxas options), each
# configuration head to head with FA3 FP8 at the seed shape and the short-tile rows.
# Carry [".carry/lot.tar.xz", ".whl"] (the wheel only if the machine is cold).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
B=$(carry_unpack .carry/lot.tar.xz lot)
carry_fa3
carry_header "$B/rel" | tee "$OUT/lottery.log"
cat "$B/BUILDS" | tee -a "$OUT/lottery.log"
L=$B/rel/libfp8attn.so
variants=()
for v in ${LOT_VARIANTS:-rul0 rul6 o1}; do variants+=(--config "$v=$B/$v/libfp8attn.so"); done
timeout "${LOT_TIMEOUT:-540}" python3 lab/probes/lottery_ab.py --out "$OUT" --rounds "${LOT_ROUNDS:-2}" \
  --config "rel=$L" --config "tma8k=$L,FP8ATTN_LAB_SHORT_TILE_KEYS=1073741824" \
  --config "sec4=$L,FP8ATTN_LAB_SECTION_DIV=4" --config "sec1=$L,FP8ATTN_LAB_SECTION_DIV=1" \
  "${variants[@]}" 2>&1 | tee -a "$OUT/lottery.log"

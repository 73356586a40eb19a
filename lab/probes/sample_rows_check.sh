#!/usr/bin/env bash
# On the GPU machine, one call (~4 minutes): the one-pass sample of the bundle's library (2faffcc:
# 512 rows; 5c6ffb7: one key in 8 within [128, 1024]) against 128 rows (the thirteenth session;
# lab/perf-log.md, "the one-pass centre's residual reaches the P V accumulator"). Carry
# .carry/bundle.tar.xz (scripts/stage_gpu.sh BUNDLE=1 NO_CAPTURES=1), .carry/lot.tar.xz
# (lottery_stage.sh none at 805d1af: rel, 128 rows) and .carry/fa3_site.tar.xz.
#   1. the one-pass GPU tests (GPU bytes against the CPU mirror, whose sample follows the header);
#   2. lab/probes/one_pass_seeds_gpu.py at SEEDS_AT (length:seeds pairs, default 4096:10), and
#      with DECOMPOSE=1 one_pass_decompose_gpu.py, 4 seeds;
#   3. lab/probes/one_pass_e2e.py on each library: one-pass vs exact mean head to head, each vs FA3
#      BF16 (the sample kernel's cost shows as the change of one-pass / mean between the two).
# Files in $OUT (TAG: the bundle's, default rows512): rows.log, rows-tests.log,
# one-pass-seeds-gpu-TAG[-sLEN].json, [one-pass-decompose-gpu-TAG.json], one-pass-e2e-TAG.json,
# one-pass-e2e-rows128.json (at most 8 files come back).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
mkdir -p .carry && tar -xJf .carry/bundle.tar.xz -C .carry
B=/tmp/lot; rm -rf "$B"; mkdir -p "$B"; tar -xJf .carry/lot.tar.xz -C "$B"
source lab/probes/carry.sh
carry_env .carry
{
carry_header .carry
carry_tests .carry "$OUT/rows-tests.log" test_quant:120 test_quant_attention:60 test_quant_rope:60 \
  test_quant_api:60
carry_fa3
TAG=${TAG:-rows512}
for at in ${SEEDS_AT:-4096:10}; do
  len=${at%%:*} n=${at##*:} sfx=; [[ $len == 4096 ]] || sfx=-s$len
  echo "== one_pass_seeds_gpu.py, s $len, $n seeds"
  timeout 200 python3 lab/probes/one_pass_seeds_gpu.py .carry/libfp8attn.so \
    "$OUT/one-pass-seeds-gpu-$TAG$sfx.json" "$n" "$len"
done
if [[ ${DECOMPOSE:-1} == 1 ]]; then
  mkdir -p /tmp/dec && timeout 90 python3 lab/probes/one_pass_decompose_gpu.py .carry/libfp8attn.so /tmp/dec 4 \
    | tail -18 && cp /tmp/dec/one-pass-decompose-gpu.json "$OUT/one-pass-decompose-gpu-$TAG.json"
fi
timeout 100 python3 lab/probes/one_pass_e2e.py .carry/libfp8attn.so "$OUT/one-pass-e2e-$TAG.json" \
  .carry/COMMIT
timeout 100 python3 lab/probes/one_pass_e2e.py "$B/rel/libfp8attn.so" "$OUT/one-pass-e2e-rows128.json" \
  "$B/rel/COMMIT"
} 2>&1 | tee "$OUT/rows.log"

#!/usr/bin/env bash
# One GPU call: kernel softmax variants (correctness on awkward shapes, then the seed shape's speed
# beside SDPA BF16), then the pre-pass GPU tests (bit-exactness with the CPU mirror) and its
# bandwidth bench. .carry from scripts/stage_gpu.sh + the probe binary.
source "$(dirname "$0")/lib.sh"
probe_init
echo "== kernel correctness (kernel-only error vs FP64 on dequantized inputs; rc 0 = pass)"
for v in tc-rowsum-split split default; do
  probe_check "FP8ATTN_VARIANT=$v" "${PROBE_SHAPES[@]}"
done
for shape in "3 1000 1000 5 5 1" "2 2048 2048 32 8 0"; do
  timeout 60 $P $shape 3 32 1 > /tmp/line 2>&1; echo "[hilo] rc=$? $(cat /tmp/line)"
done
echo "== kernel speed (b=2 s=8192 h=32)"
for c in 0 1; do
  for v in default split tc-rowsum tc-rowsum-split default split tc-rowsum tc-rowsum-split; do
    echo "[$v] $(FP8ATTN_VARIANT=$v timeout 60 $P 2 8192 8192 32 32 $c 100 4 0 2>&1)"
  done
  echo "[hilo] $(timeout 60 $P 2 8192 8192 32 32 $c 100 4 1 2>&1)"
  timeout 120 python3 lab/probes/sdpa_ref.py 2 8192 32 $c 100 2>&1 | head -1
done
echo "== pre-pass GPU tests"
for t in test_quant test_quant_attention; do
  timeout 240 .carry/tests/$t > /tmp/$t.log 2>&1; rc=$?
  grep -E "^\[  (PASSED|FAILED) \]|^\[==========\]|Failure|error" /tmp/$t.log | head -30
  echo "[$t] rc=$rc"; cp /tmp/$t.log $OUT/ 2>/dev/null
done
echo "== pre-pass bench"
FP8ATTN_PREPASS_BENCH_SECONDS=${FP8ATTN_PREPASS_BENCH_SECONDS:-100} timeout 200 \
  python3 bench/bench_prepass.py --lib .carry/libfp8attn.so --out $OUT/prepass.json 2>&1 | tail -40

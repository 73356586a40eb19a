#!/usr/bin/env bash
# perf-log v12 on the GPU machine: correctness of the v12 kernel (.carry/, GPU tests against the
# CPU mirror and FP64, probe shapes), then the seed shape's speed, v12 and the previous kernel
# (.carry/base/, commit 79b77c7) alternating in the same call, beside SDPA BF16 (cuDNN); then the
# FP16-P branch (.carry/fp16/) if staged: smoke, its GPU tests, racecheck on one shape, speed.
source "$(dirname "$0")/lib.sh"
probe_init
BASE="env LD_LIBRARY_PATH=$PWD/.carry/base:$LD_LIBRARY_PATH"
echo "== v12 GPU tests"
timeout 240 .carry/tests/test_attention 2>&1 | grep -E "^\[  (FAILED|PASSED) |tests ran|FAILED TEST" | head -40
timeout 120 .carry/tests/test_quant_attention 2>&1 | grep -E "^\[  (FAILED|PASSED) |tests ran|FAILED TEST" | head -20
echo "== v12 probe shapes (kernel-only error vs FP64; rc 0 = pass)"
probe_check "" "${PROBE_SHAPES[@]}"
PP=1 probe_check "" "3 1000 1000 5 5 1" "2 2048 2048 32 8 0"
echo "== speed (b=2 s=8192 h=32): base (79b77c7) and v12 alternating"
for c in 1 0; do
  for rep in 1 2; do
    echo "[base c=$c] $($BASE timeout 60 .carry/base/kernel_probe 2 8192 8192 32 32 $c 100 4 0 2>&1)"
    echo "[v12  c=$c] $(timeout 60 $P 2 8192 8192 32 32 $c 100 4 0 2>&1)"
  done
  echo "[v12 gqa 32/8 c=$c] $(timeout 60 $P 2 8192 8192 32 8 $c 100 4 0 2>&1)"
  for v in ablate-nomask ablate-noepilogue; do
    echo "[v12 $v c=$c] $(FP8ATTN_VARIANT=$v timeout 60 $P 2 8192 8192 32 32 $c 100 4 0 2>&1)"
  done
  echo "[v12 hilo c=$c] $(timeout 60 $P 2 8192 8192 32 32 $c 100 4 1 2>&1)"
  probe_sdpa $c
done
if [[ -x .carry/fp16/kernel_probe ]]; then
  F16="env LD_LIBRARY_PATH=$PWD/.carry/fp16:$LD_LIBRARY_PATH"
  echo "== fp16-p branch ($(cat .carry/fp16/COMMIT 2>/dev/null)): smoke"
  for s in "1 127 300 4 2 1" "3 1000 1000 5 5 1" "2 2048 2048 32 8 0" "1 1 1 1 1 0"; do
    $F16 timeout 60 .carry/fp16/kernel_probe $s 3 32 2 > /tmp/line 2>&1; echo "[fp16] rc=$? $(cat /tmp/line)"
  done
  echo "== fp16-p GPU tests"
  $F16 timeout 300 .carry/fp16/test_attention --gtest_filter='*fp16*' 2>&1 | grep -E "^\[  (FAILED|PASSED) |tests ran|FAILED TEST|Failure|rmse|expected" | head -40
  echo "== fp16-p racecheck / synccheck (one small shape)"
  for t in racecheck synccheck; do
    $F16 timeout 200 compute-sanitizer --tool $t .carry/fp16/test_attention \
      --gtest_filter='Small/AgainstModelMirror.ElementWise/b1_sq129_sk257_h2_hkv1_causal_fp16' 2>&1 | grep -E "ERROR SUMMARY|PASSED|FAILED" | head -3
  done
  echo "== fp16-p speed"
  for c in 1 0; do
    echo "[fp16 c=$c] $($F16 timeout 60 .carry/fp16/kernel_probe 2 8192 8192 32 32 $c 100 4 2 2>&1)"
  done
fi
echo "== pre-pass (wip/prepass-bw merged): bit-exactness tests, then bandwidth"
probe_prepass "prepass "

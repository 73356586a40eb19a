#!/usr/bin/env bash
# v14 (tile broadcast, uniform descriptors): correctness on the probe shapes and the GPU tests,
# then the seed shape's speed, three repeats each, 224-key blocks beside, SDPA BF16 in the same run.
source "$(dirname "$0")/lib.sh"
probe_init
echo "== GPU tests"
for t in test_attention test_quant_attention; do
  timeout 200 .carry/tests/$t 2>&1 | grep -E "^\[  (FAILED|PASSED) |tests ran|FAILED TEST" | head -20
done
echo "== probe shapes"
probe_check "" "${PROBE_SHAPES[@]}"
PP=2 probe_check "" "3 1000 1000 5 5 1" "2 2048 2048 32 8 0"
PP=1 probe_check "" "3 1000 1000 5 5 1"
echo "== speed (b=2 s=8192 h=32)"
for c1 in 1 0; do
  for rep in 1 2 3; do echo "[v14 c=$c1 #$rep] $(timeout 60 $P 2 8192 8192 32 32 $c1 100 4 0 2>&1)"; done
  echo "[v14 block_n=224 c=$c1] $(FP8ATTN_BLOCK_N=224 timeout 60 $P 2 8192 8192 32 32 $c1 100 4 0 2>&1)"
  echo "[v14 fp16 c=$c1] $(timeout 60 $P 2 8192 8192 32 32 $c1 100 4 2 2>&1)"
  echo "[v14 hilo c=$c1] $(timeout 60 $P 2 8192 8192 32 32 $c1 100 4 1 2>&1)"
  probe_sdpa $c1
done

#!/usr/bin/env bash
# A short GPU check after a kernel change: the default and the accurate variant on the awkward
# shapes, then the seed shape's speed next to SDPA BF16 cuDNN.
set -u
export LD_LIBRARY_PATH=$PWD/.carry:${LD_LIBRARY_PATH:-}
P=.carry/kernel_probe
echo "commit: $(cat .carry/COMMIT 2>/dev/null) date: $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv
for pp in 0 1; do
  for shape in "1 1 1 1 1 0" "3 127 127 5 5 0" "3 1000 1000 5 5 1" "1 127 300 4 2 1" \
               "1 300 127 4 2 1" "2 2048 2048 32 8 0" "4 1000 1000 40 8 1"; do
    timeout 60 $P $shape 3 32 $pp > /tmp/line 2>&1; echo "[p=$pp] rc=$? $(cat /tmp/line)"
  done
done
for c in 0 1; do
  for pp in 0 1; do echo "[p=$pp] $(timeout 60 $P 2 8192 8192 32 32 $c 100 4 $pp 2>&1)"; done
  echo "[p=0 two-level] $(FP8ATTN_ACCUMULATION=two-level timeout 60 $P 2 8192 8192 32 32 $c 100 4 0 2>&1)"
  timeout 120 python3 lab/probes/sdpa_ref.py 2 8192 32 $c 100 | head -1
done

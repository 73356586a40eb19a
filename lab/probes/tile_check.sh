#!/usr/bin/env bash
# Issue 13 on the GPU machine, one call (~3 minutes), two tile-level changes against the release:
#   k3s    branch k3s: k3's division removal in the short-tile (TMA-store) configuration only;
#          first its kernel-level tests
#   khead  lab/variants/khead-only.patch: every kernel whose blocks are not 128 keys knows at
#          compile time that its K descale is one per head (the 192-key loop: 915 instructions
#          against 929, lab/perf-log.md)
# each library in its own process head to head with FA3 FP8 at 1k-8k (kernel_ab.py).
# Here: bash lab/probes/tile_stage.sh. Carry [".carry/tile.tar.xz", ".whl"]. Writes
# $OUT/k3s-tests.log and $OUT/kernel_ab.json.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
B=$(carry_unpack .carry/tile.tar.xz tile)
carry_fa3
carry_header "$B/k3s" | tee "$OUT/k3s-tests.log"
for v in rel k3s khead; do echo "$v: $(cat "$B/$v/COMMIT")"; done
carry_env "$B/k3s"
carry_tests "$B/k3s" "$OUT/k3s-tests.log" test_attention:100 test_graphs:40 test_nonfinite:40 test_attention_args:40
timeout 300 python3 lab/probes/kernel_ab.py --lib "$B/rel/libfp8attn.so" \
  --variant-lib "$B/k3s/libfp8attn.so" --variant-lib "$B/khead/libfp8attn.so" \
  --variant-tags fp8attn_release,fp8attn_k3s,fp8attn_khead --no-blocks \
  --variant-rows 0,1,2,3 --runs 100 --out "$OUT" 2>&1 | grep -v "^block size"

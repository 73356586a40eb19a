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
carry_begin .carry/tile.tar.xz tile "$OUT/k3s-tests.log" k3s rel khead
carry_tests "$B/k3s" "$OUT/k3s-tests.log" test_attention:100 test_graphs:40 test_nonfinite:40 test_attention_args:40
KAB_TIMEOUT=300 carry_kernel_ab 0,1,2,3 rel:fp8attn_release k3s:fp8attn_k3s khead:fp8attn_khead

#!/usr/bin/env bash
# Issue 14 item 2 on the GPU machine, one call (~4 minutes): FA3 FP8's numerics in the default
# kernel (branch l32r2) against the release: its kernel tests (the CPU mirror carries the same
# numerics), then each library in its own process head to head with FA3 FP8 at 1k-8k, both masks,
# and kernel-only error on the outlier and Gaussian sets beside FA3 FP8's (kernel_ab.py).
# Here: bash lab/probes/l32r2_stage.sh. Carry [".carry/l32r2.tar.xz", ".whl"].
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source lab/probes/carry.sh
carry_begin .carry/l32r2.tar.xz l32r2 "$OUT/l32r2-tests.log" l32 rel
carry_tests "$B/l32" "$OUT/l32r2-tests.log" test_attention:120 test_graphs:40 test_nonfinite:40 test_attention_args:40
carry_kernel_ab 0,1,2,3 rel:fp8attn_release l32:fp8attn_l32r2

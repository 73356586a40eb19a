#!/usr/bin/env bash
# Branch v192 on the GPU machine, one call (~4 minutes): the FP16-P kernels' GPU tests, then the
# 192- and 128-key FP16 V^T kernels head to head (accurate_v16_ab.py --blocks: same library, the
# K descale per head or repeated per 128-key block), each also against FA3 FP8 and FA3 BF16, and
# their kernel-only errors beside FA3 FP8's.
# Here, in a worktree of branch v192: BUNDLE=1 NO_CAPTURES=1 scripts/stage_gpu.sh (export
# CCACHE_BASEDIR=/work), then copy its .carry/bundle.tar.xz and .carry/COMMIT into main's
# .carry/v192/. From main, carry [".carry/v192", ".whl"]. Writes $OUT/v192-tests.log and
# $OUT/accurate_v16_ab.json (this tree's probe, the branch's library and tests).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
C=${CARRY:-.carry/v192}
source lab/probes/carry.sh
[[ -f $C/libfp8attn.so ]] || tar -xJf "$C/bundle.tar.xz" -C "$C"
carry_env "$PWD/$C"
carry_header "$C" | tee "$OUT/v192-tests.log"
# FP16 P shapes of the mirror and FP64 suites (the new 192-key ones included), the FP16 V^T
# same-bits test, and the whole validation and fuzz suites.
GTEST_FILTER='*fp16*:*Fp16*' carry_tests "$C" "$OUT/v192-tests.log" test_attention:240
carry_tests "$C" "$OUT/v192-tests.log" test_vt_fp16:120 test_validation:120 test_fuzz:180
carry_fa3
FP8ATTN_LIB="$PWD/$C/libfp8attn.so" timeout 300 python3 lab/probes/accurate_v16_ab.py \
  --lib "$C/libfp8attn.so" --out "$OUT" --blocks --no-converter --runs 60

#!/usr/bin/env bash
# Branch v192 on the GPU machine, one call (~5 minutes): the FP16-P kernels' GPU tests, then the
# 192- and 128-key FP16 V^T kernels head to head (accurate_v16_ab.py --blocks: same library, the
# K descale per head or repeated per 128-key block), each also against FA3 FP8 and FA3 BF16, and
# their kernel-only errors beside FA3 FP8's; then the same for the library in tma/ (the 192-key
# kernel with the TMA-store epilogue), into $OUT/tma/.
# Staged here by lab/probes/v192_stage.sh into .carry/v192/ (the branch's bundle: library and GPU
# tests; tma/libfp8attn.so.xz). From main's tree, carry [".carry/v192", ".whl"]. Writes
# $OUT/v192-tests.log, $OUT/accurate_v16_ab.json and $OUT/tma/accurate_v16_ab.json.
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
FP8ATTN_LIB="$PWD/$C/libfp8attn.so" timeout 240 python3 lab/probes/accurate_v16_ab.py \
  --lib "$C/libfp8attn.so" --out "$OUT" --blocks --no-converter --runs 60
if [[ -f $C/tma/libfp8attn.so.xz ]]; then
  xz -dkf "$C/tma/libfp8attn.so.xz"
  echo "tma: $(cat "$C/tma/COMMIT")"
  FP8ATTN_LIB="$PWD/$C/tma/libfp8attn.so" timeout 240 python3 lab/probes/accurate_v16_ab.py \
    --lib "$C/tma/libfp8attn.so" --out "$OUT/tma" --blocks --no-converter --runs 60
fi

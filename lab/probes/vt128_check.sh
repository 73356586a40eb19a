#!/usr/bin/env bash
# GPU machine (~4 minutes): V^T in 128-byte rows (lab/variants/vt128.patch; perf log, twenty-first
# session): the main tests on that library, then head to head with FA3 FP8 against the release.
# Here: `bash lab/probes/lottery_stage.sh none` (rel) and `bash lab/probes/patch_stage.sh
# vt=vt128.patch`; carry .carry/bundle.tar.xz (its test binaries, which load libfp8attn.so from
# LD_LIBRARY_PATH), .carry/lot.tar.xz, .carry/lot-vt.tar.xz and .carry/fa3_site.tar.xz.
#   VT_SETS (default "trim:6"): the lottery's shape sets and row counts, e.g. "trim:6 long:5 nc:6".
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export OUT
source lab/probes/carry.sh
carry_bundle
rm -rf /tmp/vtlib && mkdir -p /tmp/vtlib && tar -xJf .carry/lot-vt.tar.xz -C /tmp/vtlib
carry_env "$PWD/.carry"
(export LD_LIBRARY_PATH=/tmp/vtlib/vt:$LD_LIBRARY_PATH
 ldd .carry/tests/test_attention | grep fp8attn
 timeout "${VT_TEST_TIMEOUT:-150}" .carry/tests/test_attention > "$OUT/vt-tests.log" 2>&1
 echo "test_attention on vt: exit $?"
 grep -E "^\[  PASSED  \]|^\[  FAILED  \]" "$OUT/vt-tests.log" | head -12
)
for spec in ${VT_SETS:-trim:6}; do
  LOT_TIMEOUT=${LOT_TIMEOUT:-200} carry_lottery "${spec%%:*}" "${spec##*:}" rel=rel vt=vt
done
grep -h "output hashes" "$OUT"/lottery-*.log

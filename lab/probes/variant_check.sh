#!/usr/bin/env bash
# GPU machine (~5-8 minutes): a lab variant's library against the release's. Here: `bash
# lab/probes/lottery_stage.sh none` (rel -> .carry/lot.tar.xz) and `bash lab/probes/patch_stage.sh
# NAME=PATCH` (-> .carry/lot-NAME.tar.xz); carry .carry/bundle.tar.xz (its test binaries load
# libfp8attn.so from LD_LIBRARY_PATH), .carry/lot.tar.xz, .carry/lot-NAME.tar.xz and
# .carry/fa3_site.tar.xz.
#   VAR=NAME              the variant's folder (required)
#   VAR_TESTS (default "test_attention:200 test_nonfinite:60 test_graphs:60"): the bundle's tests
#                         run on the variant's library
#   VAR_SANITIZE=1        memcheck, racecheck and synccheck of Sanitize.DefaultFull on it too
#   VAR_SETS (default "trim:6"): lottery shape sets and row counts, head to head with FA3 FP8,
#                         e.g. "nc:9 long:5"
#   VAR_EXACT_SETS        the same in the exact mode (MODE=fp8attn_exact), e.g. "nc:3"
# Output hashes must equal rel's where the variant keeps the arithmetic. Writes $OUT/var-tests.log,
# $OUT/lottery-SET.{json,log} (the exact mode's as lottery-SET-exact.*).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export OUT
: "${VAR:?VAR=NAME, the folder in .carry/lot-NAME.tar.xz}"
source lab/probes/carry.sh
carry_bundle
rm -rf /tmp/varlib && mkdir -p /tmp/varlib && tar -xJf ".carry/lot-$VAR.tar.xz" -C /tmp/varlib
carry_env "$PWD/.carry"
(export LD_LIBRARY_PATH=/tmp/varlib/$VAR:$LD_LIBRARY_PATH
 ldd .carry/tests/test_attention | grep fp8attn
 carry_tests .carry "$OUT/var-tests.log" ${VAR_TESTS:-test_attention:200 test_nonfinite:60 test_graphs:60}
 if [[ -n "${VAR_SANITIZE:-}" ]]; then
   carry_sanitize .carry "$OUT/var-tests.log"
 fi
)
for spec in ${VAR_EXACT_SETS:-}; do
  set=${spec%%:*}
  LOT_TIMEOUT=${LOT_TIMEOUT:-200} carry_lottery "$set" "${spec##*:}" rel=rel,MODE=fp8attn_exact \
    "$VAR=$VAR,MODE=fp8attn_exact"
  mv "$OUT/lottery-$set.json" "$OUT/lottery-$set-exact.json"
  mv "$OUT/lottery-$set.log" "$OUT/lottery-$set-exact.log"
done
for spec in ${VAR_SETS:-trim:6}; do
  LOT_TIMEOUT=${LOT_TIMEOUT:-200} carry_lottery "${spec%%:*}" "${spec##*:}" rel=rel "$VAR=$VAR"
done
grep -h "output hashes" "$OUT"/lottery-*.log

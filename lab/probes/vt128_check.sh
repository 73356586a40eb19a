#!/usr/bin/env bash
# GPU machine: V^T in 128-byte rows (lab/variants/vt128.patch; perf log, twenty-first and
# twenty-second sessions), now lab/probes/variant_check.sh on folder "vt": stage with `bash
# lab/probes/lottery_stage.sh none` and `bash lab/probes/patch_stage.sh vt=vt128.patch`; carry
# .carry/bundle.tar.xz, .carry/lot.tar.xz, .carry/lot-vt.tar.xz and .carry/fa3_site.tar.xz.
#   VT_SETS (default "trim:6"): the lottery's shape sets and row counts, e.g. "waves:2 long:5 nc:6".
VAR=vt VAR_TESTS="test_attention:${VT_TEST_TIMEOUT:-150}" VAR_SETS="${VT_SETS:-trim:6}" \
  exec bash "$(dirname "$0")/variant_check.sh"

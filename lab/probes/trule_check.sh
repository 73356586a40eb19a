#!/usr/bin/env bash
# The GPU machine, one call (~3 minutes): the tail-aware three-warpgroup rule (branch
# trio-tail-rule; lab/perf-log.md, thirtieth session). Carry .carry/lot-head.tar.xz and
# .carry/lot-trule.tar.xz (lab/probes/patch_stage.sh head=host-knobs.patch
# trule=host-knobs-trio-tail-rule.patch) and .carry/fa3_site.tar.xz. The accurate mode, head against
# trule, head to head with FA3 FP8, on lottery_ab's --shape-set triorule: five shapes where the
# rule moves the call from three warpgroups back to the 192-key kernel (predicted 1-5% faster:
# lab/results/study/2026-12-04-cpu-s30-trio-rule.md), then two it leaves on three (output hashes
# equal to head's there, different at the five). Writes $OUT/lottery-triorule.{log,json} (carry_lottery).
set -u
cd "$(dirname "$0")/../.."
source lab/probes/carry.sh
export OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
LOT_TIMEOUT=400 carry_lottery triorule 7 head=head,MODE=fp8attn_accurate trule=trule,MODE=fp8attn_accurate
grep -h "output hashes" "$OUT/lottery-triorule.log"

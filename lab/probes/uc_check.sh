#!/usr/bin/env bash
# The GPU machine, two calls of ~3-6 minutes (PARTS picks): the eighteenth session's staged turn
# variants and the rows the sleeping-waits A/B did not cover, head to head with FA3
# (lab/perf-log.md, eighteenth session: "the ring counter in uniform registers", "the O rescale
# after the P V wait").
# Carry .carry/lot.tar.xz (lottery_stage.sh none: the release + host knobs, TAG rel) and the
# .carry/lot-TAG.tar.xz of patch_stage.sh for TAG in ucfp16 ucall nosleep rawuc, with
# .carry/fa3_site.tar.xz, after `bash lab/probes/aside.sh out` here (the carry limit).
#   accurate  the accurate mode, rel against ucfp16 and rawuc, with FA3 BF16 (sweep, first 8
#             rows; kernel-only errors of each library first)
#   default   the default mode, rel against ucall, rawuc and nosleep, with FA3 FP8 (same rows)
#   rest      the default mode on the sweep's other rows (sq 2k x sk 16k and the 4k rows:
#             sweeprest, 6 rows): rel against nosleep and rawuc
#   exact     the exact-softmax mode (its rescale runs in about half the blocks), rel against
#             rawuc, with FA3 FP8 (sweep, first 4 rows: the seed, both masks, h_kv 32 and 8)
#   PARTS="accurate default" bash lab/probes/uc_check.sh     (first call)
#   PARTS="rest exact" bash lab/probes/uc_check.sh           (second call)
# Output hashes (lottery_ab.py's last line before "wrote"): every configuration's must equal rel's.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export OUT
PARTS=${PARTS:-accurate default rest exact}
has() { [[ " $PARTS " == *" $1 "* ]]; }
source lab/probes/carry.sh
keep() { mv "$OUT/lottery-$1.log" "$OUT/$2.log"; mv "$OUT/lottery-$1.json" "$OUT/$2.json"; }
if has accurate; then
  LOT_SHAPES=8 LOT_TIMEOUT=200 carry_accurate_ab "$OUT/accurate-errors.log" rel ucfp16 rawuc | grep -v rmse
  keep sweep accurate-sweep
fi
if has default; then
  LOT_TIMEOUT=240 LOT_PEER=fa3_fp8 carry_lottery sweep 8 rel=rel ucall=ucall rawuc=rawuc nosleep=nosleep
  keep sweep default-sweep
fi
if has rest; then
  LOT_TIMEOUT=150 LOT_PEER=fa3_fp8 carry_lottery sweeprest 6 rel=rel nosleep=nosleep rawuc=rawuc
  keep sweeprest default-sweeprest
fi
if has exact; then
  LOT_TIMEOUT=90 LOT_PEER=fa3_fp8 carry_lottery sweep 4 rel=rel,MODE=fp8attn_exact rawuc=rawuc,MODE=fp8attn_exact
  keep sweep exact-sweep
fi
grep -h "output hashes" "$OUT"/*-sweep*.log

#!/usr/bin/env bash
# The GPU machine, one call (~6 minutes): the uniform ring counter (lab/variants/uniform-counter-*.patch)
# and the rows the sleeping-waits A/B did not cover, head to head with FA3 (lab/perf-log.md,
# eighteenth session, "the ring counter in uniform registers").
# Carry .carry/lot.tar.xz (lottery_stage.sh none: the release + host knobs, TAG rel),
# .carry/lot-ucfp16.tar.xz, .carry/lot-ucall.tar.xz, .carry/lot-nosleep.tar.xz (patch_stage.sh)
# and .carry/fa3_site.tar.xz, after `bash lab/probes/aside.sh out` here (the carry limit).
#   1. the accurate mode, rel against ucfp16, with FA3 BF16 (sweep, first 8 rows; kernel-only
#      errors of both libraries first);
#   2. the default mode, rel against ucall and nosleep, with FA3 FP8 (sweep, first 8 rows);
#   3. the same on the sweep's other rows: sq 2k x sk 16k and the 4k rows (sweeprest, 6 rows).
# Output hashes: every configuration's must equal rel's (the same bits).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export OUT
source lab/probes/carry.sh
LOT_SHAPES=8 LOT_TIMEOUT=150 carry_accurate_ab "$OUT/uc.log" rel ucfp16 | grep -v rmse
mv "$OUT/lottery-sweep.log" "$OUT/accurate-sweep.log"; mv "$OUT/lottery-sweep.json" "$OUT/accurate-sweep.json"
LOT_TIMEOUT=130 LOT_PEER=fa3_fp8 carry_lottery sweep 8 rel=rel ucall=ucall nosleep=nosleep
LOT_TIMEOUT=130 LOT_PEER=fa3_fp8 carry_lottery sweeprest 6 rel=rel ucall=ucall nosleep=nosleep
python3 - "$OUT" <<'PY'
import collections, json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("*sweep*.json")):
    h = collections.defaultdict(set)
    for r in json.load(open(f))["records"]:
        if "out_sha1" in r and not r["method"].startswith("fa3"):
            h[(r["b"], r["sq"], r["sk"], r["h_kv"], r["causal"])].add(r["out_sha1"])
    bad = [k for k, v in h.items() if len(v) != 1]
    print(f.name, "output hashes: all configurations equal on every row" if not bad else f"DIFFER at {bad}")
PY

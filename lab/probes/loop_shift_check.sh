#!/usr/bin/env bash
# The GPU machine, one call (~5 minutes): does the key loop's placement set the non-causal
# kernel's speed? (lab/perf-log.md, twentieth session: the fold and the staged store lost 4-6% at
# 8k with loops statically the release's, each moved.) Builds sN = the release with N
# `nanosleep 0` before the steady loop (lab/variants/loop-shift-N.patch): e4m3_block192's key
# loop byte-identical to the release's (lab/sass/loop_identity.py), its start at 0xa740 (N=2,
# mod 128 = 0x40), 0xa760 (4, 0x60, as the fold's), 0xa780 (6, 0x00, as the staged store's),
# 0xa7a0 (8, 0x20, the release's alignment at another address); the release's at 0xa520.
# st2: the staged 16-byte O store (lab/variants/staged-store.patch) with 2 nanosleep: its loop at
# 0xa7a0 as s8's (lab/results/sass/2026-12-04-loop-shift-staged-st2.txt), so st2 against s8 is the
# staged store at the same loop address.
# Carry .carry/lot.tar.xz (lottery_stage.sh none: rel), .carry/lot-s{2,4,6,8}.tar.xz
# (patch_stage.sh sN=loop-shift-N.patch) and .carry/lot-st2.tar.xz (patch_stage.sh
# st2=staged-store.patch+loop-shift-2.patch), with .carry/fa3_site.tar.xz, after
# `bash lab/probes/aside.sh out` here.
#   LOT_SHAPES (default 6): the first rows of --shape-set nc (16 x 1k, 8 x 2k, 4k, 4k GQA, 8000, 8k).
# Output hashes: every build's must equal rel's.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export OUT
source lab/probes/carry.sh
LOT_TIMEOUT=${LOT_TIMEOUT:-300} LOT_PEER=fa3_fp8 carry_lottery nc "${LOT_SHAPES:-6}" rel=rel s2=s2 s4=s4 s6=s6 s8=s8 st2=st2
grep -h "output hashes" "$OUT"/lottery-nc.log | head -1

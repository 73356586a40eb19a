#!/usr/bin/env bash
# Prepared probes (lab/perf-log.md's latest "next session" entry names the current ones), one per call: each
# stays under the 10-minute limit, and its carry with the tree (~30 MB tracked) and the FA3 wheel
# (.whl, 27.6 MB) under 64 MiB. On a machine still warm from an earlier call FA3 is already in
# /tmp/site and .whl can stay behind, which leaves room for two probes' carries in one call
# (PART="v192 tile"). Each probe writes into its own folder of $OUT.
#   PART=v192   v192_check.sh (~5 min)   carry [".carry/v192", ".whl"]
#   PART=tile   tile_check.sh (~3 min)   carry [".carry/tile.tar.xz", ".whl"]
#   PART=f14    f14_check.sh (~5 min)    carry [".carry/f14.tar.xz", ".whl"]
#   PART=align  align_ab.sh (~1 min)     carry [".carry/align.tar.xz", ".carry/COMMIT", ".carry/fallback", ".whl"]
#   PART=vt128  vt128_check.sh (~5 min with VT_SETS="waves:2 long:5 nc:6": 8 files, the device
#               tool's limit; run it alone)   carry [".carry/bundle.tar.xz", ".carry/lot.tar.xz",
#               ".carry/lot-vt.tar.xz", ".carry/fa3_site.tar.xz"]
#   PART=waves  waves_ncu.sh (~1 min)    carry [".carry/bundle.tar.xz", ".carry/fa3_site.tar.xz"]
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
[[ -n "${PART:-}" ]] || { echo "next_gpu.sh: PART=v192, tile, f14, align, vt128 or waves (or several)" >&2; exit 2; }
for part in $PART; do
  case "$part" in
    v192 | tile | f14) script=lab/probes/${part}_check.sh ;;
    align) script=lab/probes/align_ab.sh ;;
    vt128) script=lab/probes/vt128_check.sh ;;
    waves) script=lab/probes/waves_ncu.sh ;;
    *) echo "next_gpu.sh: unknown part $part" >&2; exit 2 ;;
  esac
  mkdir -p "$OUT/$part"
  echo "=== $part ($script) $(date -u +%T)"
  OUT="$OUT/$part" bash "$script" 2>&1 | tee "$OUT/$part/stdout.log"
done

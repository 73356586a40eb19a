#!/usr/bin/env bash
# The prepared probes of lab/README.md ("Prepared for the next GPU session") in three calls, each
# under the 10-minute limit and its carry under 64 MiB with the tree (~30 MB tracked) and the FA3
# wheel (.whl, 27 MB; on a machine still warm from an earlier call FA3 is already in /tmp/site and
# .whl may stay behind). Each probe writes into its own folder of $OUT.
#   PART=a: v192_check.sh (~5 min) + k3s_check.sh (~2 min)
#           carry [".carry/v192", ".carry/k3s.tar.xz", ".whl"]
#   PART=b: f14_check.sh (~5 min)             carry [".carry/f14.tar.xz", ".whl"]
#   PART=c: align_ab.sh (~1 min)              carry [".carry/align.tar.xz", ".carry/COMMIT",
#                                                    ".carry/fallback", ".whl"]
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
run() {  # NAME SCRIPT
  mkdir -p "$OUT/$1"
  echo "=== $1 ($2) $(date -u +%T)"
  OUT="$OUT/$1" bash "$2" 2>&1 | tee "$OUT/$1/stdout.log"
}
case "${PART:-}" in
  a) run v192 lab/probes/v192_check.sh; run k3s lab/probes/k3s_check.sh ;;
  b) run f14 lab/probes/f14_check.sh ;;
  c) run align lab/probes/align_ab.sh ;;
  *) echo "next_gpu.sh: PART=a, b or c" >&2; exit 2 ;;
esac

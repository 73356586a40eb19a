#!/usr/bin/env bash
# The device tool sends the working tree (tracked files included) with every call, 64 MiB in all
# with the carried archives. The largest tracked files no GPU call reads (the numerics study's
# raw JSON, the fast-mode studies, one ncu CSV, the older full runs' results files, the run logs
# and the docs' images) are moved
# out of the tree before a call that carries several archives, and back after it (before any
# git add).
#   bash lab/probes/aside.sh out    (then the device call)
#   bash lab/probes/aside.sh in     (restores them; git status must be clean again)
set -euo pipefail
cd "$(dirname "$0")/../.."
STORE=${ASIDE_DIR:-/tmp/fp8attn-aside}
FILES=(results/fastmode-study-2.json results/fastmode-study.json results/numerics-study.json
       results/numerics-raw-captures.json results/numerics-raw-per-head.json
       results/numerics-raw-synthetic.json lab/results/ncu/2026-11-30-h200-080f9b2-qpass-source.csv)
# The older full runs' results files too (the README and the docs cite them; no GPU call reads
# them): every results/<date>-h200-*.json but the newest.
mapfile -t RUNS < <(ls results/20??-??-??-h200-*.json 2>/dev/null | grep -v -- '-rope.json$' | sort | head -n -1)
# And the run logs and the docs' images (no GPU call reads them either): with six library
# archives and FA3 the tree otherwise passed the limit (twentieth session).
mapfile -t LOGS < <(git ls-files results/logs docs/img 2>/dev/null)
case "${1:-}" in
  out) for f in "${FILES[@]}" "${RUNS[@]}" "${LOGS[@]}"; do
         if [[ -f "$f" ]]; then mkdir -p "$STORE/$(dirname "$f")"; mv "$f" "$STORE/$f"; fi
       done ;;
  in) if [[ -d "$STORE" ]]; then
        (cd "$STORE" && find . -type f) | while IFS= read -r f; do
          mkdir -p "$(dirname "$f")"; mv "$STORE/$f" "$f"
        done
      fi ;;
  *) echo "usage: $0 out|in" >&2; exit 2 ;;
esac
echo "aside: tree now $(git ls-files -z --cached --others --exclude-standard | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1) bytes"

#!/usr/bin/env bash
# Runs ON THE GPU MACHINE: compute-sanitizer's memcheck, racecheck, initcheck and synccheck on
# what ships (tests/gpu/test_sanitize_targets.cu): the default kernel (E4M3 P, 192-key blocks)
# at a persistent shape (144 tiles > 132 SMs) causal and not, the hi+lo and FP16 P kernels, and
# the pre-pass (end-to-end call). One process per (tool, target), each under a timeout; the whole
# run stops starting new ones past a budget (default 230 s), and those not run are listed as such.
#
#   scripts/gpu/sanitize.sh [TEST_BINARY] [LOG_DIR]
#     TEST_BINARY  default .carry/tests/test_sanitize_targets
#     LOG_DIR      default $OUT/sanitize (or results/sanitize-logs without $OUT)
# Writes LOG_DIR/<tool>-<target>.log and LOG_DIR/summary.tsv (tool, target, errors, status) for
# scripts/gpu/reliability.py; errors = the ERROR SUMMARY count, -1 when the run timed out or
# printed no summary (a failed run, reported as failed). Exit status 1 when any error or failure.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-.carry/tests/test_sanitize_targets}
LOG_DIR=${2:-${OUT:+$OUT/sanitize}}
LOG_DIR=${LOG_DIR:-results/sanitize-logs}
BUDGET_S=${SANITIZE_BUDGET_S:-230}
mkdir -p "$LOG_DIR"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[[ -x "$SAN" ]] || { echo "sanitize: compute-sanitizer not found" >&2; exit 2; }
[[ -x "$BIN" ]] || { echo "sanitize: $BIN not found (scripts/stage_gpu.sh builds it)" >&2; exit 2; }

targets=(DefaultCausal DefaultFull DefaultLongTiles ExactCausal ExactFull HiLo Fp16 Fp16Vt Fp16VtHead Fp16VtHeadFull Fp16VtThreeWarpgroups PrePass)
# tool:timeout_s. racecheck is the slow one.
tools=(memcheck:40 synccheck:40 initcheck:40 racecheck:90)
summary="$LOG_DIR/summary.tsv"
printf 'tool\ttarget\terrors\tstatus\tseconds\n' > "$summary"
start=$(date +%s)
failed=0
for tt in "${tools[@]}"; do
  tool=${tt%%:*}; limit=${tt##*:}
  for target in "${targets[@]}"; do
    log="$LOG_DIR/$tool-$target.log"
    elapsed=$(( $(date +%s) - start ))
    if (( elapsed > BUDGET_S )); then
      printf '%s\t%s\t-1\tnot run (budget %ss spent)\t0\n' "$tool" "$target" "$BUDGET_S" >> "$summary"
      failed=1; continue
    fi
    t0=$(date +%s)
    timeout --kill-after=5 "$limit" "$SAN" --tool "$tool" --error-exitcode 99 \
      "$BIN" --gtest_filter="Sanitize.$target" > "$log" 2>&1
    rc=$?
    secs=$(( $(date +%s) - t0 ))
    # memcheck, initcheck, synccheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY:
    # H hazards displayed (N errors, W warnings)".
    errors=$(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$log" | tail -1 | grep -oE '[0-9]+')
    [[ -z "$errors" ]] && errors=$(grep -oE 'RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ error' "$log" |
      tail -1 | grep -oE '[0-9]+ error' | grep -oE '[0-9]+')
    if (( rc == 124 || rc == 137 )); then status="timed out after ${limit}s"; errors=-1
    elif [[ -z "$errors" ]]; then status="no summary (rc $rc)"; errors=-1
    elif grep -q '\[  FAILED  \]' "$log"; then status="test failed (rc $rc)"
    elif grep -q '\[  SKIPPED \]' "$log"; then status="skipped (no sm_90 device)"; errors=-1
    elif ! grep -q "\[       OK \] Sanitize.$target " "$log"; then status="the test did not run (rc $rc)"; errors=-1
    else status="ok (rc $rc)"; fi
    [[ $errors != 0 || $status != ok* ]] && failed=1
    printf '%s\t%s\t%s\t%s\t%s\n' "$tool" "$target" "$errors" "$status" "$secs" >> "$summary"
    echo "sanitize: $tool $target: errors=$errors $status (${secs}s)"
  done
done
echo "sanitize: total $(( $(date +%s) - start ))s; summary in $summary"
exit $failed

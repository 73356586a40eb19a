#!/usr/bin/env bash
# The GPU session: runs THERE (H200), from the repo root, with $OUT set and .carry/ carried (made
# here by scripts/stage_gpu.sh, the wheel by scripts/gpu/stage_package.sh) and FA3 (.carry/fa3_site.tar.xz
# from scripts/pack_fa3.sh, or the wheel in .whl/).
# Builds nothing. PARTS (default: all of them, in this order) picks stages, so that a session
# that does not fit one 10-minute call runs as several calls on the same warm machine:
#   tests     every GPU test executable in .carry/tests/ (GoogleTest XML), passed/failed counted
#   sanitize  compute-sanitizer memcheck, racecheck, initcheck, synccheck on the shipped kernels
#             at a persistent shape and on the pre-pass (scripts/gpu/sanitize.sh); then the
#             `reliability` block from the tests' and sanitizers' logs (scripts/gpu/reliability.py)
#   binding   bench/check_binding.py (the Python binding in the repository) and the installed
#             wheel from outside the repository (scripts/gpu/package.sh: quick start, validation,
#             opcheck, inductor, CUDA graphs, the transformers client)
#   harness   bench/harness.py: FA3 head to head over the sweep, accuracy, the results files
#   probes    lab probes named in PROBES (each a command line run from the repo root)
# Each stage's failure is reported and never fatal to the later ones. Blocks from earlier calls
# (tests.json, reliability.json, package.json) are read from .carry/attach/ when the harness runs
# in a later call than the stage that wrote them.
# What comes back in $OUT (at most 8 files): session.log, logs.tar.gz, and per stage:
# tests.json, reliability.json, package.json, the results files (json, md, two png).
set -u -o pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
: "${OUT:?OUT must name the folder whose files come back}"
CARRY=${CARRY:-.carry}
PARTS=${PARTS:-tests sanitize binding harness}
ATTACH=$CARRY/attach
WORK=$(mktemp -d)
LOGS=$WORK/logs
mkdir -p "$LOGS" "$OUT"
SUMMARY=$OUT/tests.json
exec > >(tee "$OUT/session.log") 2>&1
# The build carried compressed (scripts/stage_gpu.sh with BUNDLE=1: the library and the tests
# compress ~5x, so that they, FA3's wheel and the tree fit one 64 MiB carry): unpacked into CARRY.
if [[ -f "$CARRY/bundle.tar.xz" && ! -f "$CARRY/libfp8attn.so" ]]; then
  tar -xJf "$CARRY/bundle.tar.xz" -C "$CARRY" && echo "unpacked $CARRY/bundle.tar.xz"
fi
export LD_LIBRARY_PATH="$PWD/$CARRY${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Carried stand-ins (scripts/stage_gpu.sh) for runtime libraries this machine may lack.
for dir in "$CARRY"/fallback/*/; do
  for lib in "$dir"*; do
    if ! ldconfig -p 2>/dev/null | grep -q "$(basename "$lib")"; then
      echo "using carried $(basename "$lib") (none on this machine)"
      LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$PWD/$dir"
    fi
  done
done
has() { [[ " $PARTS " == *" $1 "* ]]; }
stage() { echo; echo "=== [$(date -u +%H:%M:%S), ${SECONDS}s] $*"; }
# The newest copy of a block: this call's $OUT, else one carried from an earlier call.
block() { if [[ -f "$OUT/$1" ]]; then echo "$OUT/$1"; elif [[ -f "$ATTACH/$1" ]]; then echo "$ATTACH/$1"; fi; }

# install_fa3: FlashAttention-3 into /tmp/site (scripts/gpu/fa3.sh).
source scripts/gpu/fa3.sh

stage "GPU and clocks (parts: $PARTS)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,clocks_throttle_reasons.active --format=csv ||
  echo "clock query FAILED"
cat "$CARRY/BUILD_INFO" 2>/dev/null || echo "no $CARRY/BUILD_INFO: was scripts/stage_gpu.sh run and .carry carried?"
cp "$CARRY/BUILD_INFO" "$LOGS/" 2>/dev/null
shopt -s nullglob

if has tests; then
  stage "GPU tests"
  tests=("$CARRY"/tests/test_*)
  ((${#tests[@]})) || echo "NO test executables in $CARRY/tests: nothing to count (reported as 1 failed)"
  ((${#tests[@]})) || python3 bench/gtest_summary.py "$SUMMARY" gtest "no-test-executables" /nonexistent 1
  for t in "${tests[@]}"; do
    name=$(basename "$t")
    limit=180
    [[ $name == test_fuzz ]] && limit=300
    echo "--- $name (timeout ${limit}s)"
    timeout -k 10 "$limit" "$t" --gtest_output="xml:$LOGS/$name.xml" > "$LOGS/$name.log" 2>&1
    rc=$?
    grep -E "^\[  (PASSED|FAILED) \]|^\[==========\] .* ran|Failure$|error:|RELIABILITY|FUZZ FAIL" "$LOGS/$name.log" | head -40
    python3 bench/gtest_summary.py "$SUMMARY" gtest "$name" "$LOGS/$name.xml" "$rc"
  done
fi

if has sanitize; then
  stage "compute-sanitizer on the shipped kernels and the pre-pass (scripts/gpu/sanitize.sh)"
  if [[ -x "$CARRY/tests/test_sanitize_targets" ]]; then
    scripts/gpu/sanitize.sh "$CARRY/tests/test_sanitize_targets" "$LOGS/sanitize"
    rc=$?
    # One (tool, target) run a test: passed when it reported 0 errors and ran its test.
    awk -F'\t' 'NR > 1 { if ($3 == "0" && $4 ~ /^ok/) p++; else f++ } END { printf "sanitizers: %d passed, %d failed\n", p, f }' \
      "$LOGS/sanitize/summary.tsv" > "$LOGS/sanitize/count.txt" 2>/dev/null
    cat "$LOGS/sanitize/count.txt"
    python3 bench/gtest_summary.py "$SUMMARY" script sanitizers "$LOGS/sanitize/count.txt" "$rc"
  else
    echo "$CARRY/tests/test_sanitize_targets missing (reported as failed)"
    python3 bench/gtest_summary.py "$SUMMARY" script sanitizers /nonexistent 1
  fi
fi

if has tests || has sanitize; then
  stage "reliability block (scripts/gpu/reliability.py)"
  test_logs=("$LOGS"/test_*.log)
  ((${#test_logs[@]})) || test_logs=(/dev/null)
  python3 scripts/gpu/reliability.py --logs "${test_logs[@]}" /dev/null \
    --sanitize "$LOGS/sanitize/summary.tsv" --commit "$(cat "$CARRY/COMMIT" 2>/dev/null)" \
    --out "$OUT/reliability.json" || echo "reliability block: not ok (see above)"
fi

if has binding; then
  stage "Python binding in the repository (bench/check_binding.py)"
  FP8ATTN_LIB="$PWD/$CARRY/libfp8attn.so" timeout -k 10 120 python3 bench/check_binding.py \
    --lib "$CARRY/libfp8attn.so" 2>&1 | tee "$LOGS/check_binding.log"
  python3 bench/gtest_summary.py "$SUMMARY" script check_binding "$LOGS/check_binding.log" "${PIPESTATUS[0]}"
  stage "the installed wheel, from outside the repository (scripts/gpu/package.sh)"
  if compgen -G "$CARRY/pkg/fp8attn-*.whl" >/dev/null; then
    OUT="$OUT" scripts/gpu/package.sh
    echo "package.sh: exit $?"
    for f in "$OUT"/package.*.junit.xml "$OUT"/package.log; do mv "$f" "$LOGS/"; done
  else
    echo "no wheel in $CARRY/pkg (scripts/gpu/stage_package.sh): the package check did not run"
  fi
fi

if has harness; then
  stage "harness (speed, accuracy, results files)"
  install_fa3
  attach=()
  for name in reliability package; do
    f=$(block "$name.json")
    [[ -n $f ]] && attach+=(--attach "$name=$f")
  done
  tests_json=$(block tests.json)
  FP8ATTN_LIB="$PWD/$CARRY/libfp8attn.so" timeout -k 10 "${HARNESS_TIMEOUT_S:-420}" \
    python3 bench/harness.py --lib "$CARRY/libfp8attn.so" --out "$OUT" \
    ${tests_json:+--tests-json "$tests_json"} --commit-file "$CARRY/COMMIT" --captures "$CARRY/captures" \
    "${attach[@]}" --command "PARTS='$PARTS' scripts/gpu_session.sh (carry .carry, FA3)" \
    ${HARNESS_ARGS:-}  # HARNESS_ARGS=--dry-run rehearses this script on a machine without a GPU
  rc=$?
  ((rc == 0)) || echo "HARNESS FAILED (exit $rc): the results files may be missing or partial"
fi

if has probes; then
  install_fa3
  while IFS= read -r probe; do
    [[ -z $probe ]] && continue
    stage "probe: $probe"
    FP8ATTN_LIB="$PWD/$CARRY/libfp8attn.so" timeout -k 10 "${PROBE_TIMEOUT_S:-240}" bash -c "$probe" || echo "probe FAILED: $probe"
  done <<< "${PROBES:-}"
fi

stage "bundle"
tar czf "$OUT/logs.tar.gz" -C "$WORK" logs && ls -la "$OUT"
if [[ -f $SUMMARY ]]; then
  python3 - "$SUMMARY" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"gpu_session: tests {s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped")
EOF
fi
echo "gpu_session: done in ${SECONDS}s"

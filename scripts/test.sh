#!/usr/bin/env bash
# The README's test command: build everything, then the Python tests under tests/python (pytest,
# when that folder exists; without PyTorch they report themselves skipped), then every CPU and GPU
# test through CTest, last, so that the run ends with CTest's summary. Without a GPU the GPU tests
# report themselves skipped. Arguments go to ctest (e.g. -L cpu, -R Codecs).
# Exit status: non-zero when either pytest or ctest failed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
BUILD_DIR=${BUILD_DIR:-build}
export BUILD_DIR
scripts/build.sh

py_rc=0
if [[ -d tests/python ]]; then
  # The library this build made (the ABI tests bind it without PyTorch); none without nvcc.
  if [[ -z "${FP8ATTN_LIB:-}" && -f "$BUILD_DIR/src/libfp8attn.so" ]]; then
    export FP8ATTN_LIB="$PWD/$BUILD_DIR/src/libfp8attn.so"
  fi
  echo "test: pytest tests/python${FP8ATTN_LIB:+ (FP8ATTN_LIB=$FP8ATTN_LIB)}"
  # Exit 5 is "no tests collected": a folder with helpers only, or every module skipped as a
  # whole (pytest.importorskip("torch") without PyTorch). Not a failure.
  python3 -m pytest -q -rs -p no:cacheprovider tests/python || py_rc=$?
  if ((py_rc == 5)); then echo "test: pytest ran no test (none collected, or all modules skipped)"; py_rc=0; fi
fi

echo "test: ctest (log: $BUILD_DIR/ctest.log)"
ct_rc=0
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" "$@") 2>&1 | tee "$BUILD_DIR/ctest.log" ||
  ct_rc=$?
# CTest lists the tests that did not run after its summary: say what they are, then repeat the
# summary line, so that the run ends with it.
skipped=$(grep -c '(Skipped)$' "$BUILD_DIR/ctest.log" || true)
if ((skipped)); then echo "test: $skipped test(s) skipped, listed above (GPU tests skip themselves without a GPU)"; fi
if ((py_rc != 0)); then echo "test: pytest FAILED (exit $py_rc); see above" >&2; fi
grep -E '^[0-9]+% tests passed' "$BUILD_DIR/ctest.log" | tail -1 || echo "test: ctest gave no summary (exit $ct_rc)"
((py_rc == 0 && ct_rc == 0))

#!/usr/bin/env bash
# Runs HERE (no GPU needed): builds libfp8attn.so and the GPU test executables, and copies what
# one GPU session needs into .carry/ (git-ignored), with the commit they were built from:
#   .carry/libfp8attn.so  .carry/tests/test_*  .carry/COMMIT  .carry/BUILD_INFO
#   .carry/captures/      (a small pack of captured activations, when data/cache/ holds them)
# Then prints the size to carry. The GPU session is scripts/gpu_session.sh, run with carry
# [".carry"].
#
#   scripts/stage_gpu.sh                 # build dir build-stage/, pack: 2048 tokens, KV head 0
#   BUILD_DIR=build-x PACK_ARGS="--tokens 4096 --kv-heads 0" scripts/stage_gpu.sh
#   NO_CAPTURES=1 scripts/stage_gpu.sh   # carry no captured activations
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-stage}
PACK_ARGS=${PACK_ARGS:-}  # default: --tokens min(2048, captured) --kv-heads 0
CARRY=.carry
LIMIT_MIB=64

gpu_tests=()
for src in tests/gpu/test_*.cu; do
  [[ -e "$src" ]] && gpu_tests+=("$(basename "$src" .cu)")
done
echo "stage: configure + build ${BUILD_DIR}/ (fp8attn ${gpu_tests[*]})"
# The shared OpenBLAS, explicitly (a static one makes each test executable ~27 MB).
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DBLA_STATIC=OFF \
  -DBLAS_openblas_LIBRARY=/usr/lib/x86_64-linux-gnu/libopenblas.so >/dev/null
# -k: one test that does not compile must not keep the others from the GPU run.
nice -n 10 cmake --build "$BUILD_DIR" -j 2 --target fp8attn "${gpu_tests[@]}" -- -k 2>&1 |
  grep -E "error|Registers are spilled|Error|Built target" || true

# Only our own paths: .carry/ may also hold other staged tools (lab/probes/stage.sh).
rm -rf "$CARRY/tests" "$CARRY/captures" "$CARRY/fallback" "$CARRY/libfp8attn.so" \
  "$CARRY/COMMIT" "$CARRY/BUILD_INFO"
mkdir -p "$CARRY/tests" "$CARRY/fallback/openblas" "$CARRY/fallback/gomp"
cp "$BUILD_DIR/src/libfp8attn.so" "$CARRY/"
for t in "${gpu_tests[@]}"; do
  if [[ -x "$BUILD_DIR/tests/$t" ]]; then cp "$BUILD_DIR/tests/$t" "$CARRY/tests/"
  else echo "stage: WARNING: $t did not build; it will not run on the GPU"; fi
done
# Runtime libraries the test executables need (through the CPU model) that the GPU machine may
# lack; gpu_session.sh uses each only if the machine has none.
gcc -O2 -shared -fPIC -Wl,-soname,libopenblas.so.0 -o "$CARRY/fallback/openblas/libopenblas.so.0" \
  scripts/openblas_shim.c
cp -L /lib/x86_64-linux-gnu/libgomp.so.1 "$CARRY/fallback/gomp/"

# The commit the binaries were built from; "-dirty" when what was compiled differs from it
# (modified tracked files, or untracked sources that the build globs in).
commit=$(git rev-parse --short=12 HEAD)
if [[ -n "$(git status --porcelain -- src model include tests tools CMakeLists.txt)" ]]; then
  commit="${commit}-dirty"
fi
echo "$commit" > "$CARRY/COMMIT"
{
  echo "commit: $commit"
  echo "built: $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname)"
  echo "nvcc: $(nvcc --version | tail -1)"
  echo "build dir: $BUILD_DIR"
  git status --short | head -50
} > "$CARRY/BUILD_INFO"

if [[ -z "${NO_CAPTURES:-}" && -f data/captures.json && -d data/cache/captures ]]; then
  if [[ -z "$PACK_ARGS" ]]; then
    tokens=$(python3 -c 'import json; m = json.load(open("data/captures.json"))
print(min([2048] + [l["tensors"]["q"]["shape"][1] for mo in m["models"] for l in mo["layers"]]))')
    PACK_ARGS="--tokens $tokens --kv-heads 0"
  fi
  echo "stage: packing captured activations (tools/capture/pack.py $PACK_ARGS)"
  # The repository's environment (scripts/setup.sh: numpy and safetensors), else the system's.
  py=python3
  [[ -x .venv/bin/python ]] && py=.venv/bin/python
  # shellcheck disable=SC2086
  if ! "$py" tools/capture/pack.py $PACK_ARGS --out "$CARRY/captures"; then
    echo "stage: WARNING: pack failed; no captured activations carried"
    rm -rf "$CARRY/captures"
  fi
elif [[ -n "${NO_CAPTURES:-}" ]]; then
  echo "stage: no captured activations carried (NO_CAPTURES=1; .carry/captures removed)"
else
  echo "stage: no captured activations carried (data/captures.json or data/cache/captures absent)"
fi

# BUNDLE=1: the library, the tests, their fallbacks, COMMIT and BUILD_INFO also as one
# .carry/bundle.tar.xz (~5x smaller; scripts/gpu_session.sh unpacks it when the plain files are
# not carried), and FA3's wheel recompressed (.carry/fa3_site.tar.xz, scripts/pack_fa3.sh), so that
# one call carries both: [".carry/bundle.tar.xz", ".carry/fa3_site.tar.xz"] for tests, sanitizers
# and the speed sweep; the capture pack (~20 MiB) goes with them only when the tree leaves room.
if [[ -n "${BUNDLE:-}" ]]; then
  rm -f "$CARRY/bundle.tar.xz"
  tar -cJf "$CARRY/bundle.tar.xz" -C "$CARRY" libfp8attn.so tests fallback COMMIT BUILD_INFO
  echo "stage: $CARRY/bundle.tar.xz $(du -h "$CARRY/bundle.tar.xz" | cut -f1)"
  [[ -f "$CARRY/fa3_site.tar.xz" ]] || scripts/pack_fa3.sh
fi

# The working tree travels too: tracked files plus untracked, not ignored ones.
tree_bytes=$( (git ls-files -z; git ls-files -z --others --exclude-standard) |
  xargs -0 -r du -cb 2>/dev/null | awk '/total$/ {s += $1} END {print s + 0}')
mib() { echo "$1 / 1048576" | bc -l; }
bytes_of() { { du -cb "$@" 2>/dev/null || true; } | tail -1 | cut -f1; }  # missing paths count 0
if [[ -n "${BUNDLE:-}" ]]; then
  # What each call of a bundled session carries (scripts/gpu_session.sh's header): the tests,
  # sanitizers and speed call [bundle, FA3]; the accuracy call [bundle, captures, attach] (the
  # first call's results, well under 1 MiB). Only the first one must fit for the stage to pass.
  carry_bytes=$(bytes_of "$CARRY/bundle.tar.xz" "$CARRY/fa3_site.tar.xz")
  label="bundle + FA3"
  if [[ -d "$CARRY/captures" ]]; then
    acc_bytes=$(bytes_of "$CARRY/bundle.tar.xz" "$CARRY/captures")
    acc_total=$((tree_bytes + acc_bytes + 1048576))
    printf 'stage: accuracy call: bundle + captures %.1f MiB + working tree %.1f MiB + attach ~1 MiB = %.1f MiB\n' \
      "$(mib "$acc_bytes")" "$(mib "$tree_bytes")" "$(mib "$acc_total")"
    if ((acc_total > LIMIT_MIB * 1048576)); then
      echo "stage: the accuracy call will not fit: a smaller pack (PACK_ARGS --tokens), or large" \
        "tracked files set aside for that call" >&2
    fi
  fi
else
  carry_bytes=$(du -sb "$CARRY" | cut -f1)
  label=.carry
fi
total=$((tree_bytes + carry_bytes))
printf 'stage: %s %.1f MiB + working tree %.1f MiB = %.1f MiB (limit %d MiB)\n' \
  "$label" "$(mib "$carry_bytes")" "$(mib "$tree_bytes")" \
  "$(mib "$total")" "$LIMIT_MIB"
du -sh "$CARRY"/* "$CARRY"/tests/* 2>/dev/null | sed 's/^/  /'
if ((total > LIMIT_MIB * 1048576)); then
  echo "stage: TOO BIG to carry: shrink the pack (PACK_ARGS) or NO_CAPTURES=1" >&2
  exit 1
fi
if [[ -n "${BUNDLE:-}" ]]; then
  echo "stage: ready. On the GPU: scripts/gpu_session.sh with carry [\".carry/bundle.tar.xz\"," \
    "\".carry/fa3_site.tar.xz\"], then the accuracy call with [\".carry/bundle.tar.xz\"," \
    "\".carry/captures\", \".carry/attach\"] (commit $commit)"
  if [[ ! -d "$CARRY/captures" ]]; then
    echo "stage: NOTE: .carry/captures is absent, so that accuracy call would run the synthetic" \
      "sets only; pack the captures after this stage (tools/capture/pack.py --tokens 2048" \
      "--kv-heads 0 --out .carry/captures; docs/captures.md, \"Quick pack\")"
  fi
else
  echo "stage: ready. On the GPU: scripts/gpu_session.sh with carry [\".carry\"] (commit $commit)"
fi

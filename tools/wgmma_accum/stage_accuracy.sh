#!/usr/bin/env bash
# Runs HERE: a lean carry folder for the accuracy-only GPU call (the harness's accuracy part on
# the capture pack of both models, for tools/wgmma_accum/compare.py), without the GPU test
# executables that the full session carries:
#   build-acc/libfp8attn.so  build-acc/COMMIT  build-acc/BUILD_INFO   (from scripts/stage_gpu.sh)
#   build-acc/captures/      tools/capture/pack.py --tokens 2048 --kv-heads 0 (all models)
# build-acc/ is git-ignored (/build*/). Prints what the call carries. On the GPU (see
# docs/model-quality.md): CARRY=build-acc PARTS='harness probes' HARNESS_ARGS='--only accuracy' \
#   PROBES='python3 -m pytest -q -p no:cacheprovider tests/python/test_accuracy_scale.py' \
#   scripts/gpu_session.sh            with carry ["build-acc"] (and ".whl" if FA3 is not yet in
#                                     /tmp/site on the warm machine and the budget allows)
#   CARRY_SRC=.carry tools/wgmma_accum/stage_accuracy.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SRC=${CARRY_SRC:-.carry}
DST=build-acc
for f in libfp8attn.so COMMIT; do
  [[ -f $SRC/$f ]] || { echo "stage_accuracy: $SRC/$f missing: run scripts/stage_gpu.sh first" >&2; exit 1; }
done
rm -rf "$DST"
mkdir -p "$DST"
cp "$SRC/libfp8attn.so" "$SRC/COMMIT" "$DST/"
cp "$SRC/BUILD_INFO" "$DST/" 2>/dev/null || true
python3 tools/capture/pack.py --tokens 2048 --kv-heads 0 --out "$DST/captures"
if [[ "$(cat "$DST/COMMIT")" != "$(git rev-parse --short=12 HEAD)"* ]]; then
  echo "stage_accuracy: WARNING: the library is from $(cat "$DST/COMMIT"), HEAD is $(git rev-parse --short=12 HEAD)"
fi
tree_bytes=$( (git ls-files -z; git ls-files -z --others --exclude-standard) |
  xargs -0 -r du -cb 2>/dev/null | awk '/total$/ {s += $1} END {print s + 0}')
mib() { echo "scale=1; $1 / 1048576" | bc; }
acc=$(du -sb "$DST" | cut -f1)
whl=$(du -sbcL .whl 2>/dev/null | tail -1 | cut -f1)
echo "stage_accuracy: working tree $(mib "$tree_bytes") MiB + $DST $(mib "$acc") MiB = $(mib $((tree_bytes + acc))) MiB;" \
  "with .whl $(mib "${whl:-0}") MiB: $(mib $((tree_bytes + acc + ${whl:-0}))) MiB (limit 64 MiB a call)"
